"""Signs that a text is not in the language the model was trained to read (its checkpoint's source language).

The model translates whatever it is given into confident German (its target language); these checks let the app say
when the input is unlikely to be in the source language, and why, instead of presenting nonsense as a translation.
They are deliberately simple and explainable (a teacher can check them by eye): pieces the vocabulary only knows as
raw bytes, letters outside the source language's script, and a word mix that reads like the target language. A new
language pair needs its languages' frequent words in :data:`COMMON_WORDS` (and, if written in the Latin alphabet,
an entry in :data:`LATIN_SCRIPT`); without them only the vocabulary check applies.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from transformer.config import language_name

BYTE_PIECE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Frequent words of each language that are not (common) words of the other.
ENGLISH_WORDS = frozenset(
    "the a an and is are was were be been of to in that it this with for on you he she they we i not have has "
    "do does did what where when who why how my your his her their our can will would should could there here".split()
)
GERMAN_WORDS = frozenset(
    "der die das und ist sind nicht ich du er sie wir ihr ein eine einen einem einer zu mit von auf für den dem "
    "des sich auch noch nur wie was wo wer warum kann können wird werden hat haben bin bist mein meine dein deine "
    "sehr schon aber oder wenn dass weil heute morgen gestern".split()
)
COMMON_WORDS = {"en": ENGLISH_WORDS, "de": GERMAN_WORDS}  # frequent words of each language, not of the others
LATIN_SCRIPT = frozenset({"en", "de", "fr", "es", "it", "nl", "pt", "cs", "ro", "tr"})  # written in Latin letters


def unknown_characters(pieces: Sequence[str]) -> int:
    """How many characters reached the model as byte-fallback pieces (``<0x..>``, one to four per character):
    characters the vocabulary does not contain."""
    count, run = 0, bytearray()
    for piece in [*pieces, ""]:
        if BYTE_PIECE.match(piece):
            run.append(int(piece[3:5], 16))
        elif run:
            count += len(run.decode("utf-8", errors="replace"))
            run.clear()
    return count


def non_latin_letters(text: str) -> int:
    """Letters not in the Latin script (Korean, Chinese, Cyrillic, …)."""
    return sum(
        1 for char in text if char.isalpha() and not unicodedata.name(char, "").startswith(("LATIN", "MODIFIER"))
    )


def looks_like(text: str, language: str, other: str) -> bool:
    """More frequent words of ``language`` than of ``other`` (at least two), by :data:`COMMON_WORDS`."""
    words = [word.lower() for word in WORD.findall(text)]
    ours = sum(word in COMMON_WORDS.get(language, ()) for word in words)
    theirs = sum(word in COMMON_WORDS.get(other, ()) for word in words)
    return ours >= 2 and ours > theirs


def looks_german(text: str) -> bool:
    """More frequent German words than English ones (at least two German words)."""
    return looks_like(text, "de", "en")


def not_source_reasons(text: str, pieces: Sequence[str], source: str = "en", target: str = "de") -> list[str]:
    """Why ``text`` (split into ``pieces`` by the model's tokenizer) looks like something other than the model's
    ``source`` language (it translates into ``target``); [] when nothing stands out."""
    source_name, target_name = language_name(source), language_name(target)
    reasons = []
    unknown = unknown_characters(pieces)
    visible = sum(not char.isspace() for char in text)
    if unknown >= 3 or (visible and unknown / visible >= 0.2):
        reasons.append(
            f"{unknown} of its {visible} characters are not in the {source_name} vocabulary and reach the model as "
            "raw bytes (`<0x..>` pieces)"
        )
    letters = sum(char.isalpha() for char in text)
    foreign = non_latin_letters(text) if source in LATIN_SCRIPT else 0
    if letters and foreign / letters >= 0.3:
        reasons.append(f"{foreign} of its {letters} letters are not in the Latin alphabet")
    if source in COMMON_WORDS and target in COMMON_WORDS and looks_like(text, target, source):
        reasons.append(f"it reads like {target_name} (the model translates {source_name} into {target_name})")
    return reasons


def not_english_reasons(text: str, pieces: Sequence[str]) -> list[str]:
    """:func:`not_source_reasons` of an English → German model."""
    return not_source_reasons(text, pieces, "en", "de")
