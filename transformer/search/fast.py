"""The decoder as the search runs it: one new position for every live hypothesis per step (§3.1, §6.1).

The same computation as :meth:`Transformer.decode` over the whole prefix, for the last position only, with the keys
and values of the earlier positions kept between steps. Written for speed on a CPU, where a step of a small model
is a few dozen matrix products of a handful of rows and the work between them costs as much as the products:

- every weight is packed once per model (:func:`packed_weights`) in oneDNN's own layout (:class:`PackedLinear`,
  ReLU and the residual add fused into the product; transposed for ``addmm`` where oneDNN is missing), the
  self-attention's Q, K and V side by side, the cross-attention's K and V side by side, the query weights scaled by
  1/√d_k (Eq. 1) so no step scales the scores; the encoder (:func:`encode`) uses them too;
- the encoder memory's keys and values are projected once per sentence and shared by the sentence's beams: the
  beams of one sentence are the query rows of one product over that sentence's memory; for a short sentence they
  also absorb the cross-attention's query and output projections;
- the self-attention keys and values of all layers live in one buffer, written in place at each step and reordered
  for the beams' new parents with one ``index_select``.

docs/speed.md measures each of these against the model's own modules and against CTranslate2.

The packed weights are made again after the model's weights change (each parameter's version counter moves on
every in-place update) and follow the heads switched off by :meth:`Transformer.head_mask`.

Shapes as in :mod:`transformer.paper.model` (B sentences, S source length, T target length, D d_model, H heads, K head
width, L layers), and A the rows of a step: the live hypotheses, ``beams`` per sentence. Between the products the
residual stream is kept flat, one row per position: (B·T, D).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer.paper.config import ModelConfig
from transformer.paper.model import MultiHeadAttention, Transformer, target_mask
from transformer.search.packed import PackedLayer, PackedModel, packed_weights

FOLD_SENTENCES = 1  # StepDecoder folds the cross-attention's projections for batches of up to this many sentences


def _gates(modules: list[MultiHeadAttention]) -> list[Tensor | None]:
    return [None if module.head_gate is None else module.head_gate.view(-1, 1) for module in modules]


def _attend(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, gate: Tensor | None) -> Tensor:
    """Eq. 1 with the queries already scaled: query (N, H, Q, K), key/value (N, H, T, K) → (N, H, Q, K), each head
    times its gate (a head switched off: 0)."""
    return _gated(F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=1.0), gate)


def _attend_recording(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, gate: Tensor | None, record: list[Tensor]
) -> Tensor:
    """:func:`_attend` that also appends the probabilities softmax(Q Kᵀ) (N, H, Q, T), before the gates, to
    ``record``, as :meth:`MultiHeadAttention.forward` records them."""
    scores = query @ key.transpose(-2, -1)  # (N, H, Q, T)
    if mask is not None:
        scores = scores + mask
    probabilities = torch.softmax(scores, dim=-1)
    record.append(probabilities)
    return _gated(probabilities @ value, gate)


def _gated(attended: Tensor, gate: Tensor | None) -> Tensor:
    """The heads' outputs (N, H, Q, K), each times its gate (H, 1); None: every gate 1."""
    return attended if gate is None else attended * gate.to(attended.dtype).view(1, -1, 1, 1)


def _split_heads(projected: Tensor, batch: int, parts: int, config: ModelConfig) -> Tensor:
    """``parts`` projections side by side (queries, keys, values), (B·T, parts·D) → (parts, B, H, T, K)."""
    return projected.view(batch, -1, parts, config.num_heads, config.head_dim).permute(2, 0, 3, 1, 4)


def _merge_heads(attended: Tensor) -> Tensor:
    """Concat(head_1, …, head_h) of §3.2.2, one row per position: (B, H, T, K) → (B·T, D)."""
    batch, heads, length, width = attended.shape
    return attended.transpose(1, 2).reshape(batch * length, heads * width)


def _padding_mask(source: Tensor, pad_id: int, dtype: torch.dtype) -> Tensor | None:
    """(B, 1, 1, S), added to attention scores: -inf at the padding; None for a batch without padding."""
    padding = source == pad_id
    if not bool(padding.any()):
        return None
    mask = torch.zeros(source.size(0), 1, 1, source.size(1), dtype=dtype, device=source.device)
    return mask.masked_fill_(padding[:, None, None, :], float("-inf"))


