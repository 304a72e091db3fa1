"""Attention heads against gold syntax, as Clark et al. (2019, "What does BERT look at? An analysis of BERT's
attention") measured BERT's: for every word, the *other* word a head attends to most (word level: a word's pieces'
rows averaged, the other word's pieces summed, special tokens left out), compared with its gold syntactic head
(**dependent → head**) and, from the head word, with its dependent (**head → dependent**), per dependency relation;
each beside the best **fixed-offset baseline** for that relation and direction (always predicting the word k places
away, the k that is right most often).

Gold syntax comes from Universal Dependencies treebanks in CoNLL-U (``../shared/data/syntax/``: English PUD and its
German translation, German PUD). Encoder heads are read on the English sentences; decoder self-attention heads on the
German sentences teacher-forced after their English (the rows whose *input* is the word, as the decoder reads it;
under the causal mask a word only sees the words before it, so dependent → head can only be right when the head
comes first). Words are the treebank's surface tokens (a German contraction such as "am" = "an dem" is one word whose
head is its words' head outside it); the model's pieces are mapped onto them by their letters, and a sentence whose
pieces do not spell its tokens is left out and counted.

Relations are the universal ones (``nmod:poss`` counts as ``nmod``); ``punct`` and ``root`` are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from transformer.paper.tokenizer import EOS_ID, SPECIAL_PIECES, WORD_START, Tokenizer, join_pieces

SKIPPED_RELATIONS = frozenset({"punct", "root"})
DIRECTIONS = ("dependent_to_head", "head_to_dependent")


@dataclass
class Tree:
    """One treebank sentence: its surface tokens, each token's head token (-1: the root) and relation."""

    text: str
    tokens: list[str]
    heads: list[int]
    relations: list[str]

    def arcs(self) -> Iterable[tuple[int, int, str]]:
        """(dependent, head, relation) of every scored arc."""
        for dependent, (head, relation) in enumerate(zip(self.heads, self.relations, strict=True)):
            if head >= 0 and relation not in SKIPPED_RELATIONS:
                yield dependent, head, relation


def _tree(text: str, rows: list[list[str]]) -> Tree:
    """A tree from one sentence's CoNLL-U rows: syntactic words folded into the surface tokens that spell them."""
    token_of: dict[str, int] = {}  # word ID → surface token index
    tokens: list[str] = []
    words: list[tuple[str, str, str]] = []  # (ID, HEAD, DEPREL) of every syntactic word
    covered_until = 0
    for row in rows:
        ident = row[0]
        if "." in ident:  # an empty node of enhanced dependencies
            continue
        if "-" in ident:  # a multiword token: its words follow and all belong to it
            first, last = (int(part) for part in ident.split("-"))
            for word in range(first, last + 1):
                token_of[str(word)] = len(tokens)
            tokens.append(row[1])
            covered_until = last
            continue
        if int(ident) > covered_until:
            token_of[ident] = len(tokens)
            tokens.append(row[1])
        words.append((ident, row[6], row[7].split(":")[0]))
    heads, relations = [-1] * len(tokens), ["root"] * len(tokens)
    spoken_for: set[int] = set()
    for ident, head, relation in words:
        token = token_of[ident]
        head_token = -1 if head == "0" else token_of[head]
        if head_token != token and token not in spoken_for:  # the first word whose head lies outside its token
            heads[token], relations[token] = head_token, relation
            spoken_for.add(token)
    return Tree(text, tokens, heads, relations)


