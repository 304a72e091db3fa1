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
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer.model import ACTIVATION_FUNCTIONS, MultiHeadAttention, Transformer, target_mask


@functools.cache
def _onednn_products() -> tuple[Callable, Callable] | None:
    """oneDNN's product on a packed weight and the same plus a residual, if these private PyTorch operators (which
    may change between releases) exist here and compute what ``F.linear`` computes, with ReLU and with a residual
    added; probed once per process. The overloads are resolved here once, not at every call."""
    try:
        if not torch.backends.mkldnn.is_available():
            return None
        product, plus = torch.ops.mkldnn._linear_pointwise.default, torch.ops.mkldnn._linear_pointwise.binary
        generator = torch.Generator().manual_seed(0)
        weight, bias = torch.randn(24, 16, generator=generator), torch.randn(24, generator=generator)
        x, residual = torch.randn(3, 16, generator=generator), torch.randn(3, 24, generator=generator)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 4)
        expected = F.linear(x, weight, bias)
        checks = (
            (product(x, packed, bias, "none", [], ""), expected),
            (product(x, packed, bias, "relu", [], ""), expected.relu()),
            (plus(x, residual, packed, bias, "add"), expected + residual),
        )
        if all(torch.allclose(found, wanted, atol=1e-4) for found, wanted in checks):
            return product, plus
        return None
    except (AttributeError, RuntimeError, TypeError):
        return None


class PackedLinear:
    """``x W^T + b`` (optionally followed by ReLU, or with a residual added) on a weight packed once.

    On CPUs, oneDNN's own layout of the weight (``torch.ops.mkldnn``, what ``torch.compile`` freezes a CPU linear
    layer into): a product of 4 rows by a 1024 × 256 weight took about a third of the time of ``F.linear``'s on a
    2-core AMD EPYC (docs/speed.md). Elsewhere, or where this PyTorch's operators fail the probe of
    :func:`_onednn_products`, ``addmm`` with the weight stored transposed.
    """

    __slots__ = ("bias", "products", "weight")

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        weight = weight.detach()
        self.bias = None if bias is None else bias.detach().contiguous()
        self.products = _onednn_products() if weight.device.type == "cpu" else None
        if self.products is not None:
            try:
                self.weight = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), 4)
                return
            except RuntimeError:  # a dtype or CPU oneDNN does not take
                self.products = None
        self.weight = weight.t().contiguous()

    @property
    def onednn(self) -> bool:
        return self.products is not None

    def __call__(self, x: Tensor, relu: bool = False) -> Tensor:
        if self.products is not None:
            return self.products[0](x, self.weight, self.bias, "relu" if relu else "none", [], "")
        out = torch.mm(x, self.weight) if self.bias is None else torch.addmm(self.bias, x, self.weight)
        return out.relu_() if relu else out

    def plus(self, x: Tensor, residual: Tensor) -> Tensor:
        """``x W^T + b + residual``: a sub-layer's output on the residual stream (§3.1)."""
        if self.products is not None:
            return self.products[1](x, residual, self.weight, self.bias, "add")
        return torch.addmm(self.bias, x, self.weight).add_(residual)


@dataclass(frozen=True)
class PackedLayer:
    """One layer's weights as the search uses them (an encoder layer has no cross-attention)."""

    self_qkv: PackedLinear  # Q (scaled by 1/√d_k), K and V side by side
    self_out: PackedLinear
    inner: PackedLinear
    outer: PackedLinear
    norms: tuple[tuple[Tensor, Tensor, float], ...]  # (weight, bias, eps): self[, cross], feed-forward
    cross_query: PackedLinear | None = None  # scaled by 1/√d_k
    cross_key_value: PackedLinear | None = None
    cross_out: PackedLinear | None = None
    # The same cross-attention query (scaled) and output weights as plain (out, in) matrices and biases, for
    # folding them into a short sentence's keys and values (StepDecoder).
    cross_query_plain: tuple[Tensor, Tensor] | None = None
    cross_out_plain: tuple[Tensor, Tensor] | None = None