def _self_attention(
    layer: PackedLayer,
    config: ModelConfig,
    batch: int,
    mask: Tensor | None,
    gate: Tensor | None,
    record: list[Tensor] | None,
    h: Tensor,
    x: Tensor,
) -> Tensor:
    """x + self-attention over whole sequences of ``batch`` rows, h and x (B·T, D) → (B·T, D); the probabilities
    (B, H, T, T) appended to ``record`` unless it is None."""
    query, key, value = _split_heads(layer.self_qkv(h), batch, 3, config)  # (B, H, T, K) each
    if record is None:
        attended = _attend(query, key, value, mask, gate)
    else:
        attended = _attend_recording(query, key, value, mask, gate, record)
    return layer.self_out.plus(_merge_heads(attended), x)


def _cross_attention(
    layer: PackedLayer,
    config: ModelConfig,
    memory: Tensor,
    mask: Tensor | None,
    gate: Tensor | None,
    record: list[Tensor],
    h: Tensor,
    x: Tensor,
) -> Tensor:
    """x + cross-attention of whole targets over the encoder's ``memory`` (B, S, D), h and x (B·T, D) → (B·T, D);
    the probabilities (B, H, T, S) appended to ``record``."""
    batch = memory.size(0)
    query = _split_heads(layer.cross_query(h), batch, 1, config)[0]  # (B, H, T, K)
    projected = layer.cross_key_value(memory.reshape(-1, config.d_model))  # (B·S, 2·D)
    key, value = _split_heads(projected, batch, 2, config)  # (B, H, S, K) each
    attended = _attend_recording(query, key, value, mask, gate, record)
    return layer.cross_out.plus(_merge_heads(attended), x)


def _embed(packed: PackedModel, ids: Tensor) -> Tensor:
    """§3.4–3.5 without dropout: source ids (B, T) → Embedding·√d_model + PE (and the encoder's embedding
    LayerNorm where the model has one), flattened to (B·T, D)."""
    batch, length = ids.shape
    if length > packed.positions.size(0):
        raise ValueError(f"sequence of {length} tokens exceeds the model's {packed.positions.size(0)} positions")
    d_model = packed.embedding.size(1)
    x = F.embedding(ids, packed.embedding).mul_(packed.embedding_scale)
    x = x.add_(packed.positions[:length].to(x.dtype)).view(batch * length, d_model)
    return packed.final(x, packed.encoder_embedding_norm)


def _encode(model: Transformer, source: Tensor, record: list[Tensor] | None) -> Tensor:
    """The encoder on the packed weights, source (B, S) → memory (B, S, D); each layer's self-attention
    probabilities (B, H, S, S) appended to ``record`` unless it is None."""
    packed, config = packed_weights(model), model.config
    x = _embed(packed, source)  # (B·S, D)
    mask = _padding_mask(source, config.pad_id, x.dtype)  # (B, 1, 1, S), or None
    gates = _gates(model.attention_modules("encoder"))
    for layer, gate in zip(packed.encoder, gates, strict=True):
        attend = functools.partial(_self_attention, layer, config, source.size(0), mask, gate, record)
        x = packed.residual(x, layer.norms[0], attend)
        x = packed.feed_forward(layer, x)
    return packed.final(x, packed.encoder_norm).view(*source.shape, config.d_model)


@torch.no_grad()
def encode(model: Transformer, source: Tensor) -> Tensor:
    """:meth:`Transformer.encode` as the search runs it (packed weights, no attention weights, no dropout): source
    (B, S) → memory (B, S, D)."""
    return _encode(model, source, None)


