"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), §3.

Every module cites the part of the paper it implements. Attention probabilities of every head can be requested from
each attention kind (encoder self-attention, decoder masked self-attention, encoder–decoder cross-attention); when
they are not requested, attention runs through PyTorch's fused ``scaled_dot_product_attention``.

Shapes: B batch, S source length, T target length, D d_model, H heads, K head width (d_k = d_v), L layers.
Masks are boolean and broadcastable to (B, H, T_query, T_key); True means "may attend".
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.paper.config import ATTENTION_KINDS, ModelConfig
from transformer.paper.dropout import Dropout
from transformer.paper.loss import label_smoothed_losses, projected_label_smoothed_loss
from transformer.paper.positional import positional_table

HeadMask = Mapping[str, "Tensor | list"]  # attention kind → [layers, heads] factors (1 keep, 0 off)


ACTIVATION_FUNCTIONS = {"relu": torch.relu, "silu": F.silu, "gelu": F.gelu}


def attention_probabilities(query: Tensor, key: Tensor, mask: Tensor | None, scale: float | None = None) -> Tensor:
    """softmax(Q Kᵀ / √d_k) of §3.2.1, Eq. 1, with masked positions set to -inf before the softmax.

    query (..., Tq, K), key (..., Tk, K) → (..., Tq, Tk), computed in float32 whatever the input precision.
    ``scale`` replaces the factor 1/√d_k (1.0: the unscaled dot products the paper argues against).
    """
    scores = query.float() @ key.float().transpose(-2, -1)  # (..., Tq, Tk)
    scores = scores / math.sqrt(query.size(-1)) if scale is None else scores * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def target_mask(target: Tensor, pad_id: int) -> Tensor:
    """(B, T) → (B, 1, T, T): causal, and no query attends to padding after the first position (the start token)."""
    length = target.size(1)
    causal = torch.ones(length, length, dtype=torch.bool, device=target.device).tril()
    keep = target != pad_id
    keep[:, 0] = True
    return causal[None, None] & keep[:, None, None, :]


