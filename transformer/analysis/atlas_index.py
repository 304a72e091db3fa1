"""Where else does a head do this? An index of every head's strongest link from every word of a few thousand dev
and test sentence pairs (never training data), and the two questions it answers in well under a second:

- :func:`strongest` — for one head, the sentences and word pairs where its strongest link is strongest;
- :func:`heads_linking` — for two words typed by a person ("it" → "animal"), the heads that link the first to the
  second most often, over every sentence that holds both.

Each pair's reference German is teacher-forced after its English, and every head's attention is read at word level
(a word's pieces' rows averaged, the other word's pieces summed, special tokens left out; words as the tokenizer
splits them, punctuation apart): for each query word, the other word it attends to most and the weight on it.
Encoder heads link English words, decoder heads German words (the rows whose input is the word), cross heads a
German word (the rows that predict it) to an English word. Built once per checkpoint (about a minute on two cores
for :data:`SOURCES`) and stored beside it as ``atlas_index.npz``, tied to the weights by their fingerprint.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transformer.analysis import syntax
from transformer.analysis import word_alignment as wa
from transformer.analysis.attention import KINDS, attention_for_many
from transformer.formats.checkpoint import LoadedCheckpoint, fingerprint, write_atomically
from transformer.paper.data import DATA_ROOT, has_pairs, read_pairs
from transformer.paper.tokenizer import EOS_ID

INDEX_FILE = "atlas_index.npz"
# (corpus prefix, sentences): 2,500 pairs of the dev and test sets, none of them training data.
SOURCES = (("test/tatoeba_new", 1000), ("test/multi30k_test2016", 1000), ("dev/newstest2013", 500))
BATCH = 16


@dataclass
class Index:
    """Per kind: ``sentence`` [links] the pair each query word is in, ``query`` [links] its word position,
    ``key`` [links, layers × heads] the word each head attends to most from it, ``weight`` [links, layers × heads]
    how much; ``english`` and ``german`` the pairs' words; ``names`` the corpora the pairs came from."""

    english: list[list[str]]
    german: list[list[str]]
    sentence: dict[str, np.ndarray]
    query: dict[str, np.ndarray]
    key: dict[str, np.ndarray]
    weight: dict[str, np.ndarray]
    heads: int
    names: list[str]
    fingerprint: str = ""
    _rows: dict = field(default_factory=dict, repr=False)  # kind → query word (lower case) → rows, built on first use

    def rows_of(self, kind: str, word: str) -> np.ndarray:
        """The links whose query word is ``word`` (case ignored)."""
        if kind not in self._rows:
            by_word: dict[str, list[int]] = {}
            sentences, queries = self.sentence[kind], self.query[kind]
            for row in range(len(sentences)):
                sentence = int(sentences[row])
                by_word.setdefault(_normal(self.words(kind, sentence)[0][queries[row]]), []).append(row)
            self._rows[kind] = {key: np.array(rows) for key, rows in by_word.items()}
        return self._rows[kind].get(_normal(word), np.zeros(0, dtype=int))

    def words(self, kind: str, sentence: int) -> tuple[list[str], list[str]]:
        """The query side's words and the key side's words of one pair for a kind of head."""
        english, german = self.english[sentence], self.german[sentence]
        return (english, english) if kind == "encoder" else (german, german) if kind == "decoder" else (german, english)


def _word_links(weights: np.ndarray, row_owner: Sequence[int], column_owner: Sequence[int], words: tuple[int, int]):
    """[layers, heads, queries, keys] piece attention → ([query words, layers × heads] the key word each head
    attends to most, and its weight). ``words``: (query words, key words), one number for self-attention, whose
    strongest link is never the word itself."""
    layers, heads = weights.shape[:2]
    mapped = syntax.word_map(weights, row_owner, column_owner, *words)
    key = syntax.strongest_other(mapped) if len(words) == 1 else mapped.argmax(-1)
    weight = np.take_along_axis(mapped, np.maximum(key, 0)[..., None], -1)[..., 0]
    return key.reshape(layers * heads, -1).T, weight.reshape(layers * heads, -1).T