@dataclass(frozen=True)
class PackedModel:
    encoder: tuple[PackedLayer, ...]
    layers: tuple[PackedLayer, ...]  # the decoder's
    embedding: Tensor  # (V, D), the shared matrix (§3.4)
    projection: PackedLinear  # the same matrix as the pre-softmax projection
    positions: Tensor  # (P, D)
    embedding_scale: float  # √d_model (§3.4)
    activation: str  # the FFN's non-linearity
    norm_first: bool  # pre-norm sub-layers, and a final LayerNorm per stack
    encoder_norm: tuple[Tensor, Tensor, float] | None = None  # pre-norm only
    decoder_norm: tuple[Tensor, Tensor, float] | None = None

    def before(self, x: Tensor, norm: tuple[Tensor, Tensor, float]) -> Tensor:
        """A sub-layer's input: the residual stream, LayerNorm-ed first in a pre-norm model."""
        return F.layer_norm(x, (x.size(-1),), *norm) if self.norm_first else x

    def after(self, x: Tensor, norm: tuple[Tensor, Tensor, float]) -> Tensor:
        """The residual stream after a sub-layer's output is added: LayerNorm-ed there in a post-norm model (§3.1)."""
        return x if self.norm_first else F.layer_norm(x, (x.size(-1),), *norm)

    def feed_forward(self, layer: PackedLayer, x: Tensor) -> Tensor:
        """The FFN sub-layer (Eq. 2) with its residual and LayerNorm: x (N, D) → (N, D)."""
        h = self.before(x, layer.norms[-1])
        if self.activation == "relu":
            inner = layer.inner(h, relu=True)
        else:
            inner = ACTIVATION_FUNCTIONS[self.activation](layer.inner(h))
        return self.after(layer.outer.plus(inner, x), layer.norms[-1])

    def final(self, x: Tensor, norm: tuple[Tensor, Tensor, float] | None) -> Tensor:
        return x if norm is None else F.layer_norm(x, (x.size(-1),), *norm)


_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
FOLD_SENTENCES = 1  # StepDecoder folds the cross-attention's projections for batches of up to this many sentences


def _linear(module: torch.nn.Linear, scale: float = 1.0) -> PackedLinear:
    if scale == 1.0:
        return PackedLinear(module.weight, module.bias)
    return PackedLinear(module.weight * scale, module.bias * scale)


def _query_scale(attention: MultiHeadAttention) -> float:
    return 1.0 / math.sqrt(attention.head_dim) if attention.scaled else 1.0


def _pack_layer(layer) -> PackedLayer:
    own, feed = layer.self_attention, layer.feed_forward
    scale = _query_scale(own)
    self_qkv = PackedLinear(
        torch.cat([own.query.weight * scale, own.key.weight, own.value.weight]),
        torch.cat([own.query.bias * scale, own.key.bias, own.value.bias]),
    )
    if not hasattr(layer, "cross_attention"):
        norms = (layer.self_attention_norm, layer.feed_forward_norm)
        return PackedLayer(self_qkv, _linear(own.output), _linear(feed.inner), _linear(feed.outer), _norms(norms))
    cross = layer.cross_attention
    cross_scale = _query_scale(cross)
    return PackedLayer(
        self_qkv,
        _linear(own.output),
        _linear(feed.inner),
        _linear(feed.outer),
        _norms((layer.self_attention_norm, layer.cross_attention_norm, layer.feed_forward_norm)),
        cross_query=_linear(cross.query, cross_scale),
        cross_key_value=PackedLinear(
            torch.cat([cross.key.weight, cross.value.weight]), torch.cat([cross.key.bias, cross.value.bias])
        ),
        cross_out=_linear(cross.output),
        cross_query_plain=((cross.query.weight * cross_scale).detach(), (cross.query.bias * cross_scale).detach()),
        cross_out_plain=(cross.output.weight.detach(), cross.output.bias.detach()),
    )


def _norms(norms) -> tuple[tuple[Tensor, Tensor, float], ...]:
    return tuple((norm.weight.detach(), norm.bias.detach(), norm.eps) for norm in norms)


def _final_norm(norm: torch.nn.LayerNorm | None) -> tuple[Tensor, Tensor, float] | None:
    return None if norm is None else _norms([norm])[0]


@torch.no_grad()
def packed_weights(model: Transformer) -> PackedModel:
    """``model``'s weights packed for :func:`encode` and :class:`StepDecoder`, made once and again after its
    weights change."""
    versions = tuple(parameter._version for parameter in model.parameters())
    cached = _PACKED.get(model)
    if cached is None or cached[0] != versions:
        packed = PackedModel(
            encoder=tuple(_pack_layer(layer) for layer in model.encoder_layers),
            layers=tuple(_pack_layer(layer) for layer in model.decoder_layers),
            embedding=model.embedding.weight.detach(),
            projection=PackedLinear(model.embedding.weight, model.output_bias),
            positions=model.positional_encoding,
            embedding_scale=model.embedding_scale,
            activation=model.config.activation,
            norm_first=model.config.norm_first,
            encoder_norm=_final_norm(model.encoder_norm),
            decoder_norm=_final_norm(model.decoder_norm),
        )
        _PACKED[model] = cached = (versions, packed)
    return cached[1]


