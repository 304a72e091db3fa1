"""Every head's scores (:data:`transformer.analysis.heads.SCORES`) over a sample of sentences, by attention kind, each
with its 95% interval: :func:`head_score_tables` measures them into one :class:`HeadScoreTables`, which pages and
commands read by attribute. Stored as JSON (:meth:`HeadScoreTables.as_dict`) in a checkpoint's
``measured.safetensors`` and in the paper-figures command's ``metrics.json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from transformer.analysis import intervals
from transformer.analysis.attention import load_anaphora_examples
from transformer.analysis.heads import (
    SCORES,
    Counts,
    Sample,
    dev_sample,
    encoder_attentions,
    score_keys,
    sentence_statistics,
)
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.config import ATTENTION_KINDS as KINDS

DECIMALS = 4  # what the tables keep (and store) of every score and bound


def rounded(values: Any) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float), DECIMALS)


@dataclass(frozen=True)
class ScoreInterval:
    """A score's 95% bootstrap interval for every head over the items it was measured on (``low``, ``high``:
    [layers, heads]), and ``near_best``: the heads the best one (the highest, or the lowest where low is notable) is
    not clearly ahead of by a paired interval of their difference, the best included."""

    low: np.ndarray
    high: np.ndarray
    near_best: np.ndarray  # bool [layers, heads]
    items: int  # sentences (or pronoun sentences) it was measured over

    def as_dict(self) -> dict:
        return {
            "low": rounded(self.low).tolist(),
            "high": rounded(self.high).tolist(),
            "near_best": np.asarray(self.near_best, dtype=bool).tolist(),
            "items": int(self.items),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreInterval:
        return cls(
            np.asarray(data["low"], dtype=float),
            np.asarray(data["high"], dtype=float),
            np.asarray(data["near_best"], dtype=bool),
            int(data["items"]),
        )


def score_interval(key: str, counts: Counts) -> ScoreInterval | None:
    """A score's interval over its items (:func:`intervals.candidates`); None over fewer than two items."""
    if len(counts.hits) < 2:
        return None
    score = SCORES.get(key)
    _, low, high, near = intervals.candidates(counts.hits, counts.totals, lowest=bool(score and score.low_is_notable))
    return ScoreInterval(rounded(low), rounded(high), near, len(counts.hits))


@dataclass(frozen=True)
class HeadScoreTables:
    """The scores of every head by attention kind (``scores[kind][key]``: [layers, heads], to :data:`DECIMALS`),
    their intervals (none over a single sentence), and what they were measured on."""

    sample: str  # "the first 100 dev sentences", "one sentence", …
    sentences: int
    anaphora_sentences: int  # the anaphora scores are always over the pronoun sentences
    scores: dict[str, dict[str, np.ndarray]]
    intervals: dict[str, dict[str, ScoreInterval]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)  # score key → what it measures
    output_words: int = 0  # the translations' words the cross-attention scores counted
    dictionary_words: int = 0  # … of which had a dictionary partner in their source sentence

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds measured, in the usual order."""
        return tuple(kind for kind in KINDS if kind in self.scores)

    def score(self, kind: str, key: str) -> np.ndarray | None:
        return self.scores.get(kind, {}).get(key)

    def interval(self, kind: str, key: str) -> ScoreInterval | None:
        return self.intervals.get(kind, {}).get(key)

    def as_dict(self) -> dict:
        """JSON-ready: the kinds' tables as nested lists [layer][head] under their names, ``intervals[kind][key]``."""
        return {
            "sample": self.sample,
            "sentences": self.sentences,
            "anaphora_sentences": self.anaphora_sentences,
            "descriptions": dict(self.descriptions),
            "output_words": self.output_words,
            "dictionary_words": self.dictionary_words,
            **{kind: {key: rounded(found).tolist() for key, found in self.scores[kind].items()} for kind in self.kinds},
            "intervals": {
                kind: {key: found.as_dict() for key, found in self.intervals.get(kind, {}).items()}
                for kind in self.kinds
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HeadScoreTables:
        kinds = [kind for kind in KINDS if kind in data]
        bounds = data.get("intervals", {})
        return cls(
            sample=str(data["sample"]),
            sentences=int(data["sentences"]),
            anaphora_sentences=int(data.get("anaphora_sentences", 0)),
            scores={kind: {key: rounded(values) for key, values in data[kind].items()} for kind in kinds},
            intervals={
                kind: {key: ScoreInterval.from_dict(found) for key, found in bounds.get(kind, {}).items()}
                for kind in kinds
            },
            descriptions=dict(data.get("descriptions", {})),
            output_words=int(data.get("output_words", 0)),
            dictionary_words=int(data.get("dictionary_words", 0)),
        )


def head_score_tables(
    loaded: LoadedCheckpoint, sample: int = 100, cross: bool = True, sentences: Sequence[str] | None = None
) -> HeadScoreTables:
    """Every score of :data:`SCORES` by attention kind (``encoder``, ``decoder``, ``cross``): over the first
    ``sample`` dev sentences, or over ``sentences`` when given (the anaphora scores are always over the pronoun
    sentences). ``cross=False`` leaves out what needs the model's translations (the decoder's and the
    cross-attention's scores): no decoding. Each score over two sentences or more has its interval."""
    if sentences is None:
        description, sentences = dev_sample(sample, loaded.config.source_language)
    else:
        description = "one sentence" if len(sentences) == 1 else f"{len(sentences)} sentences"
    kinds = KINDS if cross else ("encoder",)
    measured = Sample(loaded, sentences)
    config = loaded.config
    shapes = {kind: (config.layers(kind), config.num_heads) for kind in KINDS}
    tables: dict[str, dict[str, Counts]] = {kind: {} for kind in kinds}
    counts: dict[str, int] = {}
    per_query = {kind for score in SCORES.values() if score.per_query for kind in score.kinds}
    if "encoder" in per_query:
        tables["encoder"].update(sentence_statistics(encoder_attentions(loaded, sentences), shapes["encoder"]))
    if "decoder" in per_query and "decoder" in kinds:
        tables["decoder"].update(sentence_statistics(measured.decoder_attention(), shapes["decoder"]))
    wanted = [score for score in SCORES.values() if not score.per_query and set(score.kinds) & set(kinds)]
    for function in dict.fromkeys(score.function for score in wanted):
        for key, value in function(loaded, measured).items():
            if key in SCORES:
                for kind in SCORES[key].kinds:
                    tables[kind][key] = value
            else:
                counts[key] = value
    found = {kind: {key: score_interval(key, tables[kind][key]) for key in score_keys(kind)} for kind in kinds}
    return HeadScoreTables(
        sample=description,
        sentences=len(sentences),
        anaphora_sentences=len(load_anaphora_examples()),
        scores={kind: {key: rounded(tables[kind][key].value()) for key in score_keys(kind)} for kind in kinds},
        intervals={
            kind: {key: interval for key, interval in found[kind].items() if interval is not None} for kind in kinds
        },
        descriptions={key: SCORES[key].description for kind in kinds for key in score_keys(kind)},
        output_words=int(counts.get("output_words", 0)),
        dictionary_words=int(counts.get("dictionary_words", 0)),
    )
