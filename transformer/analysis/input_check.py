"""Signs that a text is not in the language the model was trained to read (its checkpoint's source language).

The model translates whatever it is given into confident German (its target language); these checks let the app say
when the input is unlikely to be in the source language, and why, instead of presenting nonsense as a translation.
They are deliberately simple and explainable (a teacher can check them by eye): pieces the vocabulary only knows as
raw bytes, letters outside the source language's script, and a word mix that reads like the target language. Each is a
share of the input, not a count, so a typo, an emoji or a "<" in an otherwise ordinary sentence raises no alarm; those
characters get a calm notice of their own instead (:func:`unknown_characters`). A new language pair needs its
languages' frequent words in :data:`COMMON_WORDS` (and, if written in the Latin alphabet, an entry in
:data:`LATIN_SCRIPT`); without them only the vocabulary and script checks apply.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from transformer.features.i18n import DEFAULT_LANGUAGE, language_name, message

if TYPE_CHECKING:
    from transformer.paper.tokenizer import Tokenizer

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
BYTE_SHARE = 0.2  # raw-byte characters, as a share of the visible ones, that make an input unreadable
ZERO_WIDTH_JOINER = "\u200d"


def byte_runs(pieces: Sequence[str]) -> list[str]:
    """The text of each run of byte-fallback pieces (``<0x..>``, one to four per character): characters the vocabulary
    does not contain, as the model receives them (after the tokenizer's normalisation)."""
    runs, run = [], bytearray()
    for piece in [*pieces, ""]:
        if BYTE_PIECE.match(piece):
            run.append(int(piece[3:5], 16))
        elif run:
            runs.append(run.decode("utf-8", errors="replace"))
            run.clear()
    return runs


def byte_characters(pieces: Sequence[str]) -> int:
    """How many characters reached the model as byte-fallback pieces: characters the vocabulary does not contain."""
    return sum(len(run) for run in byte_runs(pieces))


def _is_regional(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"  # the letters of flag emoji (🇩🇪 is two)


def _joins(cluster: str, char: str) -> bool:
    """``char`` belongs on screen to the ``cluster`` before it: a combining mark, variation selector, emoji skin tone,
    zero-width joiner or what one joins, or the second half of a flag."""
    last = cluster[-1]
    if unicodedata.category(char) in ("Mn", "Me") or ZERO_WIDTH_JOINER in (char, last):
        return True
    if "\U0001f3fb" <= char <= "\U0001f3ff":  # skin tone
        return True
    return _is_regional(char) and _is_regional(last) and sum(map(_is_regional, cluster)) % 2 == 1


def _clusters(text: str) -> list[str]:
    """``text`` split into the characters a reader sees (an emoji with its joiners and modifiers is one)."""
    clusters: list[str] = []
    for char in text:
        if clusters and _joins(clusters[-1], char):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters


def _invisible(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Cs")


def unknown_characters(text: str, tokenizer: Tokenizer | Sequence[str]) -> list[str]:
    """The characters of ``text`` the model's vocabulary has no piece for, each once, in order of appearance (an emoji
    with its joiners and modifiers as one): those it reads as raw bytes (``<0x..>`` pieces, e.g. 😀 or "<" in the
    shipped English → German vocabulary) and, given the ``tokenizer`` rather than ``text``'s pieces, visible ones
    its normalisation leaves out altogether (e.g. "▁" or "\ufffd"). [] for ordinary text. The model often
    translates such characters into something else or nothing, so the app names them."""
    if isinstance(tokenizer, Sequence):
        pieces, dropped = list(tokenizer), []
    else:
        pieces = tokenizer.pieces(tokenizer.encode(text))
        singles = {char: tokenizer.pieces(tokenizer.encode(char)) for char in dict.fromkeys(text)}
        dropped = [char for char, alone in singles.items() if not _invisible(char) and not alone]
    as_bytes = [cluster for run in byte_runs(pieces) for cluster in _clusters(run)]
    visible = [cluster for cluster in as_bytes if not all(map(_invisible, cluster))]
    return sorted(dict.fromkeys([*visible, *dropped]), key=lambda characters: _position(text, characters))


def _position(text: str, characters: str) -> int:
    """Where ``characters`` first appear in ``text`` (its tokenizer may have normalised them: then at the end)."""
    found = text.find(characters)
    return found if found >= 0 else len(text)


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


def not_source_reasons(
    text: str, pieces: Sequence[str], source: str = "en", target: str = "de", language: str = DEFAULT_LANGUAGE
) -> list[str]:
    """Why ``text`` (split into ``pieces`` by the model's tokenizer) looks like something other than the model's
    ``source`` language (it translates into ``target``), in the words of ``language`` (the app's interface
    language); [] when nothing stands out."""
    source_name, target_name = language_name(language, source), language_name(language, target)
    reasons = []
    unknown = byte_characters(pieces)
    visible = sum(not char.isspace() for char in text)
    # A share, not a count: "3 of 54" is an emoji and a symbol or two in a sentence, which unknown_characters
    # names calmly. Nor when its words read as the source language: they reach the model as words, whatever else.
    reads_as_source = source in COMMON_WORDS and looks_like(text, source, target)
    if visible and unknown / visible >= BYTE_SHARE and not reads_as_source:
        reasons.append(message(language, "input.bytes", unknown=unknown, visible=visible, source=source_name))
    letters = sum(char.isalpha() for char in text)
    foreign = non_latin_letters(text) if source in LATIN_SCRIPT else 0
    if letters and foreign / letters >= 0.3:
        reasons.append(message(language, "input.script", foreign=foreign, letters=letters))
    if source in COMMON_WORDS and target in COMMON_WORDS and looks_like(text, target, source):
        reasons.append(message(language, "input.reads_like", source=source_name, target=target_name))
    return reasons
