"""Word alignment read from cross-attention, checked against a bilingual dictionary: for each output word with a
translation partner in its source sentence, is the source word a head attends to most one of those partners?

The dictionary (``resources/en_de_dictionary.tsv``) pairs each frequent English word with the German words that
co-occur with it most consistently in the training corpora (Dice coefficient over sentence pairs);
``python -m transformer dictionary`` rebuilds it (:func:`build_dictionary`). The head scores
(:mod:`transformer.analysis.heads`) and the health measure (:mod:`transformer.analysis.health`) count hits with
:class:`AlignmentTally`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transformer.analysis.attention import PUNCTUATION, SPECIAL_PIECES, merge_matrix, merge_tokens, word_groups
from transformer.paper.tokenizer import EOS_ID

RESOURCES = Path(__file__).resolve().parent / "resources"
DICTIONARY_FILE = RESOURCES / "en_de_dictionary.tsv"
WORD = re.compile(r"\w+", re.UNICODE)


def normalise(word: str) -> str:
    return word.lower().strip()


def load_dictionary(path: str | Path = DICTIONARY_FILE) -> dict[str, set[str]]:
    """English word → German words (lower case) from a TSV of ``english <TAB> german <TAB> dice`` lines."""
    dictionary: dict[str, set[str]] = {}
    path = Path(path)
    if not path.exists():
        return dictionary
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        english, german, *_ = line.split("\t")
        dictionary.setdefault(english, set()).add(german)
    return dictionary


def word_alignment_hits(
    cross: np.ndarray,
    source_words: Sequence[str],
    output_words: Sequence[str],
    dictionary: dict[str, set[str]],
) -> tuple[np.ndarray, int, np.ndarray, int]:
    """For word-level cross-attention [L, H, output words, source words]: per head, how many output words attend
    most to a dictionary partner (and how many output words have one), and how many agree with the other heads'
    consensus (and how many output words were counted). Punctuation and special tokens are not counted."""
    num_layers, num_heads = cross.shape[:2]
    flat = cross.reshape(num_layers * num_heads, *cross.shape[2:])  # [LH, T, S]
    choice = flat.argmax(-1)  # [LH, T]
    total = flat.sum(0)
    dictionary_hits = np.zeros(num_layers * num_heads)
    consensus_hits = np.zeros(num_layers * num_heads)
    dictionary_words = counted = 0
    for t, word in enumerate(output_words):
        if word in SPECIAL_PIECES or not WORD.search(word) or word in PUNCTUATION:
            continue
        counted += 1
        # Consensus of the other heads: the mean without this head's own row.
        others = (total[t][None, :] - flat[:, t]).argmax(-1)  # [LH]
        consensus_hits += choice[:, t] == others
        partners = {
            s for s, source in enumerate(source_words) if normalise(word) in dictionary.get(normalise(source), ())
        }
        if partners:
            dictionary_words += 1
            dictionary_hits += np.isin(choice[:, t], list(partners))
    shape = (num_layers, num_heads)
    return dictionary_hits.reshape(shape), dictionary_words, consensus_hits.reshape(shape), counted


def sentence_alignment_hits(
    tokenizer, source_ids: Sequence[int], output_ids: Sequence[int], cross: np.ndarray, dictionary: dict[str, set[str]]
) -> tuple[np.ndarray, int, np.ndarray, int]:
    """:func:`word_alignment_hits` of one sentence from its piece-level cross-attention [L, H, outputs + 1, source]
    (a teacher-forced pass over ``<s>`` + ``output_ids``): row t is the query that predicts piece t of
    ``output_ids`` + ``</s>``, so rows are grouped by the words they predict."""
    predicted, source_tokens = tokenizer.pieces([*output_ids, EOS_ID]), tokenizer.pieces(source_ids)
    output_groups, source_groups = word_groups(predicted), word_groups(source_tokens)
    return word_alignment_hits(
        merge_matrix(cross, output_groups, source_groups),
        merge_tokens(source_tokens, source_groups),
        merge_tokens(predicted, output_groups),
        dictionary,
    )


@dataclass
class AlignmentTally:
    """Word-alignment hits of each cross-attention head [L, H], summed over sentences (:func:`word_alignment_hits`):
    output words whose most attended source word is a dictionary partner of theirs, out of the words that have one,
    and output words whose choice agrees with the other heads', out of all words counted."""

    dictionary_hits: np.ndarray
    consensus_hits: np.ndarray
    dictionary_words: int = 0
    counted: int = 0

    @classmethod
    def of_shape(cls, layers: int, heads: int) -> AlignmentTally:
        return cls(np.zeros((layers, heads)), np.zeros((layers, heads)))

    def add(
        self,
        tokenizer,
        source_ids: Sequence[int],
        output_ids: Sequence[int],
        cross: np.ndarray,
        dictionary: dict[str, set[str]],
    ) -> tuple[np.ndarray, int]:
        """One sentence's piece-level cross-attention (see :func:`sentence_alignment_hits`); returns that sentence's
        dictionary hits [L, H] and its words with a dictionary partner (for intervals over sentences)."""
        dictionary_hits, dictionary_words, consensus_hits, counted = sentence_alignment_hits(
            tokenizer, source_ids, output_ids, cross, dictionary
        )
        self.dictionary_hits += dictionary_hits
        self.dictionary_words += dictionary_words
        self.consensus_hits += consensus_hits
        self.counted += counted
        return np.asarray(dictionary_hits, dtype=float), dictionary_words

    def dictionary_share(self) -> np.ndarray:
        """``alignment_dictionary`` [L, H]; NaN when no output word had a dictionary partner."""
        shape = self.dictionary_hits.shape
        return self.dictionary_hits / self.dictionary_words if self.dictionary_words else np.full(shape, np.nan)

    def consensus_share(self) -> np.ndarray:
        """``alignment_consensus`` [L, H]; NaN when no output word was counted."""
        return self.consensus_hits / self.counted if self.counted else np.full(self.consensus_hits.shape, np.nan)


# ------------------------------------------------------------------------------------------------ the dictionary
def corpus_words(line: str) -> set[str]:
    return {normalise(word) for word in WORD.findall(line) if not word.isdigit()}


def build_dictionary(
    pairs: Iterable[tuple[str, str]], min_count: int = 5, min_dice: float = 0.15, per_word: int = 3
) -> list[tuple[str, str, float]]:
    """(english, german, dice) for each English word's ``per_word`` most associated German words, where
    dice = 2·c(e, g) / (c(e) + c(g)) over sentence pairs; pairs seen fewer than ``min_count`` times or with
    dice < ``min_dice`` are dropped."""
    english_counts: Counter[str] = Counter()
    german_counts: Counter[str] = Counter()
    sentences = []
    for english, german in pairs:
        e, g = corpus_words(english), corpus_words(german)
        english_counts.update(e)
        german_counts.update(g)
        sentences.append((e, g))
    joint: Counter[tuple[str, str]] = Counter()
    for e, g in sentences:
        e = [word for word in e if english_counts[word] >= min_count]
        g = [word for word in g if german_counts[word] >= min_count]
        joint.update((a, b) for a in e for b in g)
    best: dict[str, list[tuple[float, str]]] = {}
    for (english, german), count in joint.items():
        if count < min_count:
            continue
        dice = 2 * count / (english_counts[english] + german_counts[german])
        if dice >= min_dice:
            best.setdefault(english, []).append((dice, german))
    rows = []
    for english in sorted(best):
        for dice, german in sorted(best[english], reverse=True)[:per_word]:
            rows.append((english, german, round(dice, 3)))
    return rows
