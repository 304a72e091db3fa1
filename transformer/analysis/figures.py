"""The paper's attention figures (appendix Figures 3–5) redrawn on any checkpoint, with the numbers behind them.

All three figures show encoder self-attention of two newstest2013 sentences in layer 5 of 6. The paper does not say
whether its layer and head numbers count from 0 or 1, so :func:`paper_layer` and :func:`paper_heads` take that as an
argument. For each figure the head(s) of the loaded model that match it best are found automatically:

- Figure 3 (long-distance dependency): the heads whose largest non-self weight from "making" is on "more" or
  "difficult"; the best layer is the one with most such heads.
- Figure 4 (anaphora): the head with the largest weight from "its" to "Law" or "application", and the runner-up head
  of the same layer (the paper shows two heads).
- Figure 5 (sentence structure): two sharp heads of the layer whose full patterns differ most.

The figures page's "Show the best example" opens the step and layer that :func:`best_example` picks.

The figures themselves are drawn by :mod:`transformer.plots.paper`, whose command line writes them with
``metrics.json``, every number the figures page shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from transformer.analysis.attention import (
    encoder_attention,
    entropy_bits,
    merge_tokens,
    ordinary_positions,
    strongest_other_word,
    word_attention,
    word_groups,
    word_index,
    word_level,
)
from transformer.formats.checkpoint import LoadedCheckpoint

PAPER_LAYER = 5  # "layer 5 of 6", as printed
PAPER_ANAPHORA_HEADS = (5, 6)  # Figure 4, as printed


# ------------------------------------------------------------------------------------------------ the figures' numbers
def making_metrics(weights: np.ndarray, tokens: Sequence[str]) -> dict[str, object]:
    """Figure 3: per layer, how many heads put their largest non-self weight from "making" on "more" or
    "difficult" — the long-distance dependency completing "making … more difficult"."""
    making = word_index(tokens, "making")
    targets = {word_index(tokens, "more"), word_index(tokens, "difficult")}
    strongest = strongest_other_word(weights, tokens, making)  # [L, H]
    hits = np.isin(strongest, list(targets))
    per_layer = hits.sum(-1)
    words = merge_tokens(tokens, word_groups(tokens))
    return {
        "heads_on_more_difficult_per_layer": per_layer.tolist(),
        "best_layer_making": int(per_layer.argmax()),
        "making_heads_on_more_difficult": int(per_layer.max()),
        "strongest_word_from_making": [[words[i] for i in layer] for layer in strongest],
    }


def its_metrics(weights: np.ndarray, tokens: Sequence[str]) -> dict[str, object]:
    """Figure 4: weight [L, H] from "its" to "Law" and to "application", and the head that resolves it best."""
    its = word_index(tokens, "its")
    to_law = word_attention(weights, tokens, its, word_index(tokens, "Law"))
    to_application = word_attention(weights, tokens, its, word_index(tokens, "application"))
    best = np.unravel_index(np.argmax(np.maximum(to_law, to_application)), to_law.shape)
    return {
        "its_to_law_per_head": to_law.round(4).tolist(),
        "its_to_application_per_head": to_application.round(4).tolist(),
        "best_layer_its": int(best[0]),
        "best_head_its": int(best[1]),
        "its_to_law": float(to_law[best]),
        "its_to_application": float(to_application[best]),
        "its_to_law_max": float(to_law.max()),
        "its_to_application_max": float(to_application.max()),
    }


@dataclass(frozen=True)
class PaperFigure:
    number: int
    title: str
    sentence: str  # newstest2013 source line
    reference: str  # its German reference, the same line of newstest2013.de
    dev_line: int  # 1-based line in newstest2013
    pads: int  # <pad> tokens drawn after <EOS> in the paper
    caption: str  # the paper's caption


MAKING_SENTENCE = (
    "It is in this spirit that a majority of American governments have passed new laws since 2009 making the "
    "registration or voting process more difficult."
)
LAW_SENTENCE = (
    "The Law will never be perfect, but its application should be just - this is what we are missing, in my opinion."
)
LAW_REFERENCE = (
    "Das Gesetz wird niemals vollkommen sein, aber es muss richtig angewendet werden - und das ist das, was bei uns "
    "meines Erachtens fehlt."
)  # the sentence's newstest2013 reference (line 1053), for Figures 4 and 5
FIGURES = {
    3: PaperFigure(
        3,
        "Long-distance dependency: “making … more difficult”",
        MAKING_SENTENCE,
        "In diesem Sinne hat die Mehrheit der amerikanischen Regierungen seit 2009 neue Gesetze verkündet, die das "
        "Verfahren für die Registrierung oder den Urnengang erschweren.",
        8,
        6,
        "An example of the attention mechanism following long-distance dependencies in the encoder self-attention "
        "in layer 5 of 6. Many of the attention heads attend to a distant dependency of the verb ‘making’, "
        "completing the phrase ‘making…more difficult’. Attentions here shown only for the word ‘making’. Different "
        "colors represent different heads.",
    ),
    4: PaperFigure(
        4,
        "Anaphora resolution: “its” → “Law”, “application”",
        LAW_SENTENCE,
        LAW_REFERENCE,
        1053,
        1,
        "Two attention heads, also in layer 5 of 6, apparently involved in anaphora resolution. Top: Full "
        "attentions for head 5. Bottom: Isolated attentions from just the word ‘its’ for attention heads 5 and 6. "
        "Note that the attentions are very sharp for this word.",
    ),
    5: PaperFigure(
        5,
        "Sentence structure: two heads, two jobs",
        LAW_SENTENCE,
        LAW_REFERENCE,
        1053,
        1,
        "Many of the attention heads exhibit behaviour that seems related to the structure of the sentence. We give "
        "two such examples above, from two different heads from the encoder self-attention at layer 5 of 6. The "
        "heads clearly learned to perform different tasks.",
    ),
}


def paper_layer(num_layers: int, one_based: bool = True) -> int:
    """The 0-based index of the paper's "layer 5" under either reading, clipped to the model's layers."""
    return min(num_layers - 1, PAPER_LAYER - 1 if one_based else PAPER_LAYER)


def paper_heads(num_heads: int, one_based: bool = True) -> list[int]:
    """0-based indices of Figure 4's "heads 5 and 6" under either reading, clipped to the model's heads."""
    return [min(num_heads - 1, head - 1 if one_based else head) for head in PAPER_ANAPHORA_HEADS]


# ----------------------------------------------------------------------------------------------- one sentence
@dataclass
class SentenceAttention:
    """Encoder self-attention of one sentence: pieces (with </s> and the paper's <pad>s) and [L, H, S, S]."""

    tokens: list[str]
    weights: np.ndarray

    def view(self, words: bool = True, specials: bool = True) -> tuple[list[str], np.ndarray]:
        """Tokens and weights as drawn: pieces merged into words (see
        :func:`~transformer.analysis.attention.merge_matrix`) and/or </s> and <pad> left out (their rows and columns
        dropped)."""
        tokens, weights = word_level(self.weights, self.tokens) if words else (self.tokens, self.weights)
        if not specials:
            keep = ordinary_positions(tokens)
            tokens, weights = [tokens[i] for i in keep], weights[..., keep, :][..., keep]
        return list(tokens), weights


def sentence_attention(loaded: LoadedCheckpoint, figure: PaperFigure) -> SentenceAttention:
    tokens, weights = encoder_attention(loaded.model, loaded.tokenizer, figure.sentence, pads=figure.pads)
    return SentenceAttention(tokens, weights)


def label(tokens: Sequence[str]) -> list[str]:
    """The paper writes </s> as <EOS>."""
    return ["<EOS>" if token == "</s>" else token for token in tokens]


def query_position(tokens: Sequence[str], word: str) -> int | None:
    """Position of a word in a drawn token list (word view: the word itself; piece view: its first piece)."""
    for position, token in enumerate(tokens):
        if token.lstrip("▁").strip() == word:
            return position
    groups = word_groups(tokens)
    merged = merge_tokens(tokens, groups)
    for group, text in zip(groups, merged, strict=True):
        if text == word:
            return group[0]
    return None


# ------------------------------------------------------------------------------------------------ figure choices
def pattern_difference(first: np.ndarray, second: np.ndarray) -> float:
    """How differently two heads attend over the same queries [Q, S]: the mean total variation between their rows
    (0 = the same pattern, 1 = disjoint)."""
    return float(0.5 * np.abs(np.asarray(first) - np.asarray(second)).sum(-1).mean())


def structure_heads(layer_weights: np.ndarray, tokens: Sequence[str], candidates: int = 4) -> list[int]:
    """Figure 5's two heads in one layer [H, S, S]: the sharpest head (lowest mean entropy over real queries) and,
    among the next sharpest ``candidates``, the one whose pattern differs most from it (mean total variation)."""
    layer_weights = np.asarray(layer_weights, dtype=np.float64)
    real = np.array([token != "<pad>" for token in tokens])
    rows = layer_weights[:, real]  # [H, Q, S]
    entropy = entropy_bits(rows).mean(-1)
    order = [int(head) for head in np.argsort(entropy, kind="stable")]
    first = order[0]
    others = order[1 : 1 + candidates] or order[:1]
    distance = [pattern_difference(rows[head], rows[first]) for head in others]
    return [first, others[int(np.argmax(distance))]]


def anaphora_heads(its: dict[str, object], layer: int) -> list[int]:
    """Figure 4's two heads in one layer: the two with the largest weight from "its" to "Law" or "application"."""
    strength = np.maximum(np.array(its["its_to_law_per_head"]), np.array(its["its_to_application_per_head"]))[layer]
    return [int(head) for head in np.argsort(-strength, kind="stable")[:2]]


def making_heads(making: dict[str, object], layer: int) -> list[int]:
    """Figure 3's heads in one layer: those whose strongest non-self word from "making" is "more" or "difficult"."""
    strongest = making["strongest_word_from_making"][layer]
    return [head for head, word in enumerate(strongest) if word in ("more", "difficult")]


def best_example(candidates: Mapping[int, dict]) -> tuple[int, int, bool]:
    """The training step and layer where the figures show the paper's examples best, from the figure numbers of what
    the page draws at each step (step → :func:`figure_metrics` of that step's attention): the layer where Figure 3
    has the most heads whose strongest non-self word from "making" is "more" or "difficult"; among equals, the one
    whose sharpest "its" head (Figure 4) puts most weight on "Law" or "application", then the later step.

    Returns (step, layer, found); ``found`` is False when no layer of any step has such a Figure 3 head, so the
    choice rests on Figure 4 alone (the layer with the sharpest "its" head)."""
    ranked = []
    for step, metrics in candidates.items():
        making, its = metrics["figure_3"], metrics["figure_4"]
        counts = making.get("heads_on_more_difficult_per_layer") or []
        if "error" in its:
            sharpest = []
        else:
            sharpest = np.maximum(np.array(its["its_to_law_per_head"]), np.array(its["its_to_application_per_head"]))
            sharpest = sharpest.max(-1).tolist()
        for layer in range(len(metrics["figure_5"]["structure_heads_per_layer"])):
            count = counts[layer] if layer < len(counts) else 0
            weight = sharpest[layer] if layer < len(sharpest) else 0.0
            ranked.append((count, weight, step, -layer))  # equal on all: the lower layer
    if not ranked:
        raise ValueError("no figure numbers to choose from")
    count, _, step, layer = max(ranked)
    return step, -layer, count > 0


def figure_metrics(attention: dict[int, SentenceAttention]) -> dict[str, object]:
    """Every number of the three figures, from the attention of the two sentences (pieces with specials)."""
    metrics: dict[str, object] = {}
    making_attention, law_attention = attention[3], attention[4]
    try:
        making = making_metrics(making_attention.weights, making_attention.tokens)
    except ValueError as error:  # a tokenizer that splits the sentence differently
        making = {"error": str(error)}
    try:
        its = its_metrics(law_attention.weights, law_attention.tokens)
    except ValueError as error:
        its = {"error": str(error)}
    metrics.update(
        making_heads_on_more_difficult=making.get("making_heads_on_more_difficult"),
        best_layer_making=making.get("best_layer_making"),
        its_to_law=its.get("its_to_law"),
        its_to_application=its.get("its_to_application"),
        best_layer_its=its.get("best_layer_its"),
        best_head_its=its.get("best_head_its"),
        figure_3=making,
        figure_4=its,
    )
    num_layers = law_attention.weights.shape[0]
    metrics["figure_5"] = {
        "structure_heads_per_layer": [
            structure_heads(law_attention.weights[layer], law_attention.tokens) for layer in range(num_layers)
        ]
    }
    return metrics
