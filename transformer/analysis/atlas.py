"""A head atlas: every attention head of a checkpoint measured against gold data, each measure beside a baseline that
needs no model, with how much the translation needs the head, a place on a map of heads and a nameable group.

- **Encoder heads** against English gold syntax and **decoder self-attention heads** against German gold syntax
  (Universal Dependencies PUD; :mod:`transformer.analysis.syntax`): per relation and direction, the head's accuracy
  beside the best fixed-offset baseline.
- **Cross heads** against gold word alignments (``../shared/data/en-de/align/``;
  :mod:`transformer.analysis.word_alignment`): the alignment error rate of the head's better reading (the rows that
  predict each German word, or those that read it) beside a diagonal baseline (German word j linked to the English
  word at the same relative position).
- **Attention statistics** of every head on the same sentences (:data:`FEATURES`): the share of attention on the
  word itself, the previous and the next piece, the sentence delimiter (``</s>`` for encoder and cross heads,
  ``<s>`` for the decoder), punctuation, the normalised entropy, and the mean distance (for cross heads: from the
  diagonal, as a share of the source length).

Groups (:mod:`~transformer.analysis.atlas_groups`) are rules a person can read: a head that puts half its attention on
the delimiter is *delimiter*, on one neighbour *previous*/*next* (word), on itself *self*; one that beats its baseline
on a syntactic relation by :data:`SYNTAX_MARGIN`, finding the gold word at least :data:`SYNTAX_ACCURACY` of the time, is
*syntax:relation* (its relation with the largest such margin); a cross head that beats the diagonal by
:data:`ALIGNMENT_MARGIN` is *alignment*; a head spread evenly (entropy ≥ :data:`BROAD_ENTROPY`) is *broad*; the rest
*mixed*. The map places heads by their profile (statistics and margins over the baselines, standardised) on its
first two principal components; related heads are the nearest profiles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from transformer.analysis import alignment_choice, atlas_index, syntax
from transformer.analysis import word_alignment as wa
from transformer.analysis.atlas_groups import group_of, trusted, trusted_margin
from transformer.analysis.atlas_measures import (
    MIN_ARCS,
    Measured,
    alignment_scores,
    head_margins,
    measure,
    measure_held_out,
    syntax_scores,
)
from transformer.analysis.attention import KINDS
from transformer.formats.checkpoint import LoadedCheckpoint, read_beside, save_beside
from transformer.paper.data import DATA_ROOT

ATLAS_FILE = "atlas.json"
ATLAS_VERSION = 3  # raised when the stored records change shape: an older atlas.json is measured again, not misread
SYNTAX_ROOT = DATA_ROOT.parent / "syntax"
ENGLISH_TREES = SYNTAX_ROOT / "en_pud-ud-test.conllu"
GERMAN_TREES = SYNTAX_ROOT / "de_pud-ud-test.conllu"
ALIGNMENT_GOLD = DATA_ROOT / "align" / "europarl_gold"
# Held out: text outside the training data (PUD's sentences are among the training pairs). English sentences alone
# for encoder heads; German sentences alone, teacher-forced after an empty source, for decoder heads.
HELD_OUT_ENGLISH = SYNTAX_ROOT / "en_ewt-ud-dev.conllu"
HELD_OUT_GERMAN = SYNTAX_ROOT / "de_gsd-ud-dev.conllu"
HELD_OUT_MIN_ARCS = 50  # relations with fewer arcs in a held-out treebank are not scored on it
FEATURES = ("self", "previous", "next", "delimiter", "punctuation", "entropy", "distance")
RELATED = 5


class AtlasError(ValueError):
    """The atlas cannot be measured on this model; the message says why."""


def _interval(found: dict, layer: int, head: int) -> dict:
    return {
        "value": round(float(found["margin"][layer, head]), 4),
        "low": round(float(found["low"][layer, head]), 4),
        "high": round(float(found["high"][layer, head]), 4),
        "items": found["sentences"],
    }


def _syntax_record(relations: dict, layer: int, head: int, seen: dict, unseen: dict | None) -> list[dict]:
    """One head's score on every relation, its better direction first, beside that direction's baseline: on the
    treebank the direction and the baseline's offset were chosen on (``relations``; ``margin``: the head minus
    the baseline with its paired interval over those sentences, ``seen``), and on held-out sentences (``unseen``:
    ``held_out``, the same comparison, chosen beforehand) where the relation has enough arcs there. Sorted by the
    margin a reader should trust: the held-out one where there is one."""
    scores = []
    for relation, found in relations.items():
        accuracy = found["accuracy"][layer, head]
        direction = int(np.argmax(accuracy - found["baseline"]))
        score = {
            "relation": relation,
            "direction": syntax.DIRECTIONS[direction],
            "accuracy": round(float(accuracy[direction]), 4),
            "baseline": round(float(found["baseline"][direction]), 4),
            "baseline_offset": int(found["baseline_offset"][direction]),
            "arcs": found["arcs"],
        }
        if relation in seen:
            score["margin"] = _interval(seen[relation], layer, head)
        if unseen and relation in unseen:
            held = unseen[relation]
            score["held_out"] = {
                "accuracy": round(float(held["accuracy"][layer, head]), 4),
                "baseline": round(float(held["baseline"][layer, head]), 4),
                "arcs": held["arcs"],
                "margin": _interval(held, layer, head),
            }
        scores.append(score)
    return sorted(scores, key=lambda score: -trusted_margin(score))


def head_records(
    measured: Measured,
    relations: dict[str, dict],
    alignment: dict,
    importance: dict | None,
    seen: dict[str, dict] | None = None,
    unseen: dict[str, dict] | None = None,
) -> list:
    """One record per head: kind, 1-based layer and head, its features, its scores beside their baselines (best
    first), its importance (BLEU lost when it alone is switched off) when measured, and its cluster (the group
    :func:`group_of` names)."""
    records = []
    for kind in KINDS:
        table = measured.statistics(kind)
        layers, heads = table.shape[:2]
        for layer in range(layers):
            for head in range(heads):
                features = {name: round(float(v), 4) for name, v in zip(FEATURES, table[layer, head], strict=True)}
                if kind == "cross":
                    aer = alignment["aer"][layer, head]
                    shift = int(np.argmin(aer))
                    reading = wa.Method(layer, head, bool(shift)).name
                    difference = alignment["difference"][layer, head]
                    scores = [
                        {
                            "reading": reading,
                            "aer": round(float(aer[shift]), 4),
                            "baseline": alignment["baseline"],
                            "baseline_reading": "diagonal",
                            "difference": {
                                **dict(zip(("value", "low", "high"), difference.round(4).tolist(), strict=True)),
                                "items": alignment["pairs"],
                            },
                        }
                    ]
                else:
                    scores = _syntax_record(
                        relations[kind], layer, head, (seen or {}).get(kind, {}), (unseen or {}).get(kind)
                    )
                drop = None if importance is None else importance["bleu_drop"][kind][layer][head]
                records.append(
                    {
                        "kind": kind,
                        "layer": layer + 1,
                        "head": head + 1,
                        "features": features,
                        "scores": scores,
                        "importance_bleu_drop": drop,
                        "cluster": group_of(kind, features, scores),
                    }
                )
    return records


def profile(record: dict, relations: Sequence[str]) -> np.ndarray:
    """A head's profile for the map: its features, then its margin over the baseline on each relation (0 where it
    has none) and on the alignment (AER under the diagonal's)."""
    margins = {
        score["relation"]: trusted(score)["accuracy"] - trusted(score)["baseline"]
        for score in record["scores"]
        if "relation" in score
    }
    alignment = [score["baseline"] - score["aer"] for score in record["scores"] if "aer" in score]
    return np.array(
        [record["features"][name] for name in FEATURES]
        + [margins.get(relation, 0.0) for relation in relations]
        + [alignment[0] if alignment else 0.0]
    )


def place(records: list[dict], related: int = RELATED) -> None:
    """Add each record's place on the map (``x``, ``y``: first two principal components of the standardised
    profiles) and its ``related`` heads (nearest profiles), in place."""
    relations = sorted({score["relation"] for record in records for score in record["scores"] if "relation" in score})
    profiles = np.stack([profile(record, relations) for record in records])
    spread = profiles.std(axis=0)
    standard = (profiles - profiles.mean(axis=0)) / np.where(spread > 0, spread, 1)
    _, _, axes = np.linalg.svd(standard, full_matrices=False)
    coordinates = standard @ axes[:2].T
    distances = np.linalg.norm(standard[:, None] - standard[None], axis=-1)
    for index, record in enumerate(records):
        record["x"], record["y"] = (round(float(v), 4) for v in coordinates[index])
        nearest = [int(i) for i in np.argsort(distances[index]) if i != index][:related]
        record["related"] = [[records[i]["kind"], records[i]["layer"], records[i]["head"]] for i in nearest]


def build(loaded: LoadedCheckpoint, sentences: int | None = None) -> dict:
    """Measure the whole atlas of ``loaded`` on the treebank pairs, the held-out treebanks (the first ``sentences``
    of each; all by default) and the alignment gold."""
    english, german = syntax.read_conllu(ENGLISH_TREES), syntax.read_conllu(GERMAN_TREES)
    english, german = english[:sentences], german[:sentences]
    measured = measure(loaded, english, german)
    if not measured.count:
        raise AtlasError(
            f"none of the {measured.skipped} treebank pairs could be read: this model's tokenizer does not spell "
            "the treebank's words (a vocabulary without their characters, or one that normalises them)"
        )
    relations = {kind: syntax_scores(measured.readings[kind], MIN_ARCS) for kind in ("encoder", "decoder")}
    seen = {kind: head_margins(measured.readings[kind], relations[kind]) for kind in relations}
    unseen, held_out_treebanks = None, None
    if HELD_OUT_ENGLISH.is_file() and HELD_OUT_GERMAN.is_file():
        trees = {
            "encoder": syntax.read_conllu(HELD_OUT_ENGLISH)[:sentences],
            "decoder": syntax.read_conllu(HELD_OUT_GERMAN)[:sentences],
        }
        readings, skipped = measure_held_out(loaded, trees["encoder"], trees["decoder"])
        unseen = {kind: head_margins(readings[kind], relations[kind], HELD_OUT_MIN_ARCS) for kind in relations}
        held_out_treebanks = {
            kind: {"name": path.name, "sentences": len(trees[kind]), "skipped": skipped[kind]}
            for kind, path in (("encoder", HELD_OUT_ENGLISH), ("decoder", HELD_OUT_GERMAN))
        }
    gold = alignment_choice.Gold.read(f"{ALIGNMENT_GOLD}.en", f"{ALIGNMENT_GOLD}.de", f"{ALIGNMENT_GOLD}.de-en.wa")
    alignment = alignment_scores(loaded, gold)
    importance = read_beside(loaded, "importance.json")
    records = head_records(measured, relations, alignment, importance, seen, unseen)
    place(records)
    return {
        "version": ATLAS_VERSION,
        "heads": records,
        "held_out": relation_summary(records, relations),
        "treebank": {
            "english": ENGLISH_TREES.name,
            "german": GERMAN_TREES.name,
            "pairs": len(english),
            "skipped": measured.skipped,
            "seen_in_training": True,
        },
        "held_out_treebanks": held_out_treebanks,
        "alignment_gold": {"name": gold.name, "pairs": alignment["pairs"], "diagonal_aer": alignment["baseline"]},
    }


def relation_summary(records: Sequence[dict], relations: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """Per kind and relation: the head chosen on the treebank pairs (the largest margin over the baseline there)
    and how it does on the held-out sentences (its margin with the interval; None where the relation has too few
    arcs there), the figure to report: chosen on one set, scored on another."""
    summary: dict[str, dict[str, dict]] = {}
    for kind in relations:
        for relation in relations[kind]:
            candidates = [
                (record, score)
                for record in records
                if record["kind"] == kind
                for score in record["scores"]
                if score.get("relation") == relation
            ]
            record, score = max(candidates, key=lambda pair: pair[1]["accuracy"] - pair[1]["baseline"])
            summary.setdefault(kind, {})[relation] = {
                "layer": record["layer"],
                "head": record["head"],
                "direction": score["direction"],
                "chosen_on": {key: score[key] for key in ("accuracy", "baseline", "arcs")},
                "held_out": score.get("held_out"),
            }
    return summary


EXAMPLES = 3  # per head: the sentences of the index where its strongest link is strongest


def add_examples(records: list[dict], index: atlas_index.Index, count: int = EXAMPLES) -> None:
    """Give each record its clearest examples from ``index`` (:func:`atlas_index.strongest`), in place: the words of
    the query's sentence (and, for a cross head, of the English one), the query and key positions and the weight."""
    for record in records:
        kind = record["kind"]
        examples = []
        for found in atlas_index.strongest(index, kind, record["layer"] - 1, record["head"] - 1, count):
            queries, keys = index.words(kind, found["sentence"])
            example = {
                "words": queries,
                "query": found["query"],
                "key": found["key"],
                "weight": round(found["weight"], 3),
            }
            if kind == "cross":
                example["key_words"] = keys
            examples.append(example)
        record["examples"] = examples


STORED_SCORES = 8  # per head in the stored atlas: what its card shows (the command prints them all)


def save(loaded: LoadedCheckpoint, atlas: dict) -> None:
    """Store the atlas beside the checkpoint, each head with its :data:`STORED_SCORES` best scores, compactly."""
    heads = [{**record, "scores": record["scores"][:STORED_SCORES]} for record in atlas["heads"]]
    save_beside(loaded, ATLAS_FILE, {**atlas, "heads": heads}, compact=True)


def stored(loaded: LoadedCheckpoint) -> dict | None:
    """The atlas measured on exactly these weights by this version of the measure, or None."""
    found = read_beside(loaded, ATLAS_FILE)
    return found if found is not None and found.get("version") == ATLAS_VERSION else None
