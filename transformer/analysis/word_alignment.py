"""Word alignment read off the cross-attention, and how far it agrees with human gold alignments.

A reader of a cross-attention map takes "this German word came from that English word" from it. This module makes
that reading explicit and measurable: a sentence pair whose words are separated by spaces is force-decoded (the
German teacher-forced), every German word is linked to the English word whose pieces it attends to most (its
pieces' rows averaged, the English word's pieces' columns summed, ``</s>`` left out), and the links are scored
against gold links with the alignment error rate (Och & Ney 2003; with sure links only, AER = 1 − 2·|A ∩ S| /
(|A| + |S|)).

Which rows stand for a German word is itself a choice (a :class:`Method`):

- the rows that *predict* the word (the usual reading: row t's query is the decoder state that outputs word t);
- the rows whose *input* is the word (``shift``: one row later, Chen et al. 2020, "Accurate Word Alignment Induction
  from Neural Machine Translation"), which at this size align better;

and of which heads: one head, a layer's average, or the average of every layer. One link per German word links
every German word, punctuation and words the English has no counterpart for included; ``both`` keeps only the links
that are also the English word's strongest German word in the same matrix (the intersection of the two directions,
as statistical aligners symmetrise), trading a little recall for much precision. Links are Pharaoh pairs
``(english, german)``, 0-based word positions, the English index first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transformer.analysis.attention import AttentionMaps, attention_for_many
from transformer.analysis.attribution import captum_attr
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import BOS_ID, EOS_ID, WORD_START, Tokenizer, join_pieces

Link = tuple[int, int]  # (english word, german word), 0-based
GRADIENTS = ("saliency", "input_x_gradient")  # gradient readings: one backward pass per sentence pair
METHOD_PATTERN = re.compile(
    r"^(?:L(?P<layer>\d+)(?:H(?P<head>\d+))?|(?P<mean>mean)|(?P<gradient>saliency|input_x_gradient))(?P<shift>-shift)?(?P<both>-both)?$"
)
BATCH = 16  # sentence pairs per padded pass


@dataclass(frozen=True)
class Method:
    """Which cross-attention rows and heads stand for a German word, and whether both directions must agree.
    ``layer``/``head`` are 0-based; ``None`` averages (every layer, or a layer's heads). Its name, e.g.
    ``L2H4-shift-both``, counts layers and heads from 1."""

    layer: int | None
    head: int | None
    shift: bool = False
    both: bool = False
    gradient: str | None = None  # instead of attention: the gradient of each German piece's score (GRADIENTS)

    @property
    def name(self) -> str:
        heads = "" if self.head is None else f"H{self.head + 1}"
        base = self.gradient or ("mean" if self.layer is None else f"L{self.layer + 1}{heads}")
        return base + ("-shift" if self.shift else "") + ("-both" if self.both else "")

    @classmethod
    def parse(cls, name: str) -> Method:
        """``L4`` (layer 4's heads averaged), ``L2H4`` (one head), ``mean`` (every layer), each optionally followed
        by ``-shift`` and ``-both``."""
        match = METHOD_PATTERN.match(name.strip())
        if not match:
            raise ValueError(
                f"unknown alignment method {name!r}: use L<layer>, L<layer>H<head> or mean, then optionally -shift "
                "and -both (for example L2H4-shift-both)"
            )
        shift, both = bool(match["shift"]), bool(match["both"])
        if match["gradient"]:
            if shift:
                raise ValueError(f"alignment method {name!r}: a gradient explains the piece predicted, no shift")
            return cls(None, None, False, both, match["gradient"])
        if match["mean"]:
            return cls(None, None, shift, both)
        layer, head = int(match["layer"]) - 1, None if match["head"] is None else int(match["head"]) - 1
        if layer < 0 or (head is not None and head < 0):
            raise ValueError(f"alignment method {name!r}: layers and heads count from 1")
        return cls(layer, head, shift, both)

    def check(self, layers: int, heads: int) -> None:
        if (self.layer is not None and self.layer >= layers) or (self.head is not None and self.head >= heads):
            raise ValueError(f"alignment method {self.name}: the model has {layers} layers of {heads} heads")


def every_method(layers: int, heads: int, gradients: bool = False) -> list[Method]:
    """Every head, every layer average and the average of all layers, each with and without the shift and the
    agreement of both directions; with ``gradients``, the gradient readings too."""
    methods = (
        [Method(None, None, False, both, name) for name in GRADIENTS for both in (False, True)] if gradients else []
    )
    for shift in (False, True):
        for both in (False, True):
            methods.append(Method(None, None, shift, both))
            for layer in range(layers):
                methods.append(Method(layer, None, shift, both))
                methods.extend(Method(layer, head, shift, both) for head in range(heads))
    return methods


@dataclass
class ForcedPair:
    """One sentence pair's cross-attention [L, H, rows, source pieces] and which word each piece belongs to."""

    cross: np.ndarray
    source_words: list[int]  # word index of each source piece (</s> not included)
    target_words: list[int]  # word index of each output piece (</s> not included)
    english: list[str]
    german: list[str]
    source_ids: list[int] = field(default_factory=list)  # ending with </s>
    target_ids: list[int] = field(default_factory=list)
    gradients: dict[str, np.ndarray] = field(default_factory=dict)  # GRADIENTS name → [target pieces, source pieces]
    prefixes: tuple[int, int] = (0, 0)  # language tokens before the source's and the target's words, not in cross


def word_pieces(loaded: LoadedCheckpoint, words: Sequence[str]) -> tuple[list[int], list[int]]:
    """Piece ids of space-separated words and the word of each piece. SentencePiece segments each whitespace-
    separated word on its own, so this is the sentence's own encoding with an exact piece → word map."""
    ids: list[int] = []
    owners: list[int] = []
    for index, encoded in enumerate(map(loaded.tokenizer.encode_text, words)):
        ids += encoded
        owners += [index] * len(encoded)
    return ids, owners


def force(loaded: LoadedCheckpoint, english: Sequence[str], german: Sequence[str]) -> list[ForcedPair]:
    """Teacher-force every German sentence on its English one and keep the cross-attention with the word maps."""
    if len(english) != len(german):
        raise ValueError(f"{len(english)} English sentences but {len(german)} German ones")
    limit = loaded.model.config.max_positions - 1
    pairs = []
    for start in range(0, len(english), BATCH):
        chunk = list(zip(english[start : start + BATCH], german[start : start + BATCH], strict=True))
        encoded = []
        for source_line, target_line in chunk:
            source_words, target_words = source_line.split(), target_line.split()
            source_ids, source_owner = word_pieces(loaded, source_words)
            target_ids, target_owner = word_pieces(loaded, target_words)
            if len(source_ids) + 1 > limit or len(target_ids) + 1 > limit:
                raise ValueError(f"a sentence pair is longer than the model reads ({limit} pieces)")
            encoded.append((source_ids, source_owner, target_ids, target_owner, source_words, target_words))
        # A model's language tokens (M2M100/NLLB) are read and written around the words, and their rows and
        # columns left out of the maps, as </s> is: no word owns them.
        source_prefix, target_prefix = list(loaded.tokenizer.source_prefix), list(loaded.tokenizer.target_prefix)
        maps = attention_for_many(
            loaded.model,
            loaded.tokenizer,
            [[*source_prefix, *e[0], EOS_ID] for e in encoded],
            [[*target_prefix, *e[2]] for e in encoded],
        )
        pairs += [
            ForcedPair(
                found.cross[:, :, len(target_prefix) :, len(source_prefix) :],
                e[1],
                e[3],
                e[4],
                e[5],
                [*source_prefix, *e[0], EOS_ID],
                [*target_prefix, *e[2]],
                prefixes=(len(source_prefix), len(target_prefix)),
            )
            for found, e in zip(maps, encoded, strict=True)
        ]
    return pairs


def words_of(pieces: Sequence[str]) -> tuple[list[str], list[int]]:
    """Words of a piece sequence (:meth:`Tokenizer.word_groups`: a new word at ▁ and at punctuation) and the word of
    each piece."""
    words, owners = [], []
    for index, group in enumerate(Tokenizer.word_groups(pieces)):
        words.append(join_pieces([pieces[i] for i in group]).replace(WORD_START, " ").strip())
        owners += [index] * len(group)
    return words, owners


def regroup(coarse: Sequence[str], fine: Sequence[str]) -> list[list[int]] | None:
    """For each word of ``coarse`` (whitespace-separated words, say), the words of ``fine`` (the tokenizer's, which
    also start a word at punctuation) that spell it, in order; None when the two do not spell the same letters."""
    spans, index = [], 0
    for word in coarse:
        span, rest = [], word
        while rest:
            while index < len(fine) and not fine[index]:
                index += 1
            if index == len(fine) or not rest.startswith(fine[index]):
                return None
            rest = rest[len(fine[index]) :]
            span.append(index)
            index += 1
        spans.append(span)
    return spans if all(not word for word in fine[index:]) else None


def from_maps(maps: AttentionMaps) -> ForcedPair:
    """A translation's own maps (the app's: source ending with </s>, output without it) as a :class:`ForcedPair`
    whose words are the tokenizer's words."""
    english, source_owner = words_of(maps.source_tokens[:-1])
    german, target_owner = words_of(maps.predicted_tokens[:-1])
    return ForcedPair(maps.cross, source_owner, target_owner, english, german)


def word_scores(pair: ForcedPair, method: Method) -> np.ndarray:
    """[German words, English words]: each German word's attention on each English word (rows averaged over the
    German word's pieces, columns summed over the English word's pieces, </s> left out)."""
    if method.gradient:
        rows = pair.gradients[method.gradient]
    else:
        weights = pair.cross if method.layer is None else pair.cross[method.layer : method.layer + 1]
        weights = weights.mean(axis=(0, 1)) if method.head is None else weights[:, method.head].mean(axis=0)
        rows = weights[1:] if method.shift else weights[:-1]  # shift: the row whose input is the piece
    source_pieces = len(pair.source_words)
    by_source = np.zeros((rows.shape[0], len(pair.english)))
    np.add.at(by_source.T, pair.source_words, rows[:, :source_pieces].T)
    scores = np.zeros((len(pair.german), len(pair.english)))
    counts = np.zeros(len(pair.german))
    np.add.at(scores, pair.target_words, by_source[: len(pair.target_words)])
    np.add.at(counts, pair.target_words, 1)
    return scores / np.maximum(counts, 1)[:, None]


def add_gradients(loaded: LoadedCheckpoint, pairs: Sequence[ForcedPair], names: Sequence[str] = GRADIENTS) -> None:
    """Each German piece's gradient reading over the source pieces (captum), stored in ``pair.gradients``.
    Saliency is the gradient's norm; input × gradient its product with the embedding, in absolute value."""
    attr = captum_attr()
    for pair in pairs:
        pair.gradients.update(_gradient_rows(attr, loaded.model, pair, names))


def _gradient_rows(attr, model, pair: ForcedPair, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The pair's German pieces scored as a batch of copies, each copy's score the log-probability of its own piece
    (the causal mask keeps the later pieces out), so one backward pass serves them all."""
    count = len(pair.target_ids)
    if not count:
        return {name: np.zeros((0, len(pair.source_ids))) for name in names}
    device = next(model.parameters()).device
    source = torch.tensor([pair.source_ids], device=device).expand(count, -1)
    target = torch.tensor([[BOS_ID, *pair.target_ids]], device=device).expand(count, -1)
    rows, pieces = torch.arange(count, device=device), torch.tensor(pair.target_ids, device=device)

    def score(embedded: torch.Tensor) -> torch.Tensor:
        memory, _ = model.encode(source, embedded=embedded)
        hidden, _, _ = model.decode(target, memory, model.source_mask(source))
        return torch.log_softmax(model.project(hidden[rows, rows]).float(), dim=-1)[rows, pieces]

    embedded = model.embed(source).detach().requires_grad_()
    found = {}
    for name in names:
        if name == "saliency":
            values = attr.Saliency(score).attribute(embedded, abs=False).norm(dim=-1)
        else:
            values = attr.InputXGradient(score).attribute(embedded).sum(dim=-1).abs()
        found[name] = values.detach().cpu().numpy()[pair.prefixes[1] :, pair.prefixes[0] :]
    return found


def links(pair: ForcedPair, method: Method, scores: np.ndarray | None = None) -> list[Link]:
    """Each German word linked to the English word it attends to most (with ``both``: only where that German word
    is also the English word's strongest), as sorted (english, german) pairs."""
    if not pair.english or not pair.german:
        return []
    scores = word_scores(pair, method) if scores is None else scores
    found = {(int(english), german) for german, english in enumerate(scores.argmax(axis=1))}
    if method.both:
        found &= {(english, int(german)) for english, german in enumerate(scores.argmax(axis=0))}
    return sorted(found)


COMPOUND_SHARE = 0.5  # see compound_links


def compound_links(pair: ForcedPair, method: Method, found: Iterable[Link], scores: np.ndarray | None = None):
    """Links for the English words ``found`` leaves unlinked (the last step of the classic symmetrisation): each
    such word linked to the German word that attends to it most, when that is at least :data:`COMPOUND_SHARE` of the
    German word's strongest attention. A German compound read from several English words ("central bank" →
    "Zentralbank") links to its first word; this finds the others, so that a word translated inside a compound is
    not drawn as untranslated. Sorted (english, german) pairs; measured in docs/trust.md."""
    if not pair.english or not pair.german:
        return []
    scores = word_scores(pair, method) if scores is None else scores
    linked = {english for english, _ in found}
    extra = []
    for english in range(scores.shape[1]):
        german = int(scores[:, english].argmax())
        if english not in linked and scores[german, english] >= COMPOUND_SHARE * scores[german].max():
            extra.append((english, german))
    return extra


@dataclass(frozen=True)
class Score:
    aer: float
    precision: float
    recall: float
    predicted: int
    gold: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "aer": round(self.aer, 4),
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "links": self.predicted,
            "gold_links": self.gold,
        }


def score(predicted: Iterable[Iterable[Link]], sure: Iterable[Iterable[Link]], possible=None) -> Score:
    """Corpus AER, precision and recall (Och & Ney 2003). ``possible`` defaults to the sure links; precision
    counts hits in the possible links, recall in the sure ones."""
    predicted, sure = [set(p) for p in predicted], [set(s) for s in sure]
    possible = sure if possible is None else [set(p) | s for p, s in zip(possible, sure, strict=True)]
    if not (len(predicted) == len(sure) == len(possible)):
        raise ValueError(f"{len(predicted)} predicted sentences but {len(sure)} gold ones")
    a = sum(len(p) for p in predicted)
    s = sum(len(g) for g in sure)
    a_sure = sum(len(p & g) for p, g in zip(predicted, sure, strict=True))
    a_possible = sum(len(p & g) for p, g in zip(predicted, possible, strict=True))
    aer = 1.0 - (a_sure + a_possible) / (a + s) if a + s else 0.0
    return Score(aer, a_possible / a if a else 0.0, a_sure / s if s else 0.0, a, s)


def counts(predicted: Iterable[Iterable[Link]], sure: Iterable[Iterable[Link]], possible=None) -> np.ndarray:
    """Each pair's (|A ∩ S|, |A ∩ P|, |A|, |S|), [pairs, 4]: what :func:`score` pools, kept per pair so that its
    AER can be resampled pair by pair (:func:`transformer.analysis.intervals.aer`)."""
    predicted, sure = [set(p) for p in predicted], [set(s) for s in sure]
    possible = sure if possible is None else [set(p) | s for p, s in zip(possible, sure, strict=True)]
    rows = [(len(a & s), len(a & p), len(a), len(s)) for a, s, p in zip(predicted, sure, possible, strict=True)]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def read_gold(path: str | Path, sentences: int) -> tuple[list[set[Link]], list[set[Link]]]:
    """Sure and possible links from a ``SENTENCE GERMAN ENGLISH S|P`` file (sentences from 1, words from 0), as
    (english, german) pairs per sentence."""
    sure: list[set[Link]] = [set() for _ in range(sentences)]
    possible: list[set[Link]] = [set() for _ in range(sentences)]
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) not in (3, 4) or not all(f.isdigit() for f in fields[:3]):
            raise ValueError(f"{path}:{number}: expected 'SENTENCE GERMAN ENGLISH [S|P]', got {line!r}")
        sentence, german, english = (int(f) for f in fields[:3])
        if not 1 <= sentence <= sentences:
            raise ValueError(f"{path}:{number}: sentence {sentence} outside 1–{sentences}")
        kind = fields[3].upper() if len(fields) == 4 else "S"
        (sure if kind == "S" else possible)[sentence - 1].add((english, german))
    return sure, possible


def pharaoh(found: Iterable[Link]) -> str:
    return " ".join(f"{english}-{german}" for english, german in found)


def evaluate_methods(
    pairs: Sequence[ForcedPair], sure: Sequence[set[Link]], possible: Sequence[set[Link]], methods: Sequence[Method]
) -> dict[str, Score]:
    return {method.name: score([links(pair, method) for pair in pairs], sure, possible) for method in methods}


def best_method(scores: dict[str, Score]) -> str:
    """The lowest AER; ties go to the simpler reading (a layer average before a head) by name order."""
    return min(scores, key=lambda name: (round(scores[name].aer, 6), "H" in name, name))
