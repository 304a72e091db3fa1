"""One attention head computed step by step, from the tensors the model itself used (§3.2, Eq. 1, and §3.1).

For a sentence and its translation (the app's teacher-forced pass over ``<s>`` + output), an attention kind, layer
and head, :func:`head_steps` records the inputs of that attention sub-layer during a real forward pass (hooks on the
model's modules: nothing is re-implemented on the way there), then recomputes the head in the paper's order:

    X → Q = X W_Q, K = X W_K, V = X W_V (the head's slices) → Q Kᵀ → ÷ √d_k → mask → softmax → weights · V
      → Concat(all heads) → · W_O → X + … (residual) → LayerNorm

and keeps what the model's own pass produced at the concatenation, the output projection and the sub-layer's
LayerNorm, so that every recomputed step can be checked against the model (:meth:`HeadSteps.agreement`). For
cross-attention the queries come from the decoder and the keys and values from the encoder's output (``memory``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer.analysis.attention import KINDS, entropy_bits
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID, Tokenizer, readable_pieces


@dataclass(frozen=True)
class Step:
    key: str
    equation: str  # LaTeX; the step's title and explanation are the app's messages step.<key>.title / .explanation


STEPS = (
    Step("x", r"X^{(1)} = \mathrm{Embedding}(x)\,\sqrt{d_{model}} + PE"),
    Step("qkv", r"Q = X W^Q_i,\quad K = X W^K_i,\quad V = X W^V_i"),
    Step("scores", r"Q K^\top"),
    Step("scaled", r"\frac{Q K^\top}{\sqrt{d_k}}"),
    Step("masked", r"\frac{Q K^\top}{\sqrt{d_k}} + M,\quad M_{ij} \in \{0, -\infty\}"),
    Step("weights", r"A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right)"),
    Step("head_output", r"\mathrm{head}_i = A V"),
    Step("concatenated", r"\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)"),
    Step("projected", r"\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\dots)\, W^O"),
    Step("residual", r"X + \mathrm{MultiHead}(\dots)"),
    Step("output", r"\mathrm{LayerNorm}(X + \mathrm{Sublayer}(X))"),
)
# A pre-norm model (M2M100/NLLB) normalises a sub-layer's input instead of its sum: X = LayerNorm(H) of the residual
# stream H, and the sub-layer's result is H + Sublayer(X), with no LayerNorm after it.
PRE_NORM_EQUATIONS = {
    "x": r"X = \mathrm{LayerNorm}(H)",
    "residual": r"H + \mathrm{MultiHead}(\dots)",
    "output": r"H + \mathrm{Sublayer}(\mathrm{LayerNorm}(H))",
}


def equation(step: Step, norm_first: bool) -> str:
    """The step's equation for a post-norm (the paper's) or a pre-norm model."""
    return PRE_NORM_EQUATIONS.get(step.key, step.equation) if norm_first else step.equation


@dataclass
class HeadSteps:
    """One head of one attention sub-layer on one sentence; matrices as NumPy float32 arrays, rows = tokens."""

    kind: str
    layer: int  # 0-based
    head: int  # 0-based
    query_tokens: list[str]
    key_tokens: list[str]
    x: np.ndarray  # [Tq, D]: the sub-layer's input (its queries; keys and values too in self-attention)
    memory: np.ndarray | None  # [Tk, D]: cross-attention's keys and values come from here (encoder output)
    embedding: np.ndarray | None  # [Tq, D]: layer 1 of a self-attention: Embedding·√d_model …
    positional: np.ndarray | None  # [Tq, D]: … + PE
    w_q: np.ndarray  # [D, d_k]: the head's slices, as X W (bias added separately)
    w_k: np.ndarray
    w_v: np.ndarray
    q: np.ndarray  # [Tq, d_k]
    k: np.ndarray  # [Tk, d_k]
    v: np.ndarray  # [Tk, d_k]
    scores: np.ndarray  # [Tq, Tk]
    scaled: np.ndarray
    mask: np.ndarray  # [Tq, Tk] bool: True where the query may attend
    masked: np.ndarray  # scaled, −inf where masked
    weights: np.ndarray  # [Tq, Tk]
    head_output: np.ndarray  # [Tq, d_k]
    concatenated: np.ndarray  # [Tq, D] all heads, recomputed
    projected: np.ndarray  # [Tq, D]
    residual: np.ndarray  # [Tq, D]
    output: np.ndarray  # [Tq, D]
    model_concatenated: np.ndarray  # what the model's own pass produced at these three points
    model_projected: np.ndarray
    model_output: np.ndarray
    norm_first: bool = False  # pre-norm: x is LayerNorm(H) of the stream H, residual and output are H + …

    @property
    def d_k(self) -> int:
        return self.q.shape[-1]

    @property
    def head_columns(self) -> slice:
        """This head's columns in the concatenation."""
        return slice(self.head * self.d_k, (self.head + 1) * self.d_k)

    def agreement(self) -> dict[str, float]:
        """Largest absolute difference between the recomputed steps and the model's own pass."""
        return {
            "concatenated": float(np.abs(self.concatenated - self.model_concatenated).max()),
            "projected": float(np.abs(self.projected - self.model_projected).max()),
            "output": float(np.abs(self.output - self.model_output).max()),
        }