def read_conllu(path: str | Path) -> list[Tree]:
    """Every sentence of a CoNLL-U file, in order."""
    trees, rows, text = [], [], ""
    for line in [*Path(path).read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("# text = "):
            text = line[len("# text = ") :]
        elif line.startswith("#"):
            continue
        elif line.strip():
            rows.append(line.split("\t"))
        elif rows:
            trees.append(_tree(text, rows))
            rows, text = [], ""
    return trees


def piece_owners(pieces: Sequence[str], tokens: Sequence[str]) -> list[int] | None:
    """The token each piece spells part of (a bare word-start piece: the token after it; -1 for special tokens);
    None when the pieces do not spell the tokens' letters (a character the tokenizer normalises, say)."""
    ends = np.cumsum([len(_letters([token])) for token in tokens])
    owners, seen = [], []
    for piece in pieces:
        if piece in SPECIAL_PIECES:
            owners.append(-1)
            continue
        start = len(_letters(seen).rstrip("\ufffd"))  # a character still being spelled by byte pieces counts as not yet
        seen.append(piece)
        inside = len(ends) > 0 and start < ends[-1]
        owners.append(int(np.searchsorted(ends, start, side="right")) if inside else -1)
    if _letters(seen) != "".join(_letters([token]) for token in tokens):
        return None
    return owners


def _letters(pieces: Sequence[str]) -> str:
    return join_pieces(pieces).replace(WORD_START, "").replace(" ", "")


def word_map(
    weights: np.ndarray, row_owner: Sequence[int], column_owner: Sequence[int], words: int, key_words: int | None = None
) -> np.ndarray:
    """[..., queries, keys] piece attention → [..., words, key words] (``key_words``: as many as ``words`` unless
    given): a word's rows averaged, a word's columns summed; pieces owned by no word (-1) left out."""
    key_words = words if key_words is None else key_words
    rows = np.asarray(row_owner)
    columns = np.asarray(column_owner)
    keep_columns = np.flatnonzero(columns >= 0)
    by_column = np.zeros((*weights.shape[:-1], key_words))
    np.add.at(np.moveaxis(by_column, -1, 0), columns[keep_columns], np.moveaxis(weights[..., keep_columns], -1, 0))
    keep_rows = np.flatnonzero(rows >= 0)
    summed = np.zeros((*weights.shape[:-2], words, key_words))
    np.add.at(np.moveaxis(summed, -2, 0), rows[keep_rows], np.moveaxis(by_column[..., keep_rows, :], -2, 0))
    counts = np.bincount(rows[keep_rows], minlength=words)
    return summed / np.maximum(counts, 1)[:, None]


def strongest_other(word_weights: np.ndarray) -> np.ndarray:
    """[..., words, words] → [..., words]: each word's most-attended word other than itself (-1 for a one-word
    sentence)."""
    n = word_weights.shape[-1]
    if n < 2:
        return np.full(word_weights.shape[:-1], -1)
    masked = np.where(np.eye(n, dtype=bool), -np.inf, word_weights)
    return masked.argmax(axis=-1)


@dataclass
class Tally:
    """Counts per relation: ``hits[relation]`` [layers, heads, directions] right, ``total[relation]`` arcs, and
    ``offsets[relation]`` {offset: [directions] right} for the fixed-offset baselines."""

    hits: dict[str, np.ndarray] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    offsets: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    sentences: int = 0
    skipped: int = 0

    def add(self, tree: Tree, strongest: np.ndarray) -> None:
        """One sentence: ``strongest`` [layers, heads, words] from :func:`strongest_other`."""
        self.sentences += 1
        for dependent, head, relation in tree.arcs():
            hits = self.hits.setdefault(relation, np.zeros((*strongest.shape[:2], 2), dtype=np.int64))
            hits[..., 0] += strongest[..., dependent] == head
            hits[..., 1] += strongest[..., head] == dependent
            self.total[relation] = self.total.get(relation, 0) + 1
            offsets = self.offsets.setdefault(relation, {})
            # dependent → head is right for offset head − dependent; head → dependent for dependent − head
            offsets.setdefault(head - dependent, np.zeros(2, dtype=np.int64))[0] += 1
            offsets.setdefault(dependent - head, np.zeros(2, dtype=np.int64))[1] += 1

    def relations(self, minimum: int = 1) -> list[str]:
        """Relations with at least ``minimum`` arcs, most frequent first."""
        return sorted((r for r, n in self.total.items() if n >= minimum), key=lambda r: (-self.total[r], r))

    def accuracy(self, relation: str) -> np.ndarray:
        """[layers, heads, directions]."""
        return self.hits[relation] / self.total[relation]

    def offset_accuracy(self, relation: str, offset: int, direction: int) -> float:
        """How often always taking the word ``offset`` places away is right, in one direction."""
        found = self.offsets[relation].get(offset)
        return 0.0 if found is None else float(found[direction] / self.total[relation])

    def baseline(self, relation: str) -> tuple[np.ndarray, np.ndarray]:
        """The best fixed offset per direction and its accuracy: ([directions] offsets, [directions] accuracy)."""
        table = self.offsets[relation]
        offsets = sorted(table)
        counts = np.stack([table[offset] for offset in offsets])  # [offsets, directions]
        best = counts.argmax(axis=0)
        return np.array(offsets)[best], counts[best, [0, 1]] / self.total[relation]


@dataclass
class Reading:
    """One sentence as a kind of head read it: its tree, and [layers, heads, words] the most-attended other word."""

    tree: Tree
    strongest: np.ndarray


def tally(readings: Iterable[Reading]) -> Tally:
    counts = Tally()
    for reading in readings:
        counts.add(reading.tree, reading.strongest)
    return counts


def read_side(tokenizer: Tokenizer, tree: Tree, limit: int, target: bool) -> tuple[list[int], list[int]] | None:
    """One side of a pair: the ids (a source's ending with </s>; ``target``: the output's, without <s>) and the owner
    of each piece (a model's language tokens, M2M100/NLLB, spell no word: owned by none, as </s> is); None when its
    pieces do not spell the tree's tokens or it is longer than ``limit`` pieces (an output with its <s>)."""
    if target:
        ids, skip = tokenizer.encode_target(tree.text), len(tokenizer.target_prefix)
        if len(ids) + 1 > limit:
            return None
    else:
        ids, skip = [*tokenizer.encode(tree.text), EOS_ID], len(tokenizer.source_prefix)
        if len(ids) > limit:
            return None
    owners = piece_owners(tokenizer.pieces(ids[skip:]), tree.tokens)
    return None if owners is None else (ids, [-1] * skip + owners)


def read_pair(
    tokenizer: Tokenizer, english: Tree, german: Tree, limit: int
) -> tuple[list[int], list[int], list[int], list[int]] | None:
    """Source ids (ending with </s>), output ids, and the owners of the source's and the output's pieces
    (:func:`read_side`); None when either side cannot be read."""
    source, output = read_side(tokenizer, english, limit, False), read_side(tokenizer, german, limit, True)
    if source is None or output is None:
        return None
    return source[0], output[0], source[1], output[1]
