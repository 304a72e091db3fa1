"""The atlas's scores as typed objects for whoever reads them (``atlas.json`` keeps them as JSON; see
:mod:`transformer.analysis.atlas`):

- :class:`RelationScore`: a self-attention head on one dependency relation, beside the fixed-offset baseline, on
  the treebank it was chosen on and on held-out sentences (:class:`HeldOut`);
- :class:`AlignmentScore`: a cross-attention head read as a word aligner, beside the diagonal;
- :class:`RelationChoice`: a relation's best head, chosen on one treebank and scored on held-out sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from transformer.analysis.intervals import Interval


def _interval(stored: Mapping[str, Any] | None) -> Interval | None:
    return None if stored is None else Interval.from_dict(stored)


@dataclass(frozen=True)
class HeldOut:
    """The same comparison on held-out sentences: the head's accuracy, the baseline's (its offset and direction
    chosen beforehand), the arcs, and the head's margin over the baseline with its 95% interval."""

    accuracy: float
    baseline: float
    arcs: int
    margin: Interval

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any] | None) -> HeldOut | None:
        if not stored:
            return None
        accuracy, baseline = float(stored["accuracy"]), float(stored["baseline"])
        return cls(accuracy, baseline, int(stored["arcs"]), Interval.from_dict(stored["margin"]))


@dataclass(frozen=True)
class RelationScore:
    """A self-attention head on one dependency relation, in its better direction (``head_to_dependent`` or the
    other way), beside the baseline of a fixed offset (``baseline_offset`` words away)."""

    relation: str
    direction: str
    accuracy: float
    baseline: float
    baseline_offset: int
    arcs: int
    margin: Interval | None  # on the treebank the direction and the offset were chosen on
    held_out: HeldOut | None  # where the relation has enough arcs in a held-out treebank

    @property
    def trusted_margin(self) -> Interval | None:
        """The margin a reader should trust: the held-out one where there is one."""
        return self.held_out.margin if self.held_out else self.margin

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> RelationScore:
        return cls(
            relation=str(stored["relation"]),
            direction=str(stored["direction"]),
            accuracy=float(stored["accuracy"]),
            baseline=float(stored["baseline"]),
            baseline_offset=int(stored["baseline_offset"]),
            arcs=int(stored["arcs"]),
            margin=_interval(stored.get("margin")),
            held_out=HeldOut.from_dict(stored.get("held_out")),
        )


@dataclass(frozen=True)
class AlignmentScore:
    """A cross-attention head read as a word aligner (``reading``: how), its alignment error rate on the gold
    pairs, the diagonal's, and the head's difference from it with its paired 95% interval over the pairs."""

    reading: str
    aer: float
    baseline: float
    difference: Interval

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> AlignmentScore:
        return cls(
            str(stored["reading"]), float(stored["aer"]), float(stored["baseline"]), _interval(stored["difference"])
        )


def score_of(stored: Mapping[str, Any]) -> RelationScore | AlignmentScore:
    """One entry of a head record's ``scores``."""
    return AlignmentScore.from_dict(stored) if "aer" in stored else RelationScore.from_dict(stored)


def scores_of(record: Mapping[str, Any]) -> list[RelationScore | AlignmentScore]:
    """A head record's scores, best first."""
    return [score_of(stored) for stored in record["scores"]]


@dataclass(frozen=True)
class RelationChoice:
    """A relation's best head (1-based layer and head), chosen on the treebank it was measured on (its accuracy and
    the baseline's there) and scored on held-out sentences where the relation has enough arcs."""

    relation: str
    layer: int
    head: int
    direction: str
    accuracy: float  # on the treebank it was chosen on
    baseline: float
    held_out: HeldOut | None

    @classmethod
    def from_dict(cls, relation: str, stored: Mapping[str, Any]) -> RelationChoice:
        chosen_on = stored["chosen_on"]
        return cls(
            relation,
            int(stored["layer"]),
            int(stored["head"]),
            str(stored["direction"]),
            float(chosen_on["accuracy"]),
            float(chosen_on["baseline"]),
            HeldOut.from_dict(stored.get("held_out")),
        )


def choices_of(atlas: Mapping[str, Any], kind: str) -> list[RelationChoice]:
    """The best head of every relation measured on ``kind``'s self-attention (an atlas's ``held_out``)."""
    return [RelationChoice.from_dict(relation, stored) for relation, stored in atlas["held_out"].get(kind, {}).items()]