def sub_layer(model: Transformer, kind: str, layer: int) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The attention module of one sub-layer and its LayerNorm (closing it in a post-norm model, opening it in a
    pre-norm one)."""
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(KINDS)}")
    layers = model.encoder_layers if kind == "encoder" else model.decoder_layers
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer {layer} out of range: the model has {len(layers)} {kind} layers (0-based)")
    block = layers[layer]
    if kind == "cross":
        return block.cross_attention, block.cross_attention_norm
    return block.self_attention, block.self_attention_norm


@torch.no_grad()
def head_steps(
    model: Transformer,
    tokenizer: Tokenizer,
    source_ids: Sequence[int],
    output_ids: Sequence[int],
    kind: str,
    layer: int,
    head: int,
) -> HeadSteps:
    """Every step of one head (0-based ``layer`` and ``head``) on a source (ending with </s>) and an output
    (without <s>/</s>), as the app's attention maps see them (:func:`~transformer.analysis.attention.attention_for`)."""
    attention, norm = sub_layer(model, kind, layer)
    if not 0 <= head < attention.num_heads:
        raise ValueError(f"head {head} out of range: the model has {attention.num_heads} heads (0-based)")
    model.eval()
    device = next(model.parameters()).device
    source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
    target_input = torch.tensor([[BOS_ID, *output_ids]], dtype=torch.long, device=device)
    norm_first = model.config.norm_first
    after = _next_norm(model, kind, layer) if norm_first else None
    seen = _recorded(model, kind, attention, norm, source, target_input, after)
    x = seen["x"]
    memory = seen["memory"]
    mask = torch.ones(x.shape[0], (x if memory is None else memory).shape[0], dtype=torch.bool, device=device)
    if seen["mask"] is not None:
        mask = mask & seen["mask"][0, 0].expand(*mask.shape)
    stream = seen["stream"] if norm_first else None
    steps = _recomputed(attention, norm, x, x if memory is None else memory, mask, head, stream)
    ids = list(source_ids) if kind == "encoder" else [BOS_ID, *output_ids]
    embedding = positional = None
    # The first layer's input as embedding + PE, where it is that sum (a LayerNorm of it, BART's, is not)
    if layer == 0 and kind != "cross" and not norm_first and not model.config.embedding_norm:
        embedding = model.embedding.weight[ids].float() * model.embedding_scale
        positional = model.positions("encoder" if kind == "encoder" else "decoder")[: len(ids)].detach().float()
    # Labels as a reader sees them (no SentencePiece ▁; · before a piece that continues a word).
    source_tokens = readable_pieces(tokenizer.pieces(source_ids))
    target_tokens = readable_pieces(tokenizer.pieces([BOS_ID, *output_ids]))
    columns = slice(head * attention.head_dim, (head + 1) * attention.head_dim)
    arrays = {name: _array(value) for name, value in steps.items()}
    return HeadSteps(
        kind=kind,
        layer=layer,
        head=head,
        query_tokens=source_tokens if kind == "encoder" else target_tokens,
        key_tokens=target_tokens if kind == "decoder" else source_tokens,
        x=_array(x),
        memory=_array(memory),
        embedding=_array(embedding),
        positional=_array(positional),
        w_q=_array(attention.query.weight[columns].T),
        w_k=_array(attention.key.weight[columns].T),
        w_v=_array(attention.value.weight[columns].T),
        mask=mask.cpu().numpy(),
        model_concatenated=_array(seen["concatenated"]),
        model_projected=_array(seen["projected"]),
        model_output=_array(seen["output"]),
        norm_first=norm_first,
        **arrays,
    )


