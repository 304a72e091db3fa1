"""The head atlas's measures: every head's attention statistics on the same sentences, its accuracy per syntactic
relation beside the best fixed-offset baseline (in- and out-of-domain treebanks), and each cross head's alignment
error rate beside the diagonal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer.analysis import alignment_choice, syntax
from transformer.analysis import word_alignment as wa
from transformer.analysis.attention import PUNCTUATION, attention_for_many
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import EOS_ID

MIN_ARCS = 100  # relations with fewer arcs in the treebank are not scored
BATCH = 16


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


def alignment_scores(loaded: LoadedCheckpoint, gold: alignment_choice.Gold) -> dict:
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
