"""The interface language: a sidebar choice kept in the URL (``lang=ko``), and :func:`t` to look a message up in
the chosen language's catalogue (:mod:`transformer.features.i18n`, ``transformer/features/locales/<code>.json``).

A message is looked up by key and formatted with ``str.format`` fields (``t("steps.of", number=2, total=11)``).
Figures take the language itself (``language=language()``). The paper's terms follow the standard Korean
renderings with the English term beside them on first use (어텐션 (attention), 멀티 헤드 어텐션 (multi-head
attention), 위치 인코딩 (positional encoding)).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import streamlit as st

from transformer.features.i18n import DEFAULT_LANGUAGE, LANGUAGES, catalogue, language_name, message

if TYPE_CHECKING:
    from transformer.search.decode import DecodingOptions

LANGUAGE_KEY = "lang"


def language() -> str:
    """The chosen language: the sidebar's choice, or before the page has restored it (``app.py`` names the pages
    first) the URL's ``lang``; English otherwise."""
    chosen = st.session_state.get(LANGUAGE_KEY) or st.query_params.get(LANGUAGE_KEY, DEFAULT_LANGUAGE)
    return chosen if chosen in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, **values: object) -> str:
    """The message ``key`` in the chosen language, with ``values`` filled in."""
    return message(language(), key, **values)


MARKDOWN_SIGNS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&=^\"'])")


def escaped(value: object, code: bool = False) -> str:
    """``value`` as text that Markdown shows as it is: every sign Markdown, Streamlit's directives (``:red[…]``,
    ``:material/…:``), LaTeX (``$``) or HTML could read is backslash-escaped, so that a name, a path, a token or an
    error message a visitor typed or a file holds can never make a link, an image the browser fetches, a heading or
    a tag (line breaks stay: with every sign escaped they can only end a paragraph). With ``code``, for a value a
    message shows between backticks (a command, a folder): in a code span nothing is read but a backtick, which
    would end it, and a line break; both are replaced. The one way a page puts such text into ``st.markdown``,
    ``st.error`` and the like (``tests/test_pages.py`` holds the pages to it); inside raw HTML, ``html.escape``."""
    if code:
        return " ".join(str(value).replace("`", "'").split())
    return MARKDOWN_SIGNS.sub(r"\\\1", str(value))


def score_text(key: str, part: str) -> str:
    """A head score's ``name`` or ``description`` in the chosen language: the registry's own (English) text, or its
    translation ``score.<key>.<part>`` in the language's catalogue."""
    from transformer.analysis.heads import SCORES  # here: app.py imports this module before torch is needed

    translated = catalogue(language()).get(f"score.{key}.{part}")
    return translated or getattr(SCORES[key], part)


def language_label(code: str) -> str:
    """A language's name in the chosen language ("영어" for "en" in Korean); an unknown code as it is."""
    return language_name(language(), code)


# What DecodingOptions.describe() writes (kept in stored results: importance.json's "decoding").
DESCRIBED = re.compile(r"(?:greedy|beam (?P<beam>\d+), α = (?P<alpha>[\d.]+)), (?P<precision>\w+) search")


def decoding_label(options: DecodingOptions | str) -> str:
    """How a translation was searched for, in the chosen language: ``DecodingOptions.describe()``'s words ("beam 4,
    α = 0.6, float32 search"), for options or for such a text read back from a stored result (any other text is
    shown as it is). The library keeps its English ``describe()`` for the command line."""
    if isinstance(options, str):
        described = DESCRIBED.fullmatch(options.strip())
        if described is None:
            return options
        beam, alpha, precision = int(described["beam"] or 1), described["alpha"], described["precision"]
    else:
        beam, alpha, precision = options.beam_size, options.alpha, options.precision
    search = t("decoding.greedy") if beam == 1 else t("decoding.beam", beam=beam, alpha=alpha)
    return f"{search}, {t('decoding.precision', precision=precision)}"


# The library's (English) words for a sample of sentences: what was measured over, in stored results too.
SAMPLES = {
    "sample.first_sentences": re.compile(r"(?P<name>\S+) \(first (?P<count>\d+) sentences\)"),
    "sample.first_pairs": re.compile(r"(?P<name>\S+), first (?P<count>\d+) pairs"),
    "sample.ranked_elsewhere": re.compile(
        r"(?P<name>\S+), pairs (?P<first>\d+)–(?P<last>\d+) \(ranked on pairs 1–(?P<ranked>\d+)\)"
    ),
    "sample.first_references": re.compile(r"(?P<name>\S+), first (?P<count>\d+) pairs, reference translations"),
    "sample.pronouns": re.compile(
        r"the shipped pronoun sentences \((?P<count>\d+); (?P<name>\S+) not found at (?P<path>.+)\)"
    ),
    "sample.one_sentence": re.compile(r"one sentence"),
    "sample.sentences": re.compile(r"(?P<count>\d+) sentences"),
}


def sample_label(described: str) -> str:
    """A sample's description ("newstest2013 (first 50 sentences)", "newstest2013.en, first 50 pairs") in the chosen
    language; any other text as it is."""
    for key, pattern in SAMPLES.items():
        match = pattern.fullmatch(described.strip())
        if match is not None:
            return t(key, **match.groupdict())
    return described


def language_picker() -> None:
    """The sidebar's choice of interface language (key ``lang``, in the URL)."""
    st.sidebar.selectbox(
        "Language / 언어",
        list(LANGUAGES),
        key=LANGUAGE_KEY,
        format_func=LANGUAGES.get,
        help="English or Korean labels, help texts, captions and chart titles. / 영어 또는 한국어 인터페이스.",
    )
