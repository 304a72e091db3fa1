"""The decoder's key/value cache for incremental decoding (one token at a time): what greedy and beam search keep of
every layer's keys and values between steps."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


class DecoderCache:
    """Keys and values of every decoder layer for incremental (one token at a time) decoding.

    Self-attention keys and values of all layers live in one buffer shaped (B, L, 2, H, capacity, K) that grows by
    doubling, so a step writes the new position in place instead of concatenating, and beam search reorders every
    layer's history with one ``index_select``. Cross-attention keys and values are computed once per sentence.
    """

    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.length = 0  # target positions already decoded
        self.buffer: Tensor | None = None
        self.layers = [LayerCache(SelfAttentionCache(self, index), {}) for index in range(num_layers)]

    def extend(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Write layer ``layer``'s new keys/values (B, H, T_new, K) after the cached ones; return all of them."""
        start, end = self.length, self.length + key.size(2)
        if self.buffer is None or end > self.buffer.size(4):
            self.grow(key, end)
        assert self.buffer is not None
        self.buffer[:, layer, 0, :, start:end] = key
        self.buffer[:, layer, 1, :, start:end] = value
        return self.buffer[:, layer, 0, :, :end], self.buffer[:, layer, 1, :, :end]

    def grow(self, like: Tensor, needed: int) -> None:
        batch, heads, _, width = like.shape
        capacity = max(needed, 16 if self.buffer is None else 2 * self.buffer.size(4))
        buffer = like.new_zeros(batch, self.num_layers, 2, heads, capacity, width)
        if self.buffer is not None:
            buffer[..., : self.length, :] = self.buffer[..., : self.length, :]
        self.buffer = buffer

    def advance(self, positions: int) -> None:
        """Called once every layer has written ``positions`` new positions."""
        self.length += positions

    def reorder(self, indices: Tensor, sentences_left: bool = False) -> None:
        """Keep rows ``indices`` of the batch (beam search). Cross-attention keys are the same for all of a
        sentence's beams and stay as they are, unless sentences left the batch (``sentences_left``: ``indices``
        then lists only the rows of the sentences that remain, each within its own sentence's block)."""
        if self.buffer is not None:
            self.buffer = self.buffer.index_select(0, indices)
        if sentences_left:
            for layer in self.layers:
                for name, tensor in layer.cross_attention.items():
                    layer.cross_attention[name] = tensor.index_select(0, indices)


@dataclass
class SelfAttentionCache:
    """One decoder layer's view of :class:`DecoderCache`."""

    owner: DecoderCache
    layer: int

    def extend(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        return self.owner.extend(self.layer, key, value)


@dataclass
class LayerCache:
    self_attention: SelfAttentionCache
    cross_attention: dict[str, Tensor]
