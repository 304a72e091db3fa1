"""Side by side: the same view of two translations (two checkpoints on one sentence, or two sentences on one
checkpoint), and the difference of their attention where the two matrices have the same shape."""

from __future__ import annotations

from transformer.analysis.attention import AttentionMaps


def difference(first: AttentionMaps, second: AttentionMaps, kind: str, layer: int | None, head: int | None):
    """``first`` minus ``second`` for one kind, layer and head (None: the average, as :meth:`AttentionMaps.matrix`),
    or None when the two matrices differ in shape (other tokens, or outputs of other lengths)."""
    ours, theirs = first.matrix(kind, layer, head), second.matrix(kind, layer, head)
    return ours - theirs if ours.shape == theirs.shape else None


def same_tokens(first: AttentionMaps, second: AttentionMaps, kind: str) -> bool:
    """Whether both matrices of ``kind`` have the same query and key tokens (so cells compare token for token)."""
    return first.tokens(kind) == second.tokens(kind)