def _gates(modules: list[MultiHeadAttention]) -> list[Tensor | None]:
    return [None if module.head_gate is None else module.head_gate.view(-1, 1) for module in modules]


def _attend(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, gate: Tensor | None) -> Tensor:
    """Eq. 1 with the queries already scaled: query (N, H, Q, K), key/value (N, H, T, K) → (N, H, Q, K), each head
    times its gate (a head switched off: 0)."""
    attended = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=1.0)
    return attended if gate is None else attended * gate.to(attended.dtype).view(1, -1, 1, 1)


def _padding_mask(source: Tensor, pad_id: int, dtype: torch.dtype) -> Tensor | None:
    """(B, 1, 1, S), added to attention scores: -inf at the padding; None for a batch without padding."""
    padding = source == pad_id
    if not bool(padding.any()):
        return None
    mask = torch.zeros(source.size(0), 1, 1, source.size(1), dtype=dtype, device=source.device)
    return mask.masked_fill_(padding[:, None, None, :], float("-inf"))


def _attend_recording(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, gate: Tensor | None
) -> tuple[Tensor, Tensor]:
    """:func:`_attend` that also returns the probabilities softmax(Q Kᵀ) (N, H, Q, T) before the gates, as
    :meth:`MultiHeadAttention.forward` records them."""
    scores = query @ key.transpose(-2, -1)
    if mask is not None:
        scores = scores + mask
    probabilities = torch.softmax(scores, dim=-1)
    attended = probabilities @ value
    return (attended if gate is None else attended * gate.to(attended.dtype).view(1, -1, 1, 1)), probabilities


def _embed(packed: PackedModel, ids: Tensor) -> Tensor:
    """§3.4–3.5 without dropout: ids (B, T) → Embedding·√d_model + PE, flattened to (B·T, D)."""
    batch, length = ids.shape
    if length > packed.positions.size(0):
        raise ValueError(f"sequence of {length} tokens exceeds the model's {packed.positions.size(0)} positions")
    d_model = packed.embedding.size(1)
    x = F.embedding(ids, packed.embedding).mul_(packed.embedding_scale)
    return x.add_(packed.positions[:length].to(x.dtype)).view(batch * length, d_model)


def _encode(model: Transformer, source: Tensor, record: list[Tensor] | None) -> Tensor:
    packed = packed_weights(model)
    config = model.config
    batch, length = source.shape
    heads, width, d_model = config.num_heads, config.d_model // config.num_heads, config.d_model
    x = _embed(packed, source)
    mask = _padding_mask(source, config.pad_id, x.dtype)
    for layer, gate in zip(packed.encoder, _gates(model.attention_modules("encoder")), strict=True):
        h = packed.before(x, layer.norms[0])
        query, key, value = layer.self_qkv(h).view(batch, length, 3, heads, width).permute(2, 0, 3, 1, 4)
        if record is None:
            attended = _attend(query, key, value, mask, gate)
        else:
            attended, probabilities = _attend_recording(query, key, value, mask, gate)
            record.append(probabilities)
        attended = attended.transpose(1, 2).reshape(batch * length, d_model)
        x = packed.after(layer.self_out.plus(attended, x), layer.norms[0])
        x = packed.feed_forward(layer, x)
    return packed.final(x, packed.encoder_norm).view(batch, length, d_model)


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
    packed = packed_weights(model)
    config = model.config
    batch, length = target.shape
    heads, width, d_model = config.num_heads, config.d_model // config.num_heads, config.d_model
    x = _embed(packed, target)
    # Causal and padding mask of Transformer.target_mask, added to the scores: (B, 1, T, T).
    allowed = target_mask(target, config.pad_id)
    self_mask = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill_(~allowed, float("-inf"))
    cross_mask = _padding_mask(source, config.pad_id, x.dtype)
    flat_memory = memory.reshape(-1, d_model)
    gates = zip(_gates(model.attention_modules("decoder")), _gates(model.attention_modules("cross")), strict=True)
    own_weights, cross_weights = [], []
    for layer, (self_gate, cross_gate) in zip(packed.layers, gates, strict=True):
        h = packed.before(x, layer.norms[0])
        query, key, value = layer.self_qkv(h).view(batch, length, 3, heads, width).permute(2, 0, 3, 1, 4)
        attended, probabilities = _attend_recording(query, key, value, self_mask, self_gate)
        own_weights.append(probabilities)
        attended = attended.transpose(1, 2).reshape(batch * length, d_model)
        x = packed.after(layer.self_out.plus(attended, x), layer.norms[0])
        query = layer.cross_query(packed.before(x, layer.norms[1])).view(batch, length, heads, width).transpose(1, 2)
        key, value = layer.cross_key_value(flat_memory).view(batch, -1, 2, heads, width).permute(2, 0, 3, 1, 4)
        attended, probabilities = _attend_recording(query, key, value, cross_mask, cross_gate)
        cross_weights.append(probabilities)
        attended = attended.transpose(1, 2).reshape(batch * length, d_model)
        x = packed.after(layer.cross_out.plus(attended, x), layer.norms[1])
        x = packed.feed_forward(layer, x)
    return torch.stack(own_weights, dim=1), torch.stack(cross_weights, dim=1)