@torch.no_grad()
def build(loaded: LoadedCheckpoint, pairs: Sequence[tuple[str, str]], names: Sequence[str] = ()) -> Index:
    """The index of ``pairs`` (English, reference German); pairs longer than the model reads are left out."""
    limit = loaded.model.config.max_positions - 1
    tokenizer = loaded.tokenizer
    prepared = []
    for english, german in pairs:
        source_ids, output_ids = [*tokenizer.encode(english), EOS_ID], tokenizer.encode_target(german)
        if len(source_ids) > limit or len(output_ids) + 1 > limit or not output_ids or len(source_ids) < 2:
            continue
        english_words, source_owner = wa.words_of(tokenizer.pieces(source_ids[:-1]))
        german_words, output_owner = wa.words_of(tokenizer.pieces(output_ids))
        if max(len(english_words), len(german_words)) > 255 or min(len(english_words), len(german_words)) < 2:
            continue  # keys are stored as bytes; a one-word side has no other word to link
        prepared.append((source_ids, output_ids, english_words, german_words, [*source_owner, -1], output_owner))
    parts = {kind: {"sentence": [], "query": [], "key": [], "weight": []} for kind in KINDS}
    for start in range(0, len(prepared), BATCH):
        chunk = prepared[start : start + BATCH]
        maps = attention_for_many(loaded.model, tokenizer, [c[0] for c in chunk], [c[1] for c in chunk])
        for offset, ((_, _, english, german, source_owner, output_owner), found) in enumerate(
            zip(chunk, maps, strict=True)
        ):
            number = start + offset
            predicting = [*output_owner, -1]  # decoder rows 0… predict the output's pieces, then </s>
            reading = [-1, *output_owner]  # decoder rows 1… read them (row 0 reads <s>)
            links = {
                "encoder": _word_links(found.encoder, source_owner, source_owner, (len(english),)),
                "decoder": _word_links(found.decoder, reading, reading, (len(german),)),
                "cross": _word_links(found.cross, predicting, source_owner, (len(german), len(english))),
            }
            for kind, (key, weight) in links.items():
                parts[kind]["sentence"].append(np.full(len(key), number, dtype=np.int32))
                parts[kind]["query"].append(np.arange(len(key), dtype=np.uint8))
                parts[kind]["key"].append(key.astype(np.uint8))
                parts[kind]["weight"].append(weight.astype(np.float16))
    joined = {kind: {name: np.concatenate(values) for name, values in part.items()} for kind, part in parts.items()}
    config = loaded.model.config
    return Index(
        english=[c[2] for c in prepared],
        german=[c[3] for c in prepared],
        sentence={kind: joined[kind]["sentence"] for kind in KINDS},
        query={kind: joined[kind]["query"] for kind in KINDS},
        key={kind: joined[kind]["key"] for kind in KINDS},
        weight={kind: joined[kind]["weight"] for kind in KINDS},
        heads=config.num_heads,
        names=list(names),
        fingerprint=fingerprint(loaded.path),
    )


def default_pairs(languages: tuple[str, str] = ("en", "de")) -> tuple[list[tuple[str, str]], list[str]]:
    """The pairs of :data:`SOURCES` that exist here, and their names."""
    pairs, names = [], []
    for prefix, count in SOURCES:
        path = DATA_ROOT / prefix
        if has_pairs(path, languages):
            taken = read_pairs(path, languages)[:count]
            pairs += taken
            names.append(f"{Path(prefix).name} ({len(taken)})")
    return pairs, names


def save(loaded: LoadedCheckpoint, index: Index) -> Path:
    arrays = {
        f"{kind}.{name}": getattr(index, name)[kind]
        for kind in KINDS
        for name in ("sentence", "query", "key", "weight")
    }
    words = json.dumps({"english": index.english, "german": index.german, "heads": index.heads, "names": index.names})
    arrays["meta"] = np.frombuffer(words.encode("utf-8"), dtype=np.uint8)
    arrays["fingerprint"] = np.frombuffer(index.fingerprint.encode("ascii"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path = loaded.store / INDEX_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, buffer.getvalue())
    return path


def load(loaded: LoadedCheckpoint) -> Index | None:
    """The index stored for exactly these weights, or None."""
    path = loaded.store / INDEX_FILE
    if not path.is_file():
        return None
    try:
        with np.load(path) as stored:
            if bytes(stored["fingerprint"]).decode("ascii") != fingerprint(loaded.path):
                return None
            meta = json.loads(bytes(stored["meta"]).decode("utf-8"))
            fields = {
                name: {kind: stored[f"{kind}.{name}"] for kind in KINDS}
                for name in ("sentence", "query", "key", "weight")
            }
    except (OSError, ValueError, KeyError):
        return None
    return Index(meta["english"], meta["german"], heads=meta["heads"], names=meta["names"], **fields)


def strongest(index: Index, kind: str, layer: int, head: int, top: int = 10) -> list[dict]:
    """The ``top`` sentences where the head's strongest link is strongest (one link per sentence, 0-based layer and
    head): sentence number, query word, key word and weight, strongest first."""
    column = layer * index.heads + head
    weight = index.weight[kind][:, column].astype(np.float32)
    order = np.argsort(-weight, kind="stable")
    found, seen = [], set()
    for row in order:
        sentence = int(index.sentence[kind][row])
        if sentence in seen:
            continue
        seen.add(sentence)
        queries, keys = index.words(kind, sentence)
        query, key = int(index.query[kind][row]), int(index.key[kind][row, column])
        found.append(
            {
                "sentence": sentence,
                "query": query,
                "key": key,
                "query_word": queries[query],
                "key_word": keys[key],
                "weight": float(weight[row]),
            }
        )
        if len(found) == top:
            break
    return found


def _normal(word: str) -> str:
    return word.strip().lower()


def heads_linking(index: Index, first: str, second: str, top: int = 10) -> list[dict]:
    """The heads whose strongest link from the word ``first`` is the word ``second`` most often, over every sentence
    (and kind of head) where ``first`` is a query word and ``second`` a key word; each with the count and the number
    of chances (case ignored)."""
    first, second = _normal(first), _normal(second)
    results = []
    for kind in KINDS:
        chances = hits = 0
        for row in index.rows_of(kind, first):
            sentence = int(index.sentence[kind][row])
            keys = index.words(kind, sentence)[1]
            targets = [i for i, word in enumerate(keys) if _normal(word) == second]
            if kind != "cross":  # a self-attention head's strongest link is never the query word itself
                targets = [i for i in targets if i != int(index.query[kind][row])]
            if targets:
                chances += 1
                hits = hits + np.isin(index.key[kind][row], targets)
        for column in np.flatnonzero(hits) if chances else ():
            layer, head = divmod(int(column), index.heads)
            results.append(
                {"kind": kind, "layer": layer + 1, "head": head + 1, "hits": int(hits[column]), "chances": chances}
            )
    return sorted(results, key=lambda r: (-r["hits"] / r["chances"], -r["hits"]))[:top]
