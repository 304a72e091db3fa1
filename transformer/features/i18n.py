"""The project's words in each language: one message catalogue per language,
``transformer/features/locales/<code>.json``.

The app's labels and the figures' titles are looked up here by key and formatted with ``str.format`` fields, so a
figure drawn by the library (``language="ko"``) and the page around it speak the same language. Every catalogue
holds every key (``tests/test_i18n.py``); English is the default and the fallback.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

LOCALES = Path(__file__).resolve().parent / "locales"
LANGUAGES = {"en": "English", "ko": "한국어"}
DEFAULT_LANGUAGE = "en"


@functools.cache
def catalogue(language: str) -> dict[str, str]:
    """The messages of one language, read once per process."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}")
    return json.loads((LOCALES / f"{language}.json").read_text(encoding="utf-8"))


def message(language: str, key: str, **values: object) -> str:
    """Message ``key`` in ``language`` (English where that catalogue lacks it), with ``values`` filled in."""
    text = catalogue(language).get(key) or catalogue(DEFAULT_LANGUAGE)[key]
    return text.format(**values) if values else text


def words(language: str, prefix: str) -> dict[str, str]:
    """Every message under ``prefix.`` in ``language``, keyed by the rest of its key."""
    start = f"{prefix}."
    merged = {**catalogue(DEFAULT_LANGUAGE), **catalogue(language)}
    return {key[len(start) :]: text for key, text in merged.items() if key.startswith(start)}


def language_name(language: str, code: str) -> str:
    """The name of the language ``code`` in ``language``'s words ("영어" for "en" in Korean, "English" in English);
    a code no catalogue names is shown as it is."""
    key = f"language.{code}"
    return catalogue(language).get(key) or catalogue(DEFAULT_LANGUAGE).get(key) or code
