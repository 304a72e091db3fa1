"""The head atlas's groups: rules a person can read that name a head by what it does (delimiter, previous/next word,
self, a syntactic relation, alignment, broad, mixed), each decided on a measure's trusted figure, the lower end of
its interval."""

from __future__ import annotations

from collections.abc import Sequence

SYNTAX_MARGIN = 0.05  # accuracy over the relation's best fixed offset that makes a head "syntactic"…
SYNTAX_ACCURACY = 0.3  # …when it also finds the gold word this often (not 14% against a baseline's 8%)
ALIGNMENT_MARGIN = 0.10  # AER under the diagonal's that makes a cross head an "alignment" head
PATTERN_SHARE = 0.5  # attention share on one place that names a head by it
BROAD_ENTROPY = 0.85


def trusted(score: dict) -> dict:
    """The figures of a syntax score to judge a head by: the held-out ones where measured, else those of the
    treebank the comparison was chosen on."""
    return score.get("held_out") or score


def trusted_margin(score: dict) -> float:
    figures = trusted(score)
    return figures["margin"]["value"] if "margin" in figures else figures["accuracy"] - figures["baseline"]


def group_of(kind: str, features: dict[str, float], scores: Sequence[dict]) -> str:
    """A head's group, by the rules in the module's docstring (the first that holds), as a key: ``delimiter``,
    ``previous``, ``next``, ``self``, ``syntax:<relation>``, ``alignment``, ``broad`` or ``mixed``. ``scores``: the
    head's scores, largest margin over the baseline first."""
    if features["delimiter"] >= PATTERN_SHARE:
        return "delimiter"
    if kind != "cross":
        for pattern in ("previous", "next", "self"):
            if features[pattern] >= PATTERN_SHARE:
                return pattern
    for score in scores:
        if "relation" in score and syntactic(score):
            return f"syntax:{score['relation']}"
    if scores and "aer" in scores[0] and aligning(scores[0]):
        return "alignment"
    if features["entropy"] >= BROAD_ENTROPY:
        return "broad"
    return "mixed"


def syntactic(score: dict) -> bool:
    """A syntax score that names its head: on the trusted sentences (:func:`trusted`) the head finds the gold word
    at least :data:`SYNTAX_ACCURACY` of the time, beats the baseline by :data:`SYNTAX_MARGIN` and the whole 95%
    interval of its margin lies above zero."""
    figures = trusted(score)
    margin = figures.get("margin")
    if margin is None:
        return False
    return figures["accuracy"] >= SYNTAX_ACCURACY and margin["value"] >= SYNTAX_MARGIN and margin["low"] > 0


def aligning(score: dict) -> bool:
    """An alignment score that names its head: an AER :data:`ALIGNMENT_MARGIN` under the diagonal's, with the whole
    95% interval of the difference below zero."""
    difference = score.get("difference")
    return difference is not None and score["baseline"] - score["aer"] >= ALIGNMENT_MARGIN and difference["high"] < 0


GROUP_KEYS = ("delimiter", "previous", "next", "self", "syntax", "alignment", "broad", "mixed")


def group_key(group: str) -> str:
    """The group's family (``syntax:nsubj`` → ``syntax``)."""
    return group.split(":", 1)[0]
