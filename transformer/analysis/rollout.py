"""How much of each input token reaches each position after several layers: attention rollout and attention flow
(Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers"), and a rollout through the decoder back to the
source words.

One layer's attention says only what mixes in that layer; stacked layers mix what earlier layers already mixed.
Both methods treat the layers as a graph whose edges are the head-averaged attention, with the residual connection
taken into account as ``Ã = (1 - residual)·A + residual·I`` (:func:`residual_attention`):

- **rollout** (:func:`attention_rollout`) multiplies the layers' matrices, ``R_l = Ã_l · R_{l-1}``: the share of
  input token j in position i when mass spreads along every path;
- **flow** (:func:`attention_flow`) takes the edges as capacities and computes the maximum flow from input token j
  to position i: the most that can pass through the narrowest cuts (one max-flow problem per pair, so it is only
  offered for short sentences, :data:`MAX_FLOW_TOKENS`).

:func:`cross_rollout` carries the rollout through the decoder's self- and cross-attention to the source: the
attention-only form of the rules of Chefer et al. (2021, "Generic Attention-model Explainability for Interpreting
Bi-Modal and Encoder-Decoder Transformers").

Inputs are attention arrays as in :class:`~transformer.analysis.attention.AttentionMaps`, shaped
[layers, heads, queries, keys] with rows summing to 1. Outputs are float64. Pure NumPy and networkx: no torch, no
Streamlit.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from networkx.algorithms.flow import build_residual_network, preflow_push

MAX_FLOW_TOKENS = 24  # max-flow time grows steeply with the tokens: beyond this a visitor would wait too long
"""The longest sequence :func:`attention_flow` accepts: it solves S² max-flow problems on a graph of L·S² edges."""


def _check_residual(residual: float) -> None:
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must lie in [0, 1], got {residual}")


def _check_self_attention(weights: np.ndarray, name: str = "attention") -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4:
        raise ValueError(
            f"{name} must be shaped [layers, heads, queries, keys], got {weights.ndim} dims {weights.shape}"
        )
    if weights.shape[2] != weights.shape[3]:
        raise ValueError(
            f"{name} must be self-attention with as many queries as keys, got {weights.shape[2]} queries and "
            f"{weights.shape[3]} keys"
        )
    if weights.shape[0] == 0 or weights.shape[1] == 0:
        raise ValueError(f"{name} needs at least one layer and one head, got shape {weights.shape}")
    return weights


def residual_attention(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Head-averaged self-attention with the residual connection added, per layer: [L, H, S, S] → [L, S, S].

    ``Ã = (1 - residual)·mean_h(A) + residual·I``, rows renormalised to sum to 1 (rows that are all zero, such as
    padding with ``residual=0``, stay zero). ``residual=0`` gives the raw head-averaged attention; Abnar & Zuidema
    use 0.5."""
    _check_residual(residual)
    weights = _check_self_attention(weights)
    size = weights.shape[2]
    mixed = (1.0 - residual) * weights.mean(axis=1) + residual * np.eye(size)
    rows = mixed.sum(axis=-1, keepdims=True)
    return np.divide(mixed, rows, out=np.zeros_like(mixed), where=rows > 0)


