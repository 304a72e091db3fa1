"""Which reading of the attention maps a checkpoint's word alignment uses: the readings compared on half of the hand-
aligned pairs and scored on the other half, the choice stored beside the checkpoint's weights (``python -m
transformer align --choose``), and the reading used without one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from transformer.analysis.word_alignment import (
    ForcedPair,
    Link,
    Method,
    best_method,
    counts,
    evaluate_methods,
    links,
    read_gold,
    score,
)
from transformer.formats.checkpoint import LoadedCheckpoint, read_beside, save_beside

ALIGNMENT_FILE = "alignment.json"  # beside a checkpoint's weights: `python -m transformer align --choose`
FALLBACK_METHOD = "mean-both"  # for a checkpoint without a stored choice: every layer, both directions agreeing


@dataclass
class Gold:
    """Sentence pairs (space-separated words) with their gold links."""

    english: list[str]
    german: list[str]
    sure: list[set[Link]]
    possible: list[set[Link]]
    name: str = ""

    @classmethod
    def read(cls, english: str | Path, german: str | Path, links: str | Path) -> Gold:
        source = Path(english).read_text(encoding="utf-8").splitlines()
        target = Path(german).read_text(encoding="utf-8").splitlines()
        if len(source) != len(target):
            raise ValueError(f"{english} has {len(source)} lines but {german} has {len(target)}")
        sure, possible = read_gold(links, len(source))
        return cls(source, target, sure, possible, Path(links).name)


USUAL_METHOD = "mean"  # the usual reading of a map: every layer's heads, the rows that predict each word


def choose(pairs: Sequence[ForcedPair], gold: Gold, methods: Sequence[Method]) -> dict:
    """Score every method on the gold pairs and pick the best (:func:`best_method`). So that the figure a reader
    trusts is not the one the choice was fitted to, the choice is also made on each half of the pairs and scored
    on the other half (``held_out``); every pair then has links from a reading chosen without it, and their AER
    over all pairs is the figure to report (``held_out_interval``, with its 95% bootstrap interval over pairs), with
    its paired difference from the usual reading of the map on the same pairs (``held_out_vs_usual``)."""
    from transformer.analysis import intervals

    scores = evaluate_methods(pairs, gold.sure, gold.possible, methods)
    chosen = best_method(scores)
    half = len(pairs) // 2
    held_out = []
    held_out_links: list[list[Link]] = [[] for _ in pairs]
    for fit, check in ((slice(0, half), slice(half, None)), (slice(half, None), slice(0, half))):
        fitted = best_method(evaluate_methods(pairs[fit], gold.sure[fit], gold.possible[fit], methods))
        found = [links(pair, Method.parse(fitted)) for pair in pairs[check]]
        held_out_links[check] = found
        checked = score(found, gold.sure[check], gold.possible[check])
        interval = intervals.aer(counts(found, gold.sure[check], gold.possible[check]))
        held_out.append(
            {"method": fitted, "pairs": len(pairs[check]), **checked.as_dict(), "interval": interval.as_dict()}
        )
    pooled = counts(held_out_links, gold.sure, gold.possible)
    usual = counts([links(pair, Method.parse(USUAL_METHOD)) for pair in pairs], gold.sure, gold.possible)
    in_sample = counts([links(pair, Method.parse(chosen)) for pair in pairs], gold.sure, gold.possible)
    return {
        "method": chosen,
        **scores[chosen].as_dict(),
        "interval": intervals.aer(in_sample).as_dict(),  # chosen on these pairs: optimistic, not the figure to report
        "held_out": held_out,
        "held_out_aer": round(sum(h["aer"] for h in held_out) / len(held_out), 4),
        "held_out_interval": intervals.aer(pooled).as_dict(),
        "held_out_vs_usual": intervals.paired_aer(pooled, usual).as_dict(),
        "usual": {"method": USUAL_METHOD, "interval": intervals.aer(usual).as_dict()},
        "gold": gold.name,
        "pairs": len(pairs),
        "methods": {name: value.as_dict() for name, value in sorted(scores.items(), key=lambda kv: kv[1].aer)},
    }


def stored_choice(loaded: LoadedCheckpoint) -> dict | None:
    """What ``python -m transformer align --choose`` stored for these weights (None without it)."""
    return read_beside(loaded, ALIGNMENT_FILE)


def default_choice(stored: dict | None) -> Method:
    """The method a stored choice names, else :data:`FALLBACK_METHOD`."""
    try:
        return Method.parse(stored["method"]) if stored else Method.parse(FALLBACK_METHOD)
    except (KeyError, TypeError, ValueError):
        return Method.parse(FALLBACK_METHOD)


def default_method(loaded: LoadedCheckpoint) -> Method:
    """The stored choice when there is one for these weights, else :data:`FALLBACK_METHOD`."""
    return default_choice(stored_choice(loaded))


def save_choice(loaded: LoadedCheckpoint, result: dict) -> Path:
    return save_beside(loaded, ALIGNMENT_FILE, result)