@torch.no_grad()
def encode_recording(model: Transformer, source: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`encode` and the encoder's self-attention probabilities (B, L, H, S, S), as
    ``model.encode(source, need_weights=True)`` gives them: the memory serves the search, the weights the app."""
    record: list[Tensor] = []
    memory = _encode(model, source, record)
    return memory, torch.stack(record, dim=1)


@torch.no_grad()
def decoder_attention(model: Transformer, memory: Tensor, source: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """The decoder's self-attention (B, L, H, T, T) and cross-attention (B, L, H, T, S) over a whole (right-shifted)
    target (B, T) at once, as ``model.decode(target, memory, model.source_mask(source), need_weights=True)`` records
    them, on the packed weights (the app's maps of a finished translation; no logits)."""
    packed, config = packed_weights(model), model.config
    x = _embed(packed, target)  # (B·T, D)
    # Causal and padding mask of Transformer.target_mask, added to the scores: (B, 1, T, T).
    allowed = target_mask(target, config.pad_id)
    self_mask = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill_(~allowed, float("-inf"))
    cross_mask = _padding_mask(source, config.pad_id, x.dtype)  # (B, 1, 1, S), or None
    gates = zip(_gates(model.attention_modules("decoder")), _gates(model.attention_modules("cross")), strict=True)
    own_weights: list[Tensor] = []
    cross_weights: list[Tensor] = []
    for layer, (self_gate, cross_gate) in zip(packed.layers, gates, strict=True):
        attend = functools.partial(_self_attention, layer, config, target.size(0), self_mask, self_gate, own_weights)
        x = packed.residual(x, layer.norms[0], attend)
        attend = functools.partial(_cross_attention, layer, config, memory, cross_mask, cross_gate, cross_weights)
        x = packed.residual(x, layer.norms[1], attend)
        x = packed.feed_forward(layer, x)
    return torch.stack(own_weights, dim=1), torch.stack(cross_weights, dim=1)


class StepDecoder:
    """Decodes one position at a time for ``beams`` hypotheses of each sentence of an encoded batch.

    ``memory`` (B, S, D) and ``source`` (B, S) are the batch's encoder output and ids, one row per sentence; rows of
    the step are hypotheses, sentence by sentence (``beams`` consecutive rows per live sentence).
    """

    def __init__(self, model: Transformer, memory: Tensor, source: Tensor, beams: int = 1) -> None:
        self.config = config = model.config
        self.packed = packed_weights(model)
        self.heads, self.head_dim = config.num_heads, config.head_dim
        self.d_model, self.beams = config.d_model, beams
        self.embedding_scale = self.packed.embedding_scale
        self.self_gates = _gates(model.attention_modules("decoder"))
        self.cross_gates = _gates(model.attention_modules("cross"))
        batch, length, _ = memory.shape
        flat = memory.reshape(batch * length, self.d_model)  # (B·S, D)
        # Cross-attention keys and values of every layer, per sentence: (B, H, S, K) each.
        self.cross_keys, self.cross_values = [], []
        for layer in self.packed.layers:
            key, value = _split_heads(layer.cross_key_value(flat), batch, 2, config)
            self.cross_keys.append(key.contiguous())
            self.cross_values.append(value.contiguous())
        self.cross_mask = _padding_mask(source, config.pad_id, flat.dtype)  # (B, 1, 1, S), or None
        # A short sentence's keys and values (H·S ≤ D) absorb the query and output projections, per sentence:
        # scores = x (Wq_h K_hᵀ) + bq_h K_hᵀ and out = Σ_h P_h (V_h Wo_h) + bo, so a step's cross-attention is two
        # small batched products instead of two products by D × D weights and the attention between them. Only for
        # one sentence: its beam-4 search took about 5% less time (45 against 47.5 ms, 4 alternating rounds of 100
        # sentences, 2 threads), but beam-4 batches of 3 and 4 sentences 5–10% more (1 thread), and greedy batches
        # of 32 (32 products of one row each) about a quarter more.
        self.folded = length * self.heads <= self.d_model and batch <= FOLD_SENTENCES
        if self.folded:
            self._fold()
        self.length = 0  # positions decoded so far
        self.buffer: Tensor | None = None  # (L, 2, A, H, capacity, K): self-attention keys and values

    def _fold(self) -> None:
        heads, width, d_model = self.heads, self.head_dim, self.d_model
        batch, _, length, _ = self.cross_keys[0].shape
        self.fold_scores, self.fold_bias, self.fold_values = [], [], []
        for layer, key, value in zip(self.packed.layers, self.cross_keys, self.cross_values, strict=True):
            (query_weight, query_bias), (out_weight, _) = layer.cross_query_plain, layer.cross_out_plain
            # (B, H, S, K) @ (H, K, D) → (B, H, S, D) → (B, D, H·S)
            scores = key @ query_weight.view(heads, width, d_model)
            self.fold_scores.append(scores.permute(0, 3, 1, 2).reshape(batch, d_model, heads * length))
            bias = (key @ query_bias.view(heads, width, 1)).view(batch, 1, heads, length)
            if self.cross_mask is not None:
                bias = bias + self.cross_mask
            self.fold_bias.append(bias.reshape(batch, 1, heads * length))
            # (B, H, S, K) @ (H, K, D) → (B, H·S, D)
            folded = value @ out_weight.t().reshape(heads, width, d_model)
            self.fold_values.append(folded.reshape(batch, heads * length, d_model))

    def _grow(self, rows: int, like: Tensor) -> None:
        needed = self.length + 1
        if self.buffer is not None and needed <= self.buffer.size(4):
            return
        capacity = max(needed, 16 if self.buffer is None else 2 * self.buffer.size(4))
        layers = len(self.packed.layers)
        buffer = like.new_zeros(layers, 2, rows, self.heads, capacity, self.head_dim)
        if self.buffer is not None:
            buffer[..., : self.length, :] = self.buffer[..., : self.length, :]
        self.buffer = buffer

    def step(self, tokens: Tensor) -> Tensor:
        """The newest tokens (A,) of the live hypotheses → the decoder's output at that position (A, D)."""
        packed, position = self.packed, self.length
        if position >= packed.decoder_positions.size(0):
            raise ValueError(f"sequence exceeds the model's {packed.decoder_positions.size(0)} positions")
        x = F.embedding(tokens, packed.embedding).mul_(self.embedding_scale)  # (A, D)
        x = packed.final(x.add_(packed.decoder_positions[position].to(x.dtype)), packed.decoder_embedding_norm)
        self._grow(tokens.size(0), x)
        assert self.buffer is not None
        slot = self.buffer.select(4, position)  # (L, 2, A, H, K): where this step's keys and values go
        history = self.buffer.narrow(4, 0, position + 1)  # (L, 2, A, H, T, K)
        cross_attention = self._folded_cross_attention if self.folded else self._cross_attention
        for index, layer in enumerate(packed.layers):
            attend = functools.partial(self._self_attention, index, slot[index], history[index])
            x = packed.residual(x, layer.norms[0], attend)
            x = packed.residual(x, layer.norms[1], functools.partial(cross_attention, index))
            x = packed.feed_forward(layer, x)
        self.length += 1
        return packed.final(x, packed.decoder_norm)

    def _self_attention(self, index: int, slot: Tensor, history: Tensor, h: Tensor, x: Tensor) -> Tensor:
        """x + the masked self-attention of layer ``index`` at this step's position, h and x (A, D) → (A, D). The
        position's key and value go into ``slot`` (2, A, H, K) of the cache; its query attends to ``history``
        (2, A, H, T, K), the keys and values up to it (no later position is there to be masked)."""
        layer, rows = self.packed.layers[index], h.size(0)
        qkv = layer.self_qkv(h).view(rows, 3, self.heads, self.head_dim)  # (A, 3, H, K)
        slot.copy_(qkv[:, 1:].transpose(0, 1))
        keys, values = history  # (A, H, T, K) each
        attended = _attend(qkv[:, 0].unsqueeze(2), keys, values, None, self.self_gates[index])  # (A, H, 1, K)
        return layer.self_out.plus(attended.view(rows, self.d_model), x)

    def _cross_attention(self, index: int, h: Tensor, x: Tensor) -> Tensor:
        """x + the cross-attention of layer ``index``, h and x (A, D) → (A, D): the beams of a sentence are the query
        rows of one product over that sentence's keys and values."""
        layer = self.packed.layers[index]
        query = _split_heads(layer.cross_query(h), h.size(0) // self.beams, 1, self.config)[0]  # (B, H, beams, K)
        key, value = self.cross_keys[index], self.cross_values[index]  # (B, H, S, K) each
        attended = _attend(query, key, value, self.cross_mask, self.cross_gates[index])  # (B, H, beams, K)
        return layer.cross_out.plus(_merge_heads(attended), x)

    def _folded_cross_attention(self, index: int, h: Tensor, x: Tensor) -> Tensor:
        """:meth:`_cross_attention` on the folded weights (:meth:`_fold`), h and x (A, D) → (A, D)."""
        sentences = h.size(0) // self.beams
        grouped = x.view(sentences, self.beams, self.d_model)
        queries = h.view(sentences, self.beams, self.d_model)
        scores = torch.baddbmm(self.fold_bias[index], queries, self.fold_scores[index])  # (B, beams, H·S)
        probabilities = torch.softmax(scores.view(sentences, self.beams, self.heads, -1), dim=-1)  # (B, beams, H, S)
        gate = self.cross_gates[index]
        if gate is not None:
            probabilities = probabilities * gate.to(probabilities.dtype).view(1, 1, -1, 1)
        residual = grouped + self.packed.layers[index].cross_out_plain[1]  # (B, beams, D)
        out = torch.baddbmm(residual, probabilities.view(sentences, self.beams, -1), self.fold_values[index])
        return out.view(-1, self.d_model)

    def logits(self, hidden: Tensor) -> Tensor:
        """Pre-softmax projection with the shared embedding matrix (§3.4): (A, D) → (A, V)."""
        return self.packed.projection(hidden)

    def reorder(self, rows: Tensor) -> None:
        """The hypotheses continue from rows ``rows`` of the last step (each within its own sentence's block)."""
        if self.buffer is not None:
            self.buffer = self.buffer.index_select(2, rows)

    def keep_sentences(self, sentences: Tensor) -> None:
        """Only the sentences ``sentences`` (indices into the live ones) search on; call before :meth:`reorder`."""
        self.cross_keys = [key.index_select(0, sentences) for key in self.cross_keys]
        self.cross_values = [value.index_select(0, sentences) for value in self.cross_values]
        if self.cross_mask is not None:
            self.cross_mask = self.cross_mask.index_select(0, sentences)
        if self.folded:
            for folded in (self.fold_scores, self.fold_bias, self.fold_values):
                folded[:] = [tensor.index_select(0, sentences) for tensor in folded]
