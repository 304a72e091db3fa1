"""The joint English+German SentencePiece vocabulary (§5.1 uses one shared source–target vocabulary).

Byte fallback is on, so any Unicode input — emoji, CJK, control characters — encodes without an unknown piece and
decodes back without error. Two kinds of code point are cleaned first (:func:`clean`), in and out: lone surrogates,
which Python strings may hold but UTF-8 cannot (they become U+FFFD), and the bidirectional embedding, override and
isolate controls, which carry no words but reorder how the text around them is displayed. Ids 0–3 are fixed:
<pad>, <unk>, <s> (bos), </s> (eos).
"""

from __future__ import annotations

import io
import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
WORD_START = "▁"  # SentencePiece's marker for a piece that begins a word
SPECIAL_PIECES = frozenset({"<pad>", "<unk>", "<s>", "</s>"})


BIDI_CONTROLS = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
_UNCLEAN = re.compile("[\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD and bidirectional formatting controls removed. One regular
    expression search when there is nothing to clean (every training sentence goes through here)."""
    if _UNCLEAN.search(text) is None:
        return text
    if any("\ud800" <= character <= "\udfff" for character in text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.translate(BIDI_CONTROLS)


def byte_value(piece: str) -> int | None:
    """The byte of a byte-fallback piece such as ``<0x4C>``, else None."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


def join_pieces(pieces: Sequence[str]) -> str:
    """Pieces joined into text as written: byte-fallback pieces decoded (invalid UTF-8 shown as �), ▁ kept."""
    text, pending = [], bytearray()
    for piece in pieces:
        value = byte_value(piece)
        if value is not None:
            pending.append(value)
            continue
        if pending:
            text.append(pending.decode("utf-8", errors="replace"))
            pending.clear()
        text.append(piece)
    if pending:
        text.append(pending.decode("utf-8", errors="replace"))
    return "".join(text)


CONTINUES = "·"  # shown before a piece that continues the word before it
_TAG = re.compile(r"__\w+__|>>\w+<<|<[^<>\s]+>")  # language codes and other tags a tokenizer adds (__de__, >>deu<<)


def readable_piece(piece: str) -> str:
    """A piece as a reader sees it: a word's first piece without SentencePiece's ▁ marker, a piece that continues a
    word after ``·`` ("▁Zins", "sätze" → "Zins", "·sätze"); special tokens, tags, punctuation and byte pieces as
    they are, and a lone ▁ (a space before something the vocabulary lacks) as ␣. A byte piece of a printable ASCII
    character reads as that character; other bytes (part of a longer UTF-8 character) stay as the model reads them."""
    value = byte_value(piece)
    if value is not None and value < 0x80 and chr(value).isprintable():
        piece = chr(value)
    if piece in SPECIAL_PIECES or _TAG.fullmatch(piece) or byte_value(piece) is not None:
        return piece
    if piece.startswith(WORD_START):
        return piece.lstrip(WORD_START) or "␣"
    if all(unicodedata.category(character).startswith("P") for character in piece):
        return piece
    return CONTINUES + piece


def readable_pieces(pieces: Iterable[str]) -> list[str]:
    """:func:`readable_piece` of each piece."""
    return [readable_piece(piece) for piece in pieces]


class Tokenizer:
    """A loaded SentencePiece model with the project's special-token conventions."""

    def __init__(self, model_proto: bytes) -> None:
        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)
        ids = (self.processor.pad_id(), self.processor.unk_id(), self.processor.bos_id(), self.processor.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise ValueError(f"SentencePiece model has special ids {ids}, expected (0, 1, 2, 3) for pad/unk/bos/eos")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        path = Path(path)
        try:
            proto = path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: SentencePiece model not found") from None
        try:
            return cls(proto)
        except (RuntimeError, OSError) as error:
            raise ValueError(f"{path}: not a valid SentencePiece model ({error})") from None

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.model_proto)

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Text → piece ids, without <s> or </s> (after :func:`clean`)."""
        return self.processor.encode(clean(text))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.processor.encode([clean(text) for text in texts])

    # The ids a model reads before a source's text and writes before a translation's text: none here; a Hugging
    # Face M2M100/NLLB model's language tokens (transformer.formats.hub.HubTokenizer).
    source_prefix: tuple[int, ...] = ()
    target_prefix: tuple[int, ...] = ()

    def encode_text(self, text: str) -> list[int]:
        """The text's own pieces, without any language token (:meth:`encode` adds the source's)."""
        return self.encode(text)

    def encode_target(self, text: str) -> list[int]:
        """A translation's ids as the model writes them (without </s>): its target-language token first where the
        model has one."""
        return [*self.target_prefix, *self.encode_text(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Piece ids → text; special ids are dropped (and what :func:`clean` removes)."""
        return clean(self.processor.decode([i for i in ids if i > EOS_ID]))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """The pieces as the model sees them, specials spelled <s>, </s> and <pad>."""
        return [self.processor.id_to_piece(int(i)) for i in ids]

    @staticmethod
    def word_groups(pieces: Sequence[str]) -> list[list[int]]:
        """Group piece positions into words: a new word starts at a piece with the ▁ marker, at a special token, and
        at a piece of punctuation only (so "difficult." is the two words "difficult" and ".", as in the paper).
        Byte-fallback pieces (``<0x4C>``, for characters outside the vocabulary) continue the word they are in."""
        groups: list[list[int]] = []
        previous_special = True
        for position, piece in enumerate(pieces):
            special = piece in SPECIAL_PIECES
            text = join_pieces([piece.lstrip(WORD_START)])
            punctuation = bool(text) and all(unicodedata.category(c).startswith("P") for c in text)
            if special or previous_special or punctuation or piece.startswith(WORD_START):
                groups.append([position])
            else:
                groups[-1].append(position)
            previous_special = special
        return groups


def train_tokenizer(
    sentences: Iterable[str],
    vocab_size: int = 8000,
    max_sentences: int = 1_000_000,
    seed: int = 1,
) -> Tokenizer:
    """Train a joint unigram SentencePiece model on the given (English and German) sentences."""
    pool = [s for s in sentences if s.strip()]
    if not pool:
        raise ValueError("no sentences to train the tokenizer on")
    if len(pool) > max_sentences:
        pool = random.Random(seed).sample(pool, max_sentences)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(pool),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        byte_fallback=True,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        pad_piece="<pad>",
        unk_piece="<unk>",
        bos_piece="<s>",
        eos_piece="</s>",
        input_sentence_size=max_sentences,
        shuffle_input_sentence=False,
        num_threads=2,
        minloglevel=2,
    )
    return Tokenizer(model.getvalue())