def attention_rollout(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout after every layer: [L, H, S, S] → [L, S, S].

    ``R_1 = Ã_1`` and ``R_l = Ã_l · R_{l-1}`` with ``Ã`` from :func:`residual_attention`. Row i of ``R_l`` is how
    much of input token j reaches position i after layer l (0-based index l - 1); rows sum to 1."""
    mixed = residual_attention(weights, residual)
    rollout = np.empty_like(mixed)
    current = np.eye(mixed.shape[1])
    for layer, matrix in enumerate(mixed):
        current = matrix @ current
        rollout[layer] = current
    return rollout


def attention_flow(
    weights: np.ndarray, residual: float = 0.5, layer: int | None = None, *, normalise: bool = True
) -> np.ndarray:
    """Attention flow from the input tokens to the positions after the last layer, or after ``layer`` (0-based):
    [L, H, S, S] → [S, S].

    The graph has a node per token and layer boundary (layer 0 = the input tokens); the edge from node j below layer
    l to node i above it has capacity ``Ã_l[i, j]`` (:func:`residual_attention`). Entry [i, j] is the maximum flow
    from input token j to position i at the top (networkx's preflow-push, one problem per pair).

    With ``normalise=True`` (the default) each row is divided by its sum so that it sums to 1 and compares with
    :func:`attention_rollout`; the raw values, as Abnar & Zuidema show them, come with ``normalise=False`` (each is
    at most 1, but a row may sum to more). Raises ValueError for more than :data:`MAX_FLOW_TOKENS` tokens."""
    weights = _check_self_attention(weights)
    size = weights.shape[2]
    if size > MAX_FLOW_TOKENS:
        raise ValueError(
            f"attention flow is limited to {MAX_FLOW_TOKENS} tokens ({size} given): it solves one max-flow problem "
            f"per pair of tokens, {size * size} here; use attention_rollout for longer sequences"
        )
    mixed = residual_attention(weights, residual)
    num_layers = mixed.shape[0]
    if layer is None:
        layer = num_layers - 1
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer must be between 0 and {num_layers - 1}, got {layer}")
    top = layer + 1

    graph = nx.DiGraph()
    graph.add_nodes_from((level, token) for level in range(top + 1) for token in range(size))
    for level in range(1, top + 1):
        matrix = mixed[level - 1]
        for i in range(size):
            for j in range(size):
                if matrix[i, j] > 0:
                    graph.add_edge((level - 1, j), (level, i), capacity=float(matrix[i, j]))
    # One residual network for all problems: preflow-push resets its flows at the start of each.
    network = build_residual_network(graph, "capacity")
    flow = np.zeros((size, size))
    for i in range(size):
        for j in range(size):
            flow[i, j] = nx.maximum_flow_value(graph, (0, j), (top, i), flow_func=preflow_push, residual=network)
    if normalise:
        rows = flow.sum(axis=1, keepdims=True)
        flow = np.divide(flow, rows, out=np.zeros_like(flow), where=rows > 0)
    return flow


def cross_rollout(
    encoder: np.ndarray, decoder: np.ndarray, cross: np.ndarray, residual: float = 0.5
) -> dict[str, np.ndarray]:
    """Rollout from each decoder position back to the source tokens and to the decoder inputs, keeping account of
    the mass that comes from each.

    ``encoder`` [L, H, S, S], ``decoder`` [L, H, T, T] and ``cross`` [L, H, T, S]. Start with ``R_tt = I`` (every
    decoder position is its own input) and ``R_ts = 0``, with ``R_enc`` the encoder's last-layer
    :func:`attention_rollout`. Then for each decoder layer l:

    - self-attention, ``D = residual_attention(decoder)[l]``: ``R_tt = D @ R_tt`` and ``R_ts = D @ R_ts``;
    - cross-attention, ``C = mean_h(cross[l])``: ``R_ts = residual·R_ts + (1 - residual)·C @ R_enc`` and
      ``R_tt = residual·R_tt``.

    Each row of ``[R_tt | R_ts]`` sums to 1. This is the attention-only form of Chefer et al.'s (2021) update rules
    for encoder–decoder models, with the residual connection weighted as in Abnar & Zuidema (2020).

    Returns ``{"source": R_ts [T, S], "target": R_tt [T, T], "source_share": R_ts row sums [T]}``: the share of
    decoder position t's state that comes from the source words."""
    _check_residual(residual)
    encoder = _check_self_attention(encoder, "encoder attention")
    decoder = _check_self_attention(decoder, "decoder attention")
    cross = np.asarray(cross, dtype=np.float64)
    if cross.ndim != 4:
        raise ValueError(f"cross attention must be shaped [layers, heads, queries, keys], got {cross.ndim} dims")
    shapes = {"encoder": encoder.shape, "decoder": decoder.shape, "cross": cross.shape}
    if len({shape[0] for shape in shapes.values()}) != 1:
        raise ValueError(f"encoder, decoder and cross attention must have the same number of layers, got {shapes}")
    if len({shape[1] for shape in shapes.values()}) != 1:
        raise ValueError(f"encoder, decoder and cross attention must have the same number of heads, got {shapes}")
    if cross.shape[2] != decoder.shape[2]:
        raise ValueError(
            f"cross attention has {cross.shape[2]} queries but the decoder {decoder.shape[2]} positions: "
            "they must match"
        )
    if cross.shape[3] != encoder.shape[2]:
        raise ValueError(
            f"cross attention has {cross.shape[3]} keys but the encoder {encoder.shape[2]} tokens: they must match"
        )

    encoder_rollout = attention_rollout(encoder, residual)[-1]
    self_attention = residual_attention(decoder, residual)
    cross_mean = cross.mean(axis=1)
    target_length, source_length = cross.shape[2], cross.shape[3]
    target = np.eye(target_length)
    source = np.zeros((target_length, source_length))
    for layer in range(decoder.shape[0]):
        matrix = self_attention[layer]
        target = matrix @ target
        source = matrix @ source
        source = residual * source + (1.0 - residual) * cross_mean[layer] @ encoder_rollout
        target = residual * target
    return {"source": source, "target": target, "source_share": source.sum(axis=1)}
