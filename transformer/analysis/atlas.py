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

Groups (:func:`group_of`) are rules a person can read: a head that puts half its attention on the delimiter is
*delimiter*, on one neighbour *previous*/*next* (word), on itself *self*; one that beats its baseline on a syntactic
relation by :data:`SYNTAX_MARGIN`, finding the gold word at least :data:`SYNTAX_ACCURACY` of the time, is
*syntax:relation* (its relation with the largest such margin); a cross head that beats the diagonal by
:data:`ALIGNMENT_MARGIN` is *alignment*; a head spread evenly (entropy ≥ :data:`BROAD_ENTROPY`) is *broad*; the rest
*mixed*. The map places heads by their profile (statistics and margins over the baselines, standardised) on its
first two principal components; related heads are the nearest profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer.analysis import atlas_index, syntax
from transformer.analysis import word_alignment as wa
from transformer.analysis.attention import KINDS, PUNCTUATION, attention_for_many
from transformer.formats.checkpoint import LoadedCheckpoint, read_beside, save_beside
from transformer.paper.data import DATA_ROOT
from transformer.paper.tokenizer import EOS_ID

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
MIN_ARCS = 100  # relations with fewer arcs in the treebank are not scored
SYNTAX_MARGIN = 0.05  # accuracy over the relation's best fixed offset that makes a head "syntactic"…
SYNTAX_ACCURACY = 0.3  # …when it also finds the gold word this often (not 14% against a baseline's 8%)
ALIGNMENT_MARGIN = 0.10  # AER under the diagonal's that makes a cross head an "alignment" head
PATTERN_SHARE = 0.5  # attention share on one place that names a head by it
BROAD_ENTROPY = 0.85
RELATED = 5
BATCH = 16


class AtlasError(ValueError):
    """The atlas cannot be measured on this model; the message says why."""


@dataclass
class Measured:
    """What one pass over the treebank pairs gives: each syntax kind's readings and every kind's statistics."""

    readings: dict[str, list[syntax.Reading]] = field(default_factory=lambda: {"encoder": [], "decoder": []})
    sums: dict[str, np.ndarray] = field(default_factory=dict)  # kind → [layers, heads, features] summed
    count: dict[str, int] = field(default_factory=dict)
    skipped: int = 0

    def add_statistics(self, kind: str, values: np.ndarray) -> None:
        self.sums[kind] = self.sums.get(kind, 0) + values
        self.count[kind] = self.count.get(kind, 0) + 1

    def statistics(self, kind: str) -> np.ndarray:
        return self.sums[kind] / max(self.count.get(kind, 0), 1)


def statistics(weights: np.ndarray, punctuation: np.ndarray, delimiter: int, causal: bool, cross: bool) -> np.ndarray:
    """[layers, heads, features] of one sentence's map [layers, heads, queries, keys], averaged over its queries.
    ``punctuation``: a mask over the keys; ``delimiter``: the delimiter's key column; ``causal``: a decoder map
    (its first row, which can only see ``<s>``, is left out)."""
    queries, keys = weights.shape[-2:]
    first = 1 if causal else 0
    rows = weights[..., first:, :]
    positions = np.arange(first, queries)
    seen = (positions + 1) if causal else np.full(len(positions), keys)
    entropy = -(rows * np.log(np.clip(rows, 1e-12, None))).sum(-1) / np.log(np.maximum(seen, 2))
    if cross:
        centre = positions * (keys - 1) / max(queries - 1, 1)
        distance = np.abs(np.arange(keys)[None, :] - centre[:, None]) / max(keys - 1, 1)
        self_share = previous = following = np.zeros(rows.shape[:-1])
    else:
        distance = np.abs(np.arange(keys)[None, :] - positions[:, None])
        self_share = rows[..., np.arange(len(positions)), positions]
        previous = np.where(positions > 0, rows[..., np.arange(len(positions)), np.maximum(positions - 1, 0)], 0)
        ahead = np.minimum(positions + 1, keys - 1)
        following = np.where(positions + 1 < keys, rows[..., np.arange(len(positions)), ahead], 0)
    values = [
        self_share,
        previous,
        following,
        rows[..., delimiter],
        (rows * punctuation).sum(-1),
        entropy,
        (rows * distance).sum(-1),
    ]
    return np.stack([value.mean(-1) for value in values], axis=-1)


def _punctuation(pieces: Sequence[str]) -> np.ndarray:
    return np.array([piece.lstrip(wa.WORD_START) in PUNCTUATION for piece in pieces], dtype=float)


@torch.no_grad()
def measure(
    loaded: LoadedCheckpoint, english: Sequence[syntax.Tree], german: Sequence[syntax.Tree], batch: int = BATCH
) -> Measured:
    """One teacher-forced pass over the treebank's sentence pairs (sentence n of each file translates the other)."""
    measured = Measured()
    limit = loaded.model.config.max_positions - 1
    prepared = []
    for pair in zip(english, german, strict=True):
        read = syntax.read_pair(loaded.tokenizer, *pair, limit)
        if read is None:
            measured.skipped += 1
        else:
            prepared.append((*pair, *read))
    for start in range(0, len(prepared), batch):
        chunk = prepared[start : start + batch]
        maps = attention_for_many(
            loaded.model, loaded.tokenizer, [item[2] for item in chunk], [item[3] for item in chunk]
        )
        for (en_tree, de_tree, _, _, source_owner, output_owner), found in zip(chunk, maps, strict=True):
            encoder = syntax.word_map(found.encoder, source_owner, source_owner, len(en_tree.tokens))
            measured.readings["encoder"].append(syntax.Reading(en_tree, syntax.strongest_other(encoder)))
            # decoder rows and keys 1… read the output's pieces (row and key 0 read <s>)
            decoder = syntax.word_map(found.decoder[..., 1:, 1:], output_owner, output_owner, len(de_tree.tokens))
            measured.readings["decoder"].append(syntax.Reading(de_tree, syntax.strongest_other(decoder)))
            source_marks, target_marks = _punctuation(found.source_tokens), _punctuation(found.target_tokens)
            measured.add_statistics("encoder", statistics(found.encoder, source_marks, -1, False, False))
            measured.add_statistics("decoder", statistics(found.decoder, target_marks, 0, True, False))
            measured.add_statistics("cross", statistics(found.cross, source_marks, -1, False, True))
    return measured


@torch.no_grad()
def measure_held_out(
    loaded: LoadedCheckpoint, english: Sequence[syntax.Tree], german: Sequence[syntax.Tree], batch: int = BATCH
) -> tuple[dict[str, list[syntax.Reading]], dict[str, int]]:
    """Encoder heads on English sentences alone (the encoder reads nothing else), decoder self-attention heads on
    German sentences alone, teacher-forced after an empty source (no English exists for them; the decoder's
    self-attention then reads the German only). Each kind's readings, and how many sentences could not be read."""
    limit = loaded.model.config.max_positions - 1
    empty_source = [*loaded.tokenizer.encode(""), EOS_ID]
    readings: dict[str, list[syntax.Reading]] = {"encoder": [], "decoder": []}
    skipped = {"encoder": 0, "decoder": 0}
    for kind, trees in (("encoder", english), ("decoder", german)):
        target = kind == "decoder"
        prepared = []
        for tree in trees:
            read = syntax.read_side(loaded.tokenizer, tree, limit, target)
            if read is None:
                skipped[kind] += 1
            else:
                prepared.append((tree, *read))
        for start in range(0, len(prepared), batch):
            chunk = prepared[start : start + batch]
            sources = [empty_source if target else ids for _, ids, _ in chunk]
            outputs = [ids if target else [] for _, ids, _ in chunk]
            maps = attention_for_many(loaded.model, loaded.tokenizer, sources, outputs)
            for (tree, _, owners), found in zip(chunk, maps, strict=True):
                weights = found.decoder[..., 1:, 1:] if target else found.encoder  # decoder row and key 0 read <s>
                words = syntax.word_map(weights, owners, owners, len(tree.tokens))
                readings[kind].append(syntax.Reading(tree, syntax.strongest_other(words)))
    return readings, skipped


def head_margins(
    readings: Sequence[syntax.Reading], relations: dict, minimum: int = 1
) -> dict[str, dict[str, np.ndarray | int]]:
    """Every head against its baseline on ``readings``, with 95% bootstrap intervals over sentences (paired: the
    head and the baseline on the same arcs; :mod:`transformer.analysis.intervals`). What is compared is fixed
    beforehand by ``relations`` (:func:`syntax_scores` on other sentences): each head's direction (the one in which
    it beat the baseline there) and the baseline's offset in that direction. Per relation with at least
    ``minimum`` arcs here: ``arcs``, ``sentences``, and [layers, heads] ``accuracy``, ``baseline``, ``margin``,
    ``low``, ``high``."""
    from transformer.analysis import intervals

    names = list(relations)
    if not readings or not names:
        return {}
    layers, heads = readings[0].strongest.shape[:2]
    count, width = len(names), len(names) * layers * heads
    index = {name: number for number, name in enumerate(names)}
    offsets = {name: [int(offset) for offset in relations[name]["baseline_offset"]] for name in names}
    directions = np.stack([np.argmax(relations[n]["accuracy"] - relations[n]["baseline"], axis=-1) for n in names])
    hits = np.zeros((len(readings), count, layers, heads, 2), dtype=np.float32)
    base = np.zeros((len(readings), count, 2), dtype=np.float32)
    totals = np.zeros((len(readings), count), dtype=np.float32)
    for sentence, reading in enumerate(readings):
        for dependent, head, relation in reading.tree.arcs():
            number = index.get(relation)
            if number is None:
                continue
            hits[sentence, number, ..., 0] += reading.strongest[..., dependent] == head
            hits[sentence, number, ..., 1] += reading.strongest[..., head] == dependent
            base[sentence, number] += [
                head - dependent == offsets[relation][0],
                dependent - head == offsets[relation][1],
            ]
            totals[sentence, number] += 1
    chosen = np.take_along_axis(hits, directions[None, ..., None], axis=-1)[..., 0]  # [sentences, R, L, H]
    rows = np.concatenate([chosen.reshape(len(readings), width), base.reshape(len(readings), 2 * count), totals], 1)

    def parts(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lead = sums.shape[:-1]
        right = sums[..., :width].reshape(*lead, count, layers, heads)
        offset = sums[..., width : width + 2 * count].reshape(*lead, count, 1, 1, 2)
        baseline = np.where(directions == 0, offset[..., 0], offset[..., 1])
        arcs = sums[..., width + 2 * count :][..., :, None, None]
        return right, baseline, arcs

    def margin(sums: np.ndarray) -> np.ndarray:
        right, baseline, arcs = parts(sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            return ((right - baseline) / arcs).reshape(*sums.shape[:-1], width)

    value, low, high = intervals.bootstrap_many(rows, margin)
    right, baseline, arcs = parts(rows.sum(0))
    found = {}
    for name, number in index.items():
        total = int(arcs[number, 0, 0])
        if total < max(minimum, 1):
            continue
        found[name] = {
            "arcs": total,
            "sentences": len(readings),
            "accuracy": right[number] / total,
            "baseline": baseline[number] / total,
            **{
                key: array.reshape(count, layers, heads)[number]
                for key, array in (("margin", value), ("low", low), ("high", high))
            },
        }
    return found


def syntax_scores(readings: Sequence[syntax.Reading], minimum: int = MIN_ARCS) -> dict:
    """Per relation with at least ``minimum`` arcs: every head's accuracy in both directions, the baselines, and
    the best head chosen on one half of the sentences and scored on the other (and the other way round)."""
    whole = syntax.tally(readings)
    halves = [syntax.tally(readings[0::2]), syntax.tally(readings[1::2])]
    relations = {}
    for relation in whole.relations(minimum):
        offsets, baseline = whole.baseline(relation)
        held_out = []
        for chosen_on, scored_on in ((halves[0], halves[1]), (halves[1], halves[0])):
            if relation not in chosen_on.total or relation not in scored_on.total:
                continue
            layer, head, direction = np.unravel_index(chosen_on.accuracy(relation).argmax(), whole.hits[relation].shape)
            offsets, fitted = chosen_on.baseline(relation)  # the baseline is fitted on the same half
            offset_direction = int(np.argmax(fitted))
            held_out.append(
                {
                    "layer": int(layer) + 1,
                    "head": int(head) + 1,
                    "direction": syntax.DIRECTIONS[direction],
                    "accuracy": round(float(scored_on.accuracy(relation)[layer, head, direction]), 4),
                    "baseline": round(
                        scored_on.offset_accuracy(relation, int(offsets[offset_direction]), offset_direction), 4
                    ),
                }
            )
        relations[relation] = {
            "arcs": whole.total[relation],
            "accuracy": whole.accuracy(relation),
            "baseline": baseline,
            "baseline_offset": offsets,
            "held_out": held_out,
        }
    return relations


def alignment_scores(loaded: LoadedCheckpoint, gold: wa.Gold) -> dict:
    """Every cross head's AER on the gold pairs, reading the rows that predict each word and those that read it,
    the diagonal baseline's, and for each head's better reading the paired 95% bootstrap interval of its AER minus
    the diagonal's over the pairs (``difference`` [layers, heads, 3]: value, low, high)."""
    from transformer.analysis import intervals

    pairs = wa.force(loaded, gold.english, gold.german)
    layers, heads = pairs[0].cross.shape[:2]
    aer = np.zeros((layers, heads, 2))
    counts = {}
    for layer in range(layers):
        for head in range(heads):
            for shift in (False, True):
                method = wa.Method(layer, head, shift)
                found = [wa.links(pair, method) for pair in pairs]
                aer[layer, head, int(shift)] = wa.score(found, gold.sure, gold.possible).aer
                counts[layer, head, shift] = wa.counts(found, gold.sure, gold.possible)
    diagonal = [diagonal_links(len(pair.english), len(pair.german)) for pair in pairs]
    diagonal_counts = wa.counts(diagonal, gold.sure, gold.possible)
    difference = np.zeros((layers, heads, 3))
    for layer in range(layers):
        for head in range(heads):
            shift = bool(np.argmin(aer[layer, head]))
            found = intervals.paired_aer(counts[layer, head, shift], diagonal_counts)
            difference[layer, head] = found.value, found.low, found.high
    return {
        "aer": aer,
        "baseline": wa.score(diagonal, gold.sure, gold.possible).aer,
        "difference": difference,
        "pairs": len(pairs),
    }


def diagonal_links(english: int, german: int) -> list[tuple[int, int]]:
    """Each German word linked to the English word at the same relative position."""
    if not english or not german:
        return []
    return [(round(g * (english - 1) / max(german - 1, 1)), g) for g in range(german)]


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
    gold = wa.Gold.read(f"{ALIGNMENT_GOLD}.en", f"{ALIGNMENT_GOLD}.de", f"{ALIGNMENT_GOLD}.de-en.wa")
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
