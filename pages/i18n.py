"""The app's words in each language: one message catalogue per language (``pages/locales/<code>.json``), a sidebar
choice of language kept in the URL (``lang=ko``), and :func:`t` to look a message up.

A message is looked up by key and formatted with ``str.format`` fields (``t("steps.of", number=2, total=11)``).
Every catalogue holds every key (``tests/test_i18n.py`` checks it), so a missing translation is caught by the tests,
not shown to a class. Figures receive their words as a mapping (:func:`words`), so the plotting library stays free of
Streamlit and of the catalogues' location. The paper's terms follow the standard Korean renderings with the English
term beside them on first use (어텐션 (attention), 멀티 헤드 어텐션 (multi-head attention), 위치 인코딩
(positional encoding)).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

LOCALES = Path(__file__).resolve().parent / "locales"
LANGUAGES = {"en": "English", "ko": "한국어"}
LANGUAGE_KEY = "lang"
DEFAULT_LANGUAGE = "en"


@functools.cache
def catalogue(language: str) -> dict[str, str]:
    """The messages of one language, read once per process."""
    return json.loads((LOCALES / f"{language}.json").read_text(encoding="utf-8"))


def language() -> str:
    """The chosen language: the sidebar's choice, or before the page has restored it (``app.py`` names the pages
    first) the URL's ``lang``; English otherwise."""
    chosen = st.session_state.get(LANGUAGE_KEY) or st.query_params.get(LANGUAGE_KEY, DEFAULT_LANGUAGE)
    return chosen if chosen in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, **values: object) -> str:
    """The message ``key`` in the chosen language, with ``values`` filled in."""
    text = catalogue(language()).get(key) or catalogue(DEFAULT_LANGUAGE)[key]
    return text.format(**values) if values else text


def words(prefix: str) -> dict[str, str]:
    """Every message under ``prefix.`` in the chosen language, keyed by the rest of its key (for figures)."""
    start = f"{prefix}."
    merged = {**catalogue(DEFAULT_LANGUAGE), **catalogue(language())}
    return {key[len(start) :]: text for key, text in merged.items() if key.startswith(start)}


def language_picker() -> None:
    """The sidebar's choice of interface language (key ``lang``, in the URL)."""
    st.sidebar.selectbox(
        "Language / 언어", list(LANGUAGES), key=LANGUAGE_KEY, format_func=LANGUAGES.get,
        help="English or Korean labels, help texts, captions and chart titles. / 영어 또는 한국어 인터페이스.",
    )  # fmt: skip
