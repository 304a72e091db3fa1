"""Which heads link two words of one translation: every head of every attention kind that can attend from one of
them to the other, ranked by the weight between them.

Weights are read at word level (:func:`~transformer.analysis.attention.merged_view`: summed over the key word's
pieces, averaged over the query word's), so that "its" → "Law" is one number whatever the tokenizer made of either
word. Output words are the words the translation writes, each at the decoder positions that write it
(``by_prediction``). Which attention can link a pair depends on where the words are:

- two source words: encoder self-attention, in either direction (the larger of the two is the link);
- a source word and an output word: encoder–decoder attention, from the output word to the source word;
- two output words: decoder self-attention, from the later word to the earlier one (the mask hides the other way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.analysis.attention import SPECIAL_PIECES, AttentionMaps, merged_view

SOURCE, OUTPUT = "source", "output"


@dataclass(frozen=True)
class Word:
    """A word of the sentence (``source``) or of the translation (``output``), by its place among the words."""

    side: str
    index: int


@dataclass(frozen=True)
class Link:
    """One head's attention from ``query`` to ``key`` (word level), 0-based layer and head."""

    kind: str
    layer: int
    head: int
    weight: float
    query: Word
    key: Word


def words(maps: AttentionMaps) -> dict[str, list[str]]:
    """The words of each side as :func:`linking_heads` counts them (special tokens included, as ``</s>``)."""
    merged = merged_view(maps, by_prediction=True)
    return {SOURCE: merged.source_tokens, OUTPUT: merged.predicted_tokens}


def ordinary(maps: AttentionMaps) -> list[Word]:
    """Every word of both sides that is no special token, source first: what a page offers to pick."""
    found = words(maps)
    return [
        Word(side, i) for side in (SOURCE, OUTPUT) for i, word in enumerate(found[side]) if word not in SPECIAL_PIECES
    ]


def linking_heads(maps: AttentionMaps, first: Word, second: Word) -> list[Link]:
    """Every head that can attend between ``first`` and ``second``, strongest first (see the module)."""
    merged = merged_view(maps, by_prediction=True)
    counts = {SOURCE: len(merged.source_tokens), OUTPUT: len(merged.predicted_tokens)}
    for word in (first, second):
        if word.side not in counts or not 0 <= word.index < counts[word.side]:
            raise ValueError(f"no {word.side} word {word.index}")
    if first == second:
        raise ValueError("pick two different words")
    sides = {first.side, second.side}
    if sides == {SOURCE}:
        forward = merged.encoder[..., first.index, second.index]
        backward = merged.encoder[..., second.index, first.index]
        return _ranked(
            "encoder",
            np.maximum(forward, backward),
            np.where(forward >= backward, 0, 1),
            ((first, second), (second, first)),
        )
    if sides == {SOURCE, OUTPUT}:
        output, source = (first, second) if first.side == OUTPUT else (second, first)
        weights = merged.cross[..., output.index, source.index]
        return _ranked("cross", weights, np.zeros(weights.shape, dtype=int), ((output, source),))
    later, earlier = (first, second) if first.index > second.index else (second, first)
    # Row i writes output word i; the key of output word j is the position that reads it, j + 1 (after <s>).
    weights = merged.decoder[..., later.index, earlier.index + 1]
    return _ranked("decoder", weights, np.zeros(weights.shape, dtype=int), ((later, earlier),))


def _ranked(kind: str, weights: np.ndarray, direction: np.ndarray, pairs) -> list[Link]:
    layers, heads = weights.shape
    found = [
        Link(kind, layer, head, float(weights[layer, head]), *pairs[int(direction[layer, head])])
        for layer in range(layers)
        for head in range(heads)
    ]
    return sorted(found, key=lambda link: (-link.weight, link.layer, link.head))
