"""The fast engine's weights: every weight of a model packed once in oneDNN's own layout (ReLU and the residual add
fused into the product; transposed for ``addmm`` where oneDNN is missing), Q, K and V side by side, the query weights
scaled by 1/√d_k (Eq. 1), made again when the model's weights change and following the heads switched off."""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer.paper.model import ACTIVATION_FUNCTIONS, MultiHeadAttention, Transformer

Norm = tuple[Tensor, Tensor, float]  # a LayerNorm's weight, bias and eps


SubLayer = Callable[[Tensor, Tensor], Tensor]  # (h, x) → x + Sublayer(h), both (N, D)


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
    norms: tuple[Norm, ...]  # self[, cross], feed-forward
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
    positions: Tensor  # (P, D), the encoder's
    decoder_positions: Tensor  # (P, D): the same table but in a model with learned positions per stack
    embedding_scale: float  # √d_model (§3.4)
    activation: str  # the FFN's non-linearity
    norm_first: bool  # pre-norm sub-layers, and a final LayerNorm per stack
    encoder_norm: Norm | None = None  # pre-norm only
    decoder_norm: Norm | None = None
    encoder_embedding_norm: Norm | None = None  # the LayerNorm of a stack's embedded input (BART, mBART)
    decoder_embedding_norm: Norm | None = None

    def residual(self, x: Tensor, norm: Norm, sublayer: SubLayer) -> Tensor:
        """§3.1 as :func:`transformer.paper.model.residual` (without dropout): LayerNorm(x + Sublayer(x)) in a post-norm
        model, x + Sublayer(LayerNorm(x)) in a pre-norm one. ``sublayer(h, x)`` returns x + Sublayer(h), the
        residual added by its last product (:meth:`PackedLinear.plus`). x (N, D) → (N, D)."""
        if self.norm_first:
            return sublayer(_layer_norm(x, norm), x)
        return _layer_norm(sublayer(x, x), norm)

    def feed_forward(self, layer: PackedLayer, x: Tensor) -> Tensor:
        """The FFN sub-layer (Eq. 2) with its residual and LayerNorm: x (N, D) → (N, D)."""
        return self.residual(x, layer.norms[-1], functools.partial(self._feed_forward_plus, layer))

    def _feed_forward_plus(self, layer: PackedLayer, h: Tensor, x: Tensor) -> Tensor:
        """x + FFN(h), each (N, D)."""
        if self.activation == "relu":
            inner = layer.inner(h, relu=True)  # (N, d_ff)
        else:
            inner = ACTIVATION_FUNCTIONS[self.activation](layer.inner(h))
        return layer.outer.plus(inner, x)

    def final(self, x: Tensor, norm: Norm | None) -> Tensor:
        """A pre-norm stack's closing LayerNorm (``norm`` None: a post-norm stack, whose layers end with one)."""
        return x if norm is None else _layer_norm(x, norm)


def _layer_norm(x: Tensor, norm: Norm) -> Tensor:
    return F.layer_norm(x, (x.size(-1),), *norm)


_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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


def _norms(norms) -> tuple[Norm, ...]:
    return tuple((norm.weight.detach(), norm.bias.detach(), norm.eps) for norm in norms)


def _final_norm(norm: torch.nn.LayerNorm | None) -> Norm | None:
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
            positions=model.positions("encoder").detach(),
            decoder_positions=model.positions("decoder").detach(),
            embedding_scale=model.embedding_scale,
            activation=model.config.activation,
            norm_first=model.config.norm_first,
            encoder_norm=_final_norm(model.encoder_norm),
            decoder_norm=_final_norm(model.decoder_norm),
            encoder_embedding_norm=_final_norm(model.encoder_embedding_norm),
            decoder_embedding_norm=_final_norm(model.decoder_embedding_norm),
        )
        _PACKED[model] = cached = (versions, packed)
    return cached[1]
