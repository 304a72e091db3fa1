"""Signs that a text is not the English the model was trained to read.

The model translates whatever it is given into confident German; these checks let the app say when the input is
unlikely to be English, and why, instead of presenting nonsense as a translation. They are deliberately simple and
explainable (a teacher can check them by eye): pieces the English vocabulary only knows as raw bytes, letters
outside the Latin script, and a German-looking word mix.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

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


def looks_german(text: str) -> bool:
    """More frequent German words than English ones (at least two German words)."""
    words = [word.lower() for word in WORD.findall(text)]
    german = sum(word in GERMAN_WORDS for word in words)
    english = sum(word in ENGLISH_WORDS for word in words)
    return german >= 2 and german > english


def not_english_reasons(text: str, pieces: Sequence[str]) -> list[str]:
    """Why ``text`` (split into ``pieces`` by the model's tokenizer) looks like something other than English; []
    when nothing stands out."""
    reasons = []
    unknown = unknown_characters(pieces)
    visible = sum(not char.isspace() for char in text)
    if unknown >= 3 or (visible and unknown / visible >= 0.2):
        reasons.append(
            f"{unknown} of its {visible} characters are not in the English vocabulary and reach the model as raw "
            "bytes (`<0x..>` pieces)"
        )
    letters = sum(char.isalpha() for char in text)
    foreign = non_latin_letters(text)
    if letters and foreign / letters >= 0.3:
        reasons.append(f"{foreign} of its {letters} letters are not in the Latin alphabet")
    if looks_german(text):
        reasons.append("it reads like German (the model translates English into German)")
    return reasons