class MultiHeadAttention(nn.Module):
    """§3.2.2: MultiHead(Q, K, V) = Concat(head_1, …, head_h) Wᴼ with head_i = Attention(Q W_iQ, K W_iK, V W_iV).

    The h per-head projections are stored side by side in one (D, D) matrix each for Q, K and V.
    """

    # One matrix product for self-attention's Q, K, V and cross-attention's K, V (False: one each, as in the paper).
    fused_projections = True

    def __init__(self, d_model: int, num_heads: int, attention_dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.attention_dropout = attention_dropout
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)
        # Per-head factors on the heads' outputs before Wᴼ (None: all 1); 0 switches a head off (Michel et al.,
        # 2019). Set through Transformer.head_mask rather than directly.
        self.head_gate: Tensor | None = None
        # False: softmax(Q Kᵀ) without the 1/√d_k of Eq. 1, the ablation §3.2.1 argues against (large dot products
        # push the softmax into regions of tiny gradients).
        self.scaled = True

    def split_heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, K)

    def project_key_value(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if not self.fused_projections:
            return self.split_heads(self.key(x)), self.split_heads(self.value(x))
        weight = torch.cat([self.key.weight, self.value.weight])
        key, value = F.linear(x, weight, torch.cat([self.key.bias, self.value.bias])).chunk(2, dim=-1)
        return self.split_heads(key), self.split_heads(value)

    def forward(
        self,
        query: Tensor,
        key_value: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """query (B, Tq, D); key_value (B, Tk, D), or None for self-attention. Returns the output (B, Tq, D) and, if
        ``need_weights``, the probabilities (B, H, Tq, Tk). (The search decodes one position at a time with
        :mod:`transformer.search.fast`, which computes the same.)
        """
        if key_value is None and self.fused_projections:
            # Self-attention: Q, K and V in one matrix product of the three weights side by side (same result).
            weight = torch.cat([self.query.weight, self.key.weight, self.value.weight])
            bias = torch.cat([self.query.bias, self.key.bias, self.value.bias])
            q, k, v = map(self.split_heads, F.linear(query, weight, bias).chunk(3, dim=-1))
        else:
            q = self.split_heads(self.query(query))  # (B, H, Tq, K)
            k, v = self.project_key_value(query if key_value is None else key_value)  # (B, H, Tk, K)

        dropout_p = self.attention_dropout if self.training else 0.0
        scale = None if self.scaled else 1.0  # None: 1/√d_k
        weights = None
        if need_weights:
            weights = attention_probabilities(q, k, mask, scale)  # (B, H, Tq, Tk)
            attended = F.dropout(weights, dropout_p, self.training).to(v.dtype) @ v  # (B, H, Tq, K)
        else:
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
        if self.head_gate is not None:
            attended = attended * self.head_gate.to(attended.dtype).view(1, -1, 1, 1)
        batch, _, length, _ = attended.shape
        attended = attended.transpose(1, 2).reshape(batch, length, self.num_heads * self.head_dim)  # (B, Tq, D)
        return self.output(attended), weights


class PositionwiseFeedForward(nn.Module):
    """§3.3, Eq. 2: FFN(x) = max(0, x W1 + b1) W2 + b2 (another non-linearity than ReLU where the config says)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu") -> None:
        super().__init__()
        self.inner = nn.Linear(d_model, d_ff)
        self.outer = nn.Linear(d_ff, d_model)
        self.activation = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.activation(self.inner(x)))


def residual(x: Tensor, sublayer, norm: nn.LayerNorm, dropout: nn.Module, norm_first: bool) -> Tensor:
    """§3.1: LayerNorm(x + Sublayer(x)) (post-norm, the paper's), or x + Sublayer(LayerNorm(x)) (pre-norm, as in
    M2M100/NLLB), with dropout on the sub-layer's output (§5.4)."""
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def _attention_sublayer(config: ModelConfig) -> tuple[MultiHeadAttention, nn.LayerNorm]:
    """One attention sub-layer's attention and its LayerNorm."""
    return MultiHeadAttention(config.d_model, config.num_heads, config.attention_dropout), nn.LayerNorm(config.d_model)


def _recording(attention: MultiHeadAttention, weights: list, *args, **kwargs) -> Callable[[Tensor], Tensor]:
    """``attention`` as a sub-layer h → attention(h, *args, **kwargs) that appends the weights it finds (or None)
    to ``weights``."""

    def attend(h: Tensor) -> Tensor:
        attended, found = attention(h, *args, **kwargs)
        weights.append(found)
        return attended

    return attend


class _Layer(nn.Module):
    """What a layer of either stack holds: self-attention, with ``cross`` the encoder–decoder attention, then the
    FFN, each with its LayerNorm, and the dropout of their residual sub-layers (:func:`residual`)."""

    def __init__(self, config: ModelConfig, cross: bool) -> None:
        super().__init__()
        self.norm_first = config.norm_first
        self.self_attention, self.self_attention_norm = _attention_sublayer(config)
        if cross:
            self.cross_attention, self.cross_attention_norm = _attention_sublayer(config)
        self.feed_forward = PositionwiseFeedForward(config.d_model, config.d_ff, config.activation)
        self.feed_forward_norm = nn.LayerNorm(config.d_model)
        self.dropout = Dropout(config.dropout)

    def _residual(self, x: Tensor, sublayer, norm: nn.LayerNorm) -> Tensor:
        return residual(x, sublayer, norm, self.dropout, self.norm_first)


class EncoderLayer(_Layer):
    """§3.1: self-attention then FFN, each as LayerNorm(x + Dropout(Sublayer(x))) (post-norm, §5.4 dropout)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, cross=False)

    def forward(self, x: Tensor, mask: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        weights = []
        attend = _recording(self.self_attention, weights, mask=mask, need_weights=need_weights)
        x = self._residual(x, attend, self.self_attention_norm)
        x = self._residual(x, self.feed_forward, self.feed_forward_norm)
        return x, weights[0]


class DecoderLayer(_Layer):
    """§3.1: masked self-attention, encoder–decoder attention, FFN; each sub-layer post-norm with residual."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, cross=True)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        memory_mask: Tensor,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        weights = []
        attend_self = _recording(self.self_attention, weights, mask=self_mask, need_weights=need_weights)
        attend_memory = _recording(self.cross_attention, weights, memory, mask=memory_mask, need_weights=need_weights)
        x = self._residual(x, attend_self, self.self_attention_norm)
        x = self._residual(x, attend_memory, self.cross_attention_norm)
        x = self._residual(x, self.feed_forward, self.feed_forward_norm)
        return x, weights[0], weights[1]


@dataclass
class Seq2SeqOutput:
    """Logits (B, T, V) and, when requested, attention probabilities shaped (B, L, H, T_query, T_key); given the
    target outputs, the summed training loss and NLL instead of logits."""

    logits: Tensor | None
    encoder_attention: Tensor | None = None
    decoder_attention: Tensor | None = None
    cross_attention: Tensor | None = None
    loss: Tensor | None = None
    nll: Tensor | None = None


class Transformer(nn.Module):
    """The encoder–decoder Transformer with one embedding matrix shared by source, target and output (§3.4)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_id)
        if config.positional == "learned":  # a table of weights per stack, row p for position p (BART, mBART)
            self.encoder_positions = nn.Parameter(torch.zeros(config.max_positions, config.d_model))
            self.decoder_positions = nn.Parameter(torch.zeros(config.max_positions, config.d_model))
        else:  # §3.5's sinusoids, one table for both stacks
            self.register_buffer("positional_encoding", positional_table(config), persistent=False)
        # A LayerNorm of each stack's embedded input (BART's layernorm_embedding), where the config asks for one.
        self.encoder_embedding_norm = nn.LayerNorm(config.d_model) if config.embedding_norm else None
        self.decoder_embedding_norm = nn.LayerNorm(config.d_model) if config.embedding_norm else None
        self.embedding_dropout = Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.decoder_layers))
        # Pre-norm stacks end with a LayerNorm of their own (the paper's post-norm layers already end with one).
        self.encoder_norm = nn.LayerNorm(config.d_model) if config.norm_first else None
        self.decoder_norm = nn.LayerNorm(config.d_model) if config.norm_first else None
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size)) if config.output_bias else None
        self.reset_parameters()

    def reset_parameters(self, branch_gain: float = 1.0) -> None:
        """Xavier-uniform linear layers (zero biases) and normal embeddings.

        ``branch_gain`` < 1 shrinks the initial weights of the projections that make each sub-layer's contribution
        to the residual stream: the attention value and output projections and both feed-forward layers (as
        DeepNet's β, Wang et al. 2022, without its change to the residual connection). Each branch then starts at
        about ``branch_gain``² of its size. With gain 1, post-norm layers add a near-uniform attention average of
        comparable size at every layer, and the encoder's positions become nearly the same vector by the top
        layers already at initialisation (rank collapse); the trainer's ``--branch-init-gain`` sets it.
        """
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        if branch_gain != 1.0:
            with torch.no_grad():
                for module in self.modules():
                    if isinstance(module, MultiHeadAttention):
                        module.value.weight.mul_(branch_gain)
                        module.output.weight.mul_(branch_gain)
                    elif isinstance(module, PositionwiseFeedForward):
                        module.inner.weight.mul_(branch_gain)
                        module.outer.weight.mul_(branch_gain)
        # With the √d_model scale (§3.4) an embedding std of d_model^-0.5 gives unit-variance inputs, and the same
        # matrix used as the output projection starts with logits of unit scale.
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.config.d_model**-0.5)
        if self.config.positional == "learned":
            for table in (self.encoder_positions, self.decoder_positions):
                nn.init.normal_(table, mean=0.0, std=self.config.d_model**-0.5)
        with torch.no_grad():
            self.embedding.weight[self.config.pad_id].zero_()

    def embed(self, ids: Tensor, stack: str = "encoder") -> Tensor:
        """§3.4–3.5: Embedding(ids)·√d_model + PE, then dropout (§5.4). ids (B, T) → (B, T, D), as the input of the
        ``stack`` ("encoder" or "decoder")."""
        return self.embedded(self.embedding(ids) * self.embedding_scale, stack)

    def embedded(self, tokens: Tensor, stack: str) -> Tensor:
        """The input of ``stack`` from its token embeddings (B, T, D), already scaled: + PE, the stack's embedding
        LayerNorm where the model has one, and dropout. (Zero ``tokens``: what the positions alone give.)"""
        length = tokens.size(1)
        if length > self.config.max_positions:
            raise ValueError(f"sequence of {length} tokens exceeds the model's {self.config.max_positions} positions")
        x = tokens + self.positions(stack)[:length].to(tokens.dtype)
        norm = self.embedding_norm(stack)
        return self.embedding_dropout(x if norm is None else norm(x))

    def positions(self, stack: str) -> Tensor:
        """The positional table (max_positions, D) that ``stack`` ("encoder" or "decoder") adds to its embeddings:
        §3.5's sinusoids, the same for both, or a model's learned table of that stack."""
        if stack not in ("encoder", "decoder"):
            raise ValueError(f"unknown stack {stack!r}; choose encoder or decoder")
        if self.config.positional == "learned":
            return self.encoder_positions if stack == "encoder" else self.decoder_positions
        return self.positional_encoding

    def embedding_norm(self, stack: str) -> nn.LayerNorm | None:
        """The LayerNorm of ``stack``'s embedded input, or None (the paper has none)."""
        return self.encoder_embedding_norm if stack == "encoder" else self.decoder_embedding_norm

    @property
    def embedding_scale(self) -> float:
        return math.sqrt(self.config.d_model) if self.config.scale_embedding else 1.0

    def source_mask(self, source: Tensor) -> Tensor:
        """(B, S) → (B, 1, 1, S): no query attends to source padding."""
        return (source != self.config.pad_id)[:, None, None, :]

    def target_mask(self, target: Tensor) -> Tensor:
        """(B, T) → (B, 1, T, T): position i attends to positions ≤ i that are not padding (§3.2.3); the first
        position is the start token, whatever its id (Marian starts from its padding piece)."""
        return target_mask(target, self.config.pad_id)

    def encode(
        self, source: Tensor, need_weights: bool = False, embedded: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """source (B, S) → memory (B, S, D) and, if requested, self-attention (B, L, H, S, S). ``embedded``: the
        inputs as :meth:`embed` would make them, given instead (gradient attributions vary them)."""
        mask = self.source_mask(source)
        x = self.embed(source) if embedded is None else embedded
        weights = []
        for layer in self.encoder_layers:
            x, layer_weights = layer(x, mask, need_weights)
            weights.append(layer_weights)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, torch.stack(weights, dim=1) if need_weights else None

    def decode(
        self,
        target: Tensor,
        memory: Tensor,
        source_mask: Tensor,
        need_weights: bool = False,
        embedded: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Decoder stack over the (right-shifted) target (B, T) → hidden states (B, T, D) and, if requested, the
        decoder self-attention (B, L, H, T, T) and cross-attention (B, L, H, T, S). ``embedded``: as for
        :meth:`encode`."""
        self_mask = self.target_mask(target)
        x = self.embed(target, "decoder") if embedded is None else embedded
        self_weights, cross_weights = [], []
        for layer in self.decoder_layers:
            x, layer_self, layer_cross = layer(x, memory, self_mask, source_mask, need_weights)
            self_weights.append(layer_self)
            cross_weights.append(layer_cross)
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        if not need_weights:
            return x, None, None
        return x, torch.stack(self_weights, dim=1), torch.stack(cross_weights, dim=1)

    def project(self, hidden: Tensor) -> Tensor:
        """Pre-softmax linear transformation sharing the embedding matrix (§3.4). (…, D) → (…, V)."""
        return F.linear(hidden, self.embedding.weight, self.output_bias)

    def forward(
        self,
        source: Tensor,
        target_input: Tensor,
        need_weights: bool = False,
        head_mask: HeadMask | None = None,
        target_output: Tensor | None = None,
        label_smoothing: float = 0.0,
    ) -> Seq2SeqOutput:
        """Teacher-forced pass: source (B, S), right-shifted target (B, T) → logits (B, T, V) and attention.

        ``head_mask``: heads switched off for this pass (see :meth:`head_mask`). ``target_output`` (B, T), the
        expected next tokens: no logits, but the loss summed over its non-padding positions, with label smoothing,
        and the summed NLL (:func:`projected_label_smoothed_loss`; padding positions are never projected)."""
        with self.head_mask(head_mask):
            memory, encoder_attention = self.encode(source, need_weights)
            hidden, decoder_attention, cross_attention = self.decode(
                target_input, memory, self.source_mask(source), need_weights
            )
            if target_output is not None:
                keep = target_output != self.config.pad_id
                if self.output_bias is None:
                    loss, nll = projected_label_smoothed_loss(
                        hidden[keep], self.embedding.weight, target_output[keep], label_smoothing
                    )
                else:
                    losses = label_smoothed_losses(self.project(hidden[keep]), target_output[keep], label_smoothing)
                    loss, nll = losses[0].sum(), losses[1].sum()
                return Seq2SeqOutput(None, encoder_attention, decoder_attention, cross_attention, loss, nll)
            logits = self.project(hidden)
        return Seq2SeqOutput(logits, encoder_attention, decoder_attention, cross_attention)

    def attention_modules(self, kind: str) -> list[MultiHeadAttention]:
        """The attention modules of one kind ("encoder", "decoder" or "cross"), by layer."""
        if kind == "encoder":
            return [layer.self_attention for layer in self.encoder_layers]
        if kind == "decoder":
            return [layer.self_attention for layer in self.decoder_layers]
        if kind == "cross":
            return [layer.cross_attention for layer in self.decoder_layers]
        raise ValueError(f"unknown attention kind {kind!r}; choose encoder, decoder or cross")

    @contextlib.contextmanager
    def head_mask(self, mask: HeadMask | None) -> Iterator[None]:
        """Within the block, every pass (teacher-forced, greedy or beam search) runs with the heads of ``mask``
        switched off: ``mask`` maps an attention kind to a [layers, heads] tensor of factors (1 keeps a head, 0
        zeroes its output before Wᴼ, as in Michel et al., 2019); kinds it leaves out keep every head. None changes
        nothing. The previous masks are restored on leaving."""
        if mask is None:
            yield
            return
        saved = {kind: [module.head_gate for module in self.attention_modules(kind)] for kind in ATTENTION_KINDS}
        try:
            for kind, factors in mask.items():
                modules = self.attention_modules(kind)
                factors = torch.as_tensor(factors, dtype=torch.float32)
                if factors.shape != (len(modules), self.config.num_heads):
                    expected = (len(modules), self.config.num_heads)
                    raise ValueError(f"{kind} head mask of shape {tuple(factors.shape)}; expected {expected}")
                device = next(self.parameters()).device
                for module, row in zip(modules, factors, strict=True):
                    module.head_gate = row.to(device)
            yield
        finally:
            for kind, gates in saved.items():
                for module, gate in zip(self.attention_modules(kind), gates, strict=True):
                    module.head_gate = gate

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