def _next_norm(model: Transformer, kind: str, layer: int) -> torch.nn.Module | None:
    """In a pre-norm model, the LayerNorm that reads a sub-layer's result H + Sublayer(X): the next sub-layer's, or
    for the stack's last one the stack's final LayerNorm."""
    if kind == "encoder":
        return model.encoder_layers[layer].feed_forward_norm
    block = model.decoder_layers[layer]
    return block.cross_attention_norm if kind == "decoder" else block.feed_forward_norm


def _array(tensor: torch.Tensor | None) -> np.ndarray | None:
    return None if tensor is None else tensor.detach().float().cpu().numpy()


def _recorded(
    model: Transformer, kind: str, attention, norm, source, target_input, after=None
) -> dict[str, torch.Tensor | None]:
    """What one sub-layer sees and makes in the model's own pass (its batch's one sentence, as float): its input
    ``x``, cross-attention's ``memory``, its ``mask``, the heads ``concatenated`` before Wᴼ, the ``projected``
    output, the ``residual`` sum and the LayerNorm's ``output``. Pre-norm (``after``: the LayerNorm that reads the
    sub-layer's result): the ``stream`` H the LayerNorm opening the sub-layer reads, and the result H + Sublayer
    as ``output``."""
    seen: dict[str, torch.Tensor | None] = {}

    def attention_inputs(module, args, kwargs, output):
        seen["x"] = args[0]
        seen["memory"] = args[1] if len(args) > 1 else kwargs.get("key_value")
        seen["mask"] = kwargs.get("mask", args[2] if len(args) > 2 else None)

    def projection(module, args, output):
        seen["concatenated"], seen["projected"] = args[0], output

    def closing_norm(module, args, output):
        seen["residual"], seen["output"] = args[0], output

    def opening_norm(module, args, output):
        seen["stream"] = args[0]

    def result(module, args, output):
        seen["residual"] = seen["output"] = args[0]

    hooks = [
        attention.register_forward_hook(attention_inputs, with_kwargs=True),
        attention.output.register_forward_hook(projection),
    ]
    if after is None:
        hooks.append(norm.register_forward_hook(closing_norm))
    else:
        hooks += [norm.register_forward_hook(opening_norm), after.register_forward_hook(result)]
    try:
        if kind == "encoder":
            model.encode(source)
        else:
            model(source, target_input)
    finally:
        for hook in hooks:
            hook.remove()
    return {name: value if name == "mask" or value is None else value[0].float() for name, value in seen.items()}


def _recomputed(
    attention,
    norm,
    x: torch.Tensor,
    keys_from: torch.Tensor,
    mask: torch.Tensor,
    head: int,
    stream: torch.Tensor | None = None,
) -> dict:
    """The sub-layer computed again step by step from its weights (§3.2): every head's scaled dot-product
    attention, their concatenation, Wᴼ, the residual sum and LayerNorm; ``head``'s intermediate matrices. With the
    pre-norm ``stream`` H (x = LayerNorm(H)), the residual sum is H + Wᴼ(…) and nothing follows it."""
    d_k = attention.head_dim

    def project(linear: torch.nn.Linear, inputs: torch.Tensor) -> torch.Tensor:
        return inputs @ linear.weight.float().T + linear.bias.float()

    all_q, all_k, all_v = (
        project(attention.query, x),
        project(attention.key, keys_from),
        project(attention.value, keys_from),
    )
    outputs, chosen = [], {}
    for index in range(attention.num_heads):
        part = slice(index * d_k, (index + 1) * d_k)
        scores = all_q[:, part] @ all_k[:, part].T
        scaled = scores / math.sqrt(d_k)
        masked = scaled.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(masked, dim=-1)
        outputs.append(weights @ all_v[:, part])
        if index == head:
            chosen = {
                "q": all_q[:, part],
                "k": all_k[:, part],
                "v": all_v[:, part],
                "scores": scores,
                "scaled": scaled,
                "masked": masked,
                "weights": weights,
                "head_output": outputs[-1],
            }
    concatenated = torch.cat(outputs, dim=-1)
    projected = project(attention.output, concatenated)
    if stream is not None:
        residual = stream + projected
        return {
            **chosen,
            "concatenated": concatenated,
            "projected": projected,
            "residual": residual,
            "output": residual,
        }
    residual = x + projected
    output = torch.nn.functional.layer_norm(residual, (x.shape[-1],), norm.weight.float(), norm.bias.float(), norm.eps)
    return {**chosen, "concatenated": concatenated, "projected": projected, "residual": residual, "output": output}