class StepDecoder:
    """Decodes one position at a time for ``beams`` hypotheses of each sentence of an encoded batch.

    ``memory`` (B, S, D) and ``source`` (B, S) are the batch's encoder output and ids, one row per sentence; rows of
    the step are hypotheses, sentence by sentence (``beams`` consecutive rows per live sentence).
    """

    def __init__(self, model: Transformer, memory: Tensor, source: Tensor, beams: int = 1) -> None:
        config = model.config
        self.packed = packed_weights(model)
        self.heads, self.head_dim = config.num_heads, config.d_model // config.num_heads
        self.d_model, self.beams = config.d_model, beams
        self.embedding_scale = self.packed.embedding_scale
        self.self_gates = _gates(model.attention_modules("decoder"))
        self.cross_gates = _gates(model.attention_modules("cross"))
        batch, length, _ = memory.shape
        flat = memory.reshape(batch * length, self.d_model)
        # Cross-attention keys and values of every layer, per sentence: (B, H, S, K) each.
        self.cross_keys, self.cross_values = [], []
        for layer in self.packed.layers:
            projected = layer.cross_key_value(flat)
            key, value = projected.view(batch, length, 2, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
            self.cross_keys.append(key.contiguous())
            self.cross_values.append(value.contiguous())
        self.cross_mask = _padding_mask(source, config.pad_id, flat.dtype)
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
        packed, heads, width, d_model = self.packed, self.heads, self.head_dim, self.d_model
        rows = tokens.size(0)
        sentences = rows // self.beams
        position = self.length
        if position >= packed.positions.size(0):
            raise ValueError(f"sequence exceeds the model's {packed.positions.size(0)} positions")
        x = F.embedding(tokens, packed.embedding).mul_(self.embedding_scale)
        x = x.add_(packed.positions[position].to(x.dtype))
        self._grow(rows, x)
        assert self.buffer is not None
        slot = self.buffer.select(4, position)  # (L, 2, A, H, K): where this step's keys and values go
        history = self.buffer.narrow(4, 0, position + 1)  # (L, 2, A, H, T, K)
        for index, layer in enumerate(packed.layers):
            qkv = layer.self_qkv(packed.before(x, layer.norms[0])).view(rows, 3, heads, width)
            slot[index].copy_(qkv[:, 1:].transpose(0, 1))
            keys, values = history[index]
            attended = _attend(qkv[:, 0].unsqueeze(2), keys, values, None, self.self_gates[index])
            x = packed.after(layer.self_out.plus(attended.view(rows, d_model), x), layer.norms[0])

            h = packed.before(x, layer.norms[1])
            if self.folded:
                x = packed.after(self._folded_cross(index, h, x, sentences), layer.norms[1])
            else:
                query = (
                    layer.cross_query(h).view(sentences, self.beams, heads, width).transpose(1, 2)
                )  # (B, H, beams, K)
                attended = _attend(
                    query, self.cross_keys[index], self.cross_values[index], self.cross_mask, self.cross_gates[index]
                )
                attended = attended.transpose(1, 2).reshape(rows, d_model)
                x = packed.after(layer.cross_out.plus(attended, x), layer.norms[1])

            x = packed.feed_forward(layer, x)
        self.length += 1
        return packed.final(x, packed.decoder_norm)

    def _folded_cross(self, index: int, h: Tensor, x: Tensor, sentences: int) -> Tensor:
        """Cross-attention of layer ``index`` on its input h (A, D) plus the residual x (A, D), on the folded
        weights → (A, D)."""
        grouped = x.view(sentences, self.beams, self.d_model)
        queries = h.view(sentences, self.beams, self.d_model)
        scores = torch.baddbmm(self.fold_bias[index], queries, self.fold_scores[index])  # (B, beams, H·S)
        probabilities = torch.softmax(scores.view(sentences, self.beams, self.heads, -1), dim=-1)
        gate = self.cross_gates[index]
        if gate is not None:
            probabilities = probabilities * gate.to(probabilities.dtype).view(1, 1, -1, 1)
        residual = grouped + self.packed.layers[index].cross_out_plain[1]
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
