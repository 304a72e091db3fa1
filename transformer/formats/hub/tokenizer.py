"""The model's own tokenizer (transformers' ``AutoTokenizer``), wrapped to give and take the reordered ids, with the
languages of a multilingual model as its forced first tokens."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from transformer.formats.hub.families import NLLB_CODES, HubError, transformers_module
from transformer.formats.hub.weights import Vocabulary
from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, clean


class HubTokenizer(Tokenizer):
    """A Hugging Face model's own tokenizer, giving and taking this project's reordered ids (:class:`Vocabulary`).

    ``encode`` returns what the model reads before its closing </s>: for M2M100/NLLB the source-language token
    first. Pieces are the tokenizer's own, so words start at ▁ as with the project's SentencePiece model."""

    def __init__(
        self, tokenizer, vocabulary: Vocabulary, source_prefix: Sequence[int] = (), target_prefix: Sequence[int] = ()
    ) -> None:
        self.hub = tokenizer
        self.source_prefix, self.target_prefix = tuple(source_prefix), tuple(target_prefix)
        self.vocabulary = vocabulary
        self.from_hub = vocabulary.to_ours()
        self.to_hub = vocabulary.order
        specials = set(getattr(tokenizer, "all_special_ids", []))
        self.special = {self.from_hub[i] for i in specials if i in self.from_hub} | {PAD_ID, UNK_ID, BOS_ID, EOS_ID}
        # GPT-2's byte-level BPE (BART's): a space is "Ġ" and é "Ã©" in its pieces, shown as SentencePiece's
        self.byte_level = "Ġ" in getattr(tokenizer, "get_vocab", dict)()

    @property
    def vocab_size(self) -> int:
        return self.vocabulary.size

    def _ours(self, ids: Iterable[int]) -> list[int]:
        return [self.from_hub.get(int(i), UNK_ID) for i in ids]

    def encode_text(self, text: str) -> list[int]:
        return self._ours(self.hub(clean(text), add_special_tokens=False)["input_ids"])

    def encode(self, text: str) -> list[int]:
        return [*self.source_prefix, *self.encode_text(text)]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        kept = [self.to_hub[int(i)] for i in ids if int(i) not in self.special and 0 <= int(i) < self.vocab_size]
        return clean(self.hub.decode(kept, skip_special_tokens=True))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        pieces = [str(piece) for piece in self.hub.convert_ids_to_tokens([self.to_hub[int(i)] for i in ids])]
        return [self._as_sentencepiece(piece) for piece in pieces] if self.byte_level else pieces

    def _as_sentencepiece(self, piece: str) -> str:
        """A byte-level piece as SentencePiece writes one, its bytes decoded by the tokenizer: "Ġthe" → "▁the",
        "Ã©" → "é" (a byte of a longer character, alone, stays as it is)."""
        text = self.hub.convert_tokens_to_string([piece])
        if "\ufffd" in text:
            return piece
        return "▁" + text[1:] if text.startswith(" ") else text

    def save(self, path: str | Path) -> None:
        raise HubError("a Hugging Face model's tokenizer stays in its folder")


def open_hub_tokenizer(folder: Path, family: str, languages: tuple[str, str]):
    transformers = transformers_module()
    try:
        with warnings.catch_warnings():  # MarianTokenizer recommends sacremoses, which the app does not use
            warnings.simplefilter("ignore")
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as error:  # missing or broken tokenizer files raise many kinds of error
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise HubError(f"{folder}: its tokenizer does not open ({message[:300]})") from None
    if family == "m2m_100":
        source, target = (language_code(tokenizer, code) for code in languages)
        tokenizer.src_lang = source
        if hasattr(tokenizer, "tgt_lang"):
            tokenizer.tgt_lang = target
    return tokenizer


def language_code(tokenizer, code: str) -> str:
    """The tokenizer's own name of a language: ``de`` for M2M100, ``deu_Latn`` for NLLB."""
    if hasattr(tokenizer, "get_lang_id"):
        return code
    return NLLB_CODES.get(code, code)


def our_id(ours: Mapping[int, int], theirs: int) -> int:
    if theirs not in ours:
        raise HubError(f"the tokenizer's token {theirs} lies outside the model's vocabulary")
    return ours[theirs]


def language_token_id(tokenizer, code: str) -> int:
    if hasattr(tokenizer, "get_lang_id"):
        return int(tokenizer.get_lang_id(code))
    token_id = tokenizer.convert_tokens_to_ids(code)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise HubError(f"the tokenizer has no language token {code!r}")
    return int(token_id)