# ------------------------------------------------------------------------------------------------ why √d_k
def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax that treats −∞ as weight 0."""
    shifted = scores - np.max(scores, axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(-1, keepdims=True)


@dataclass
class ScalingDemo:
    """§3.2.1's footnote on random vectors: q and k with independent N(0, 1) components have q·k of mean 0 and
    variance d_k, so unscaled scores grow with d_k and their softmax saturates; dividing by √d_k keeps variance 1."""

    d_k: int
    dots: np.ndarray  # [samples]: q·k
    rows_unscaled: np.ndarray  # [rows, keys]: softmax of unscaled scores
    rows_scaled: np.ndarray  # [rows, keys]: softmax of scores / √d_k

    @property
    def variance(self) -> float:
        return float(self.dots.var())

    def entropy(self, scaled: bool) -> float:
        """Mean entropy (bits) of the rows' softmax; log2(keys) is uniform, 0 is one key."""
        return float(entropy_bits(self.rows_scaled if scaled else self.rows_unscaled).mean())

    def largest_weight(self, scaled: bool) -> float:
        return float((self.rows_scaled if scaled else self.rows_unscaled).max(-1).mean())


def scaling_demo(d_k: int, samples: int = 4000, keys: int = 10, rows: int = 500, seed: int = 0) -> ScalingDemo:
    """Random queries and keys of width ``d_k``: their dot products, and the softmax of ``rows`` rows of ``keys``
    scores with and without the 1/√d_k scaling."""
    if d_k < 1:
        raise ValueError("d_k must be at least 1")
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((samples, d_k)), rng.standard_normal((samples, d_k))
    dots = (q * k).sum(-1)
    row_q = rng.standard_normal((rows, 1, d_k))
    row_k = rng.standard_normal((rows, keys, d_k))
    scores = (row_q * row_k).sum(-1)  # [rows, keys]
    return ScalingDemo(d_k, dots, softmax(scores), softmax(scores / np.sqrt(d_k)))


def head_scaling(steps: HeadSteps) -> dict[str, np.ndarray]:
    """The loaded head's own scores with and without the scaling: the scores of the keys each query may see, and
    per query the entropy (bits) of the softmax of Q Kᵀ (unscaled) and of Q Kᵀ / √d_k (the model's)."""
    unscaled = np.where(steps.mask, steps.scores, -np.inf)
    visible = steps.mask
    return {
        "unscaled_scores": steps.scores[visible],
        "scaled_scores": steps.scaled[visible],
        "entropy_unscaled": entropy_bits(softmax(unscaled)),
        "entropy_scaled": entropy_bits(steps.weights),
        "uniform": np.log2(visible.sum(-1)),
    }


# ------------------------------------------------------------------------------------------------ decoding
@dataclass
class NextTokens:
    """At each decoder position t: the chosen next piece (the output the search kept, then </s>), its probability
    and rank, and the model's ``k`` most probable next pieces."""

    position_tokens: list[str]  # what position t reads: <s> y1 … yn
    chosen: list[str]  # what it produced: y1 … yn </s>
    chosen_probability: np.ndarray  # [T]
    chosen_rank: np.ndarray  # [T], 1 = the most probable
    top_tokens: list[list[str]]  # [T][k]
    top_probabilities: np.ndarray  # [T, k]


@torch.no_grad()
def next_tokens(
    model: Transformer, tokenizer: Tokenizer, source_ids: Sequence[int], output_ids: Sequence[int], k: int = 5
) -> NextTokens:
    """One teacher-forced pass over ``<s>`` + the output: the probabilities of every next piece at every position
    (the same pass whose attention the app draws)."""
    model.eval()
    device = next(model.parameters()).device
    source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
    target_input = torch.tensor([[BOS_ID, *output_ids]], dtype=torch.long, device=device)
    probabilities = torch.softmax(model(source, target_input).logits[0].float(), dim=-1)  # [T, V]
    chosen_ids = torch.tensor([*output_ids, EOS_ID], device=device)
    chosen_probability = probabilities.gather(1, chosen_ids[:, None])[:, 0]
    rank = (probabilities > chosen_probability[:, None]).sum(-1) + 1
    top = probabilities.topk(min(k, probabilities.shape[-1]), dim=-1)
    return NextTokens(
        position_tokens=readable_pieces(tokenizer.pieces([BOS_ID, *output_ids])),
        chosen=readable_pieces(tokenizer.pieces(chosen_ids.tolist())),
        chosen_probability=chosen_probability.cpu().numpy(),
        chosen_rank=rank.cpu().numpy(),
        top_tokens=[readable_pieces(tokenizer.pieces(row)) for row in top.indices.tolist()],
        top_probabilities=top.values.cpu().numpy(),
    )
