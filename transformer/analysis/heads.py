"""Find attention heads by what they do: one registry of head scores, and what they count over a sample (the tables
themselves: :mod:`transformer.analysis.score_tables`).

Every score is one :class:`HeadScore` in :data:`SCORES`: its key, the name people see, the attention kinds it is
measured on (encoder self-attention, decoder self-attention, cross-attention), what it measures, whether its
notable heads are the lowest, whether it is a share in [0, 1], and the function that computes it. Adding a score is
adding one entry (and, for a new kind of measurement, its function); the Head discovery page, the paper-figures CLI
and the stored measurements list whatever the registry holds.

Two kinds of function:

- **per query** (``per_query=True``): ``function(rows)`` maps one sentence's self-attention (:class:`Rows`) to a
  value per head and query position [L, H, S]; :func:`head_statistics` averages it over the queries that are not
  padding, and the tables average that over the sample's sentences. They are measured on the encoder's
  self-attention over the source sentences and on the decoder's masked self-attention over the model's greedy
  translations of them (teacher-forced: ``<s>`` and the output; the ``<s>`` query, which can only see itself,
  is one of the queries). A score that cannot vary under the decoder's mask (the weight on the next token, always
  0) is measured on the encoder only.
- **per sample**: ``function(loaded, sample)`` returns {key: :class:`Counts`}, item by item, for its own and its
  siblings' keys (one pass serves them all; the :class:`Sample` decodes its sentences once for every score that
  needs the translations): the anaphora scores over the shipped pronoun → antecedent sentences
  (``resources/anaphora.tsv``; word level: summed over the antecedent's pieces, averaged over the pronoun's), and the
  cross-attention alignment scores over the model's greedy translations of the sample. ``alignment_dictionary``
  asks, for each output word with a translation partner in its source sentence according to a bilingual dictionary,
  whether the source word the head attends to most (word level, when that word is predicted) is one of those
  partners (:mod:`transformer.analysis.alignment`, with the dictionary and how it is built).

Every score over two sentences or more comes with its 95% bootstrap interval over them (whole sentences resampled,
each with all its queries, words or arcs), and with the heads the best one is not clearly ahead of: a table of
numbers to two decimals over 50 sentences says less than it seems, and the page says how much less.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from transformer.analysis.alignment import load_dictionary, sentence_alignment_hits
from transformer.analysis.attention import (
    PUNCTUATION,
    AttentionMaps,
    attention_for,
    encoder_attention,
    entropy_bits,
    load_anaphora_examples,
    strongest_other_word,
    word_attention,
    word_index,
)
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.data import DEV_PREFIX
from transformer.search.decode import GREEDY, translate_ids


def dev_sample(count: int, language: str = "en") -> tuple[str, list[str]]:
    """The first ``count`` sentences of newstest2013 in ``language`` (a model's source language), or the shipped
    (English) pronoun sentences without the data."""
    path = Path(f"{DEV_PREFIX}.{language}")
    if path.exists():
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return f"newstest2013 (first {min(count, len(lines))} sentences)", lines[:count]
    sentences = [example.sentence for example in load_anaphora_examples()][:count]
    return f"the shipped pronoun sentences ({len(sentences)}; newstest2013 not found at {path})", sentences


# ------------------------------------------------------------------------------------------------ per-query scores
@dataclass(frozen=True)
class Rows:
    """One sentence's self-attention [L, H, S, S] and what the per-query scores read from its tokens."""

    weights: np.ndarray
    distance: np.ndarray  # [S, S]: |query − key| in positions
    delimiter: np.ndarray  # [S]: keys that are <s>, </s> or punctuation
    far: int  # positions beyond which a key counts as far

    @classmethod
    def of(cls, weights: np.ndarray, tokens: Sequence[str], far: int = 5) -> Rows:
        weights = np.asarray(weights, dtype=np.float64)
        length = weights.shape[-1]
        if len(tokens) != length or weights.shape[-2] != length:
            raise ValueError(f"self-attention of shape {weights.shape} does not match {len(tokens)} tokens")
        positions = np.arange(length)
        delimiter = [
            token in ("<s>", "</s>") or (token != "▁" and token.lstrip("▁") in PUNCTUATION) for token in tokens
        ]
        return cls(weights, np.abs(positions[:, None] - positions[None, :]), np.array(delimiter), far)

    def diagonal(self, offset: int) -> np.ndarray:
        """Weight on the key ``offset`` positions after each query [L, H, S] (0 where there is none)."""
        diagonal = np.diagonal(self.weights, offset=offset, axis1=-2, axis2=-1)
        missing = np.zeros((*self.weights.shape[:-2], abs(offset)))
        return np.concatenate([diagonal, missing] if offset > 0 else [missing, diagonal], axis=-1)


def head_statistics(weights: np.ndarray, tokens: Sequence[str], far: int = 5) -> dict[str, np.ndarray]:
    """The per-query scores of :data:`SCORES` for one sentence's self-attention [L, H, S, S], each averaged over the
    query positions that are not padding: {key: [L, H]}."""
    rows = Rows.of(weights, tokens, far)
    queries = np.array([token != "<pad>" for token in tokens])
    return {score.key: score.function(rows)[..., queries].mean(-1) for score in SCORES.values() if score.per_query}


Attention = tuple[list[str], np.ndarray]  # one sentence's pieces and self-attention over them [L, H, S, S]


def encoder_attentions(loaded: LoadedCheckpoint, sentences: Sequence[str]) -> list[Attention]:
    return [encoder_attention(loaded.model, loaded.tokenizer, sentence) for sentence in sentences]


@dataclass(frozen=True)
class Counts:
    """One score item by item (sentence by sentence): ``hits`` [items, L, H] over ``totals`` [items]. The score is
    the pooled sum(hits) / sum(totals) (a mean over items when every total is 1), and its interval resamples the
    items (:func:`transformer.analysis.intervals.candidates`)."""

    hits: np.ndarray
    totals: np.ndarray

    @classmethod
    def means(cls, values: Sequence[np.ndarray], shape: tuple[int, ...]) -> Counts:
        """Per-item values [L, H], each item weighing one."""
        hits = np.stack(values).astype(np.float64) if len(values) else np.zeros((0, *shape))
        return cls(hits, np.ones(len(hits)))

    def value(self) -> np.ndarray:
        """The pooled score [L, H]; NaN where there is nothing to pool."""
        total = self.totals.sum()
        return self.hits.sum(0) / total if total > 0 else np.full(self.hits.shape[1:], np.nan)


def sentence_statistics(attention: Sequence[Attention], shape: tuple[int, int]) -> dict[str, Counts]:
    """:func:`head_statistics` of each sentence: {key: :class:`Counts` over the sentences}."""
    each = [head_statistics(weights, tokens) for tokens, weights in attention]
    keys = [score.key for score in SCORES.values() if score.per_query]
    return {key: Counts.means([values[key] for values in each], shape) for key in keys}


# ------------------------------------------------------------------------------------------------ anaphora
def pronoun_to_antecedent(
    weights: np.ndarray, tokens: Sequence[str], pronoun: str, antecedent: str
) -> tuple[np.ndarray, np.ndarray]:
    """For self-attention [L, H, S, S] over ``tokens``: the word-level weight [L, H] from the pronoun to the
    antecedent, and whether the antecedent is the pronoun's most attended other word [L, H] (booleans).
    Raises ValueError if either word is not in the sentence."""
    pronoun_index, antecedent_index = word_index(tokens, pronoun), word_index(tokens, antecedent)
    weight = word_attention(weights, tokens, pronoun_index, antecedent_index)
    return weight, strongest_other_word(np.asarray(weights), tokens, pronoun_index) == antecedent_index


def sentence_anaphora(attention: Sequence[Attention], examples, shape: tuple[int, int]) -> dict[str, Counts]:
    """``anaphora`` and ``anaphora_hits`` of each usable example: {key: :class:`Counts` over the examples}."""
    weights, hits = [], []
    for (tokens, maps), example in zip(attention, examples, strict=True):
        try:
            weight, hit = pronoun_to_antecedent(maps, tokens, example.pronoun, example.antecedent)
        except ValueError:
            continue  # a tokenizer that cannot spell the word (e.g. a test vocabulary)
        weights.append(weight)
        hits.append(hit.astype(float))
    return {"anaphora": Counts.means(weights, shape), "anaphora_hits": Counts.means(hits, shape)}


def anaphora_scores(loaded: LoadedCheckpoint, sample: Sample | None = None, examples=None) -> dict[str, Counts]:
    """``anaphora`` and ``anaphora_hits`` over pronoun → antecedent examples (default: the shipped ones), example by
    example. The ``sample`` is not used: these scores need sentences with a marked pronoun and antecedent."""
    examples = load_anaphora_examples() if examples is None else examples
    attention = encoder_attentions(loaded, [example.sentence for example in examples])
    return sentence_anaphora(attention, examples, (loaded.config.encoder_layers, loaded.config.num_heads))


def pronoun_sentence_scores(loaded: LoadedCheckpoint) -> dict[str, Counts]:
    """The head statistics and the anaphora scores over the shipped pronoun sentences, sentence by sentence, one
    encoder pass each."""
    examples = load_anaphora_examples()
    attention = encoder_attentions(loaded, [example.sentence for example in examples])
    shape = (loaded.config.encoder_layers, loaded.config.num_heads)
    return {**sentence_statistics(attention, shape), **sentence_anaphora(attention, examples, shape)}


def cross_scores(
    loaded: LoadedCheckpoint, sample: Sample, dictionary: dict[str, set[str]] | None = None
) -> dict[str, Counts | int]:
    """``alignment_dictionary`` (hits over each translation's words with a dictionary partner) and
    ``alignment_consensus`` (over all its words counted), translation by translation, and the words counted."""
    dictionary = load_dictionary() if dictionary is None else dictionary
    found: list[tuple[np.ndarray, int, np.ndarray, int]] = [
        sentence_alignment_hits(loaded.tokenizer, source_ids, output, maps.cross, dictionary)
        for source_ids, output, maps in sample.decoded
    ]
    shape = (loaded.config.decoder_layers, loaded.config.num_heads)

    def counts(hits: int, totals: int) -> Counts:
        stacked = np.stack([np.asarray(each[hits], dtype=float) for each in found]) if found else np.zeros((0, *shape))
        return Counts(stacked, np.array([each[totals] for each in found], dtype=float))

    dictionary_hits, consensus_hits = counts(0, 1), counts(2, 3)
    return {
        "alignment_dictionary": dictionary_hits,
        "alignment_consensus": consensus_hits,
        "dictionary_words": int(dictionary_hits.totals.sum()),
        "output_words": int(consensus_hits.totals.sum()),
    }


# ------------------------------------------------------------------------------------------------ the sample
@dataclass
class Sample:
    """The sentences scores are measured over, and (made on first use, once for every score that needs them) the
    model's greedy translations of them, each as (source ids, output ids, attention over both)."""

    loaded: LoadedCheckpoint
    sentences: Sequence[str]

    @cached_property
    @torch.no_grad()
    def decoded(self) -> list[tuple[list[int], list[int], AttentionMaps]]:
        model, tokenizer = self.loaded.model, self.loaded.tokenizer
        encoded, outputs = translate_ids(model, tokenizer, self.sentences, GREEDY, batch_size=16)
        return [
            (list(source_ids), list(output), attention_for(model, tokenizer, source_ids, output))
            for source_ids, output in zip(encoded, outputs, strict=True)
        ]

    def decoder_attention(self) -> list[Attention]:
        """Each translation's decoder self-attention with its query tokens (``<s>`` and the output)."""
        return [(maps.target_tokens, maps.decoder) for _, _, maps in self.decoded]


# ------------------------------------------------------------------------------------------------ the registry
SELF = ("encoder", "decoder")  # the per-query scores' kinds: both self-attentions


@dataclass(frozen=True)
class HeadScore:
    """One head score: see the module docstring for the two kinds of ``function``."""

    key: str
    name: str  # what the app's menus, tables and figure titles show
    kinds: tuple[str, ...]  # the attention it is measured on: "encoder", "decoder" (self-attention), "cross"
    description: str
    function: Callable
    per_query: bool = False
    low_is_notable: bool = False  # notable heads are the lowest (a sharp head has a low entropy)
    share: bool = True  # a share or weight in [0, 1]: drawn on a fixed 0–1 colour scale

    @property
    def zrange(self) -> tuple[float, float] | None:
        return (0.0, 1.0) if self.share else None


SCORES: dict[str, HeadScore] = {
    score.key: score
    for score in (
        HeadScore(
            "mean_distance",
            "Mean distance looked (tokens)",
            SELF,
            "mean |query − key| position distance, weighted by attention",
            lambda rows: (rows.weights * rows.distance).sum(-1),
            per_query=True,
            share=False,
        ),
        HeadScore(
            "long_range_mass",
            "Weight on far tokens",
            SELF,
            "attention mass on keys more than 5 positions away",
            lambda rows: (rows.weights * (rows.distance > rows.far)).sum(-1),
            per_query=True,
        ),
        HeadScore(
            "previous_token",
            "Weight on the previous token",
            SELF,
            "attention on the token just before the query",
            lambda rows: rows.diagonal(-1),
            per_query=True,
        ),
        HeadScore(
            "next_token",
            "Weight on the next token",
            ("encoder",),
            "attention on the token just after the query",
            lambda rows: rows.diagonal(1),
            per_query=True,
        ),
        HeadScore(
            "delimiter_mass",
            "Weight on <s>, </s> and punctuation",
            SELF,
            "attention mass on <s>, </s> and punctuation",
            lambda rows: rows.weights[..., rows.delimiter].sum(-1),
            per_query=True,
        ),
        HeadScore(
            "self_mass",
            "Weight on itself",
            SELF,
            "attention on the query's own position",
            lambda rows: rows.diagonal(0),
            per_query=True,
        ),
        HeadScore(
            "entropy",
            "Entropy (bits; low = sharp)",
            SELF,
            "entropy of the attention distribution, in bits (0 = one key, log2(n) = uniform)",
            lambda rows: entropy_bits(rows.weights),
            per_query=True,
            low_is_notable=True,
            share=False,
        ),
        HeadScore(
            "anaphora",
            "Pronoun → antecedent weight",
            ("encoder",),
            "weight from a pronoun to its antecedent, mean over the shipped pronoun–antecedent sentences",
            anaphora_scores,
        ),
        HeadScore(
            "anaphora_hits",
            "Pronouns resolved",
            ("encoder",),
            "share of pronoun sentences whose antecedent is the pronoun's most attended other word",
            anaphora_scores,
        ),
        HeadScore(
            "alignment_dictionary",
            "Alignment with dictionary translations",
            ("cross",),
            "cross-attention: share of output words whose most attended source word is a dictionary "
            "translation of it (words with a dictionary partner in the source only)",
            cross_scores,
        ),
        HeadScore(
            "alignment_consensus",
            "Agreement with the other cross heads",
            ("cross",),
            "cross-attention: share of output words whose most attended source word is the one all other "
            "cross-attention heads together attend to most",
            cross_scores,
        ),
    )
}


def score_keys(kind: str) -> tuple[str, ...]:
    """The registry's keys measured on one attention kind, in registry order."""
    return tuple(key for key, score in SCORES.items() if kind in score.kinds)
