"""The interface language: a sidebar choice kept in the URL (``lang=ko``), and :func:`t` to look a message up in
the chosen language's catalogue (:mod:`transformer.i18n`, ``transformer/locales/<code>.json``).

A message is looked up by key and formatted with ``str.format`` fields (``t("steps.of", number=2, total=11)``).
Figures take the language itself (``language=language()``). The paper's terms follow the standard Korean
renderings with the English term beside them on first use (어텐션 (attention), 멀티 헤드 어텐션 (multi-head
attention), 위치 인코딩 (positional encoding)).
"""

from __future__ import annotations

import streamlit as st

from transformer.i18n import DEFAULT_LANGUAGE, LANGUAGES, catalogue, message

LANGUAGE_KEY = "lang"


def language() -> str:
    """The chosen language: the sidebar's choice, or before the page has restored it (``app.py`` names the pages
    first) the URL's ``lang``; English otherwise."""
    chosen = st.session_state.get(LANGUAGE_KEY) or st.query_params.get(LANGUAGE_KEY, DEFAULT_LANGUAGE)
    return chosen if chosen in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, **values: object) -> str:
    """The message ``key`` in the chosen language, with ``values`` filled in."""
    return message(language(), key, **values)


def score_text(key: str, part: str) -> str:
    """A head score's ``name`` or ``description`` in the chosen language: the registry's own (English) text, or its
    translation ``score.<key>.<part>`` in the language's catalogue."""
    from transformer.analysis.heads import SCORES  # here: app.py imports this module before torch is needed

    translated = catalogue(language()).get(f"score.{key}.{part}")
    return translated or getattr(SCORES[key], part)


def language_picker() -> None:
    """The sidebar's choice of interface language (key ``lang``, in the URL)."""
    st.sidebar.selectbox(
        "Language / 언어", list(LANGUAGES), key=LANGUAGE_KEY, format_func=LANGUAGES.get,
        help="English or Korean labels, help texts, captions and chart titles. / 영어 또는 한국어 인터페이스.",
    )  # fmt: skip
