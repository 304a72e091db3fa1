"""Choices that hold while people move around the app, and a URL that reproduces what a page shows.

Streamlit forgets a widget's value in any run that does not draw the widget: a control on a closed tab, a slider
hidden by another choice, a control on another page. Each page therefore declares its controls once, as
:class:`Field` s keyed by the widgets' keys, and calls :func:`keep` before drawing them and :func:`save` after:

- on a session's first visit to the page, :func:`keep` takes each value from the URL (anything malformed or out of
  range falls back to the default, never an error);
- on every run it re-assigns the stored values, which tells Streamlit to keep them even when their widgets are not
  drawn (Streamlit's documented way to keep widget state across pages);
- :func:`save` writes the page's values to the URL, so a copied link opens the same view.

Widgets under this scheme get their value from ``st.session_state`` only (no ``value=``/``index=``/``default=``),
so there is one source of truth and Streamlit does not warn about two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from transformer.tokenizer import clean

Parse = Callable[[str], Any]


@dataclass(frozen=True)
class Field:
    """One control: its default, how to read it from URL text (``ValueError`` when malformed), how to write it.

    A ``default`` of None leaves the value to the page (for defaults that depend on the model or the sentence):
    :func:`keep` then sets nothing unless the URL gives a value, and the page calls :func:`ensure`.
    """

    default: Any
    parse: Parse = str
    dump: Callable[[Any], str] = str


# ------------------------------------------------------------------------------------------------ parsers
def choice(options: Sequence[Any]) -> Parse:
    """One of ``options`` (compared as text, so numbers and strings both work); anything else is malformed."""
    by_text = {str(option): option for option in options}

    def parse(text: str) -> Any:
        if text not in by_text:
            raise ValueError(text)
        return by_text[text]

    return parse


def integer(low: int, high: int) -> Parse:
    """A whole number, clamped into [low, high]."""
    return lambda text: min(max(int(text), low), high)


def number(low: float, high: float) -> Parse:
    """A finite number, clamped into [low, high]."""

    def parse(text: str) -> float:
        value = float(text)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(text)
        return min(max(value, low), high)

    return parse


def flag(text: str) -> bool:
    """``1``/``true``/``on`` or ``0``/``false``/``off``."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "on", "yes"):
        return True
    if lowered in ("0", "false", "off", "no"):
        return False
    raise ValueError(text)


def dump_flag(value: bool) -> str:
    return "1" if value else "0"


def integers(low: int, high: int) -> Parse:
    """A comma-separated list of distinct whole numbers in [low, high], in the given order (empty text: [])."""

    def parse(text: str) -> list[int]:
        values = [int(part) for part in text.split(",") if part.strip()]
        if any(value < low or value > high for value in values):
            raise ValueError(text)
        return list(dict.fromkeys(values))

    return parse


def dump_integers(values: Sequence[int]) -> str:
    return ",".join(str(value) for value in values)


def optional_integer(low: int, high: int) -> Parse:
    """A whole number in [low, high], or ``all`` for None."""

    def parse(text: str) -> int | None:
        if text == "all":
            return None
        value = int(text)
        if not low <= value <= high:
            raise ValueError(text)
        return value

    return parse


def dump_optional(value: Any) -> str:
    return "all" if value is None else str(value)


def text(max_characters: int) -> Parse:
    """Text as given, cut to ``max_characters`` (what a link can carry is bounded anyway)."""
    return lambda value: value[:max_characters]


# ------------------------------------------------------------------------------------------------ state
def keep(fields: dict[str, Field], page: str) -> None:
    """Before drawing a page's widgets: restore them from the URL on the session's first visit, and keep them."""
    restored = f"_restored_{page}"
    if not st.session_state.get(restored):
        st.session_state[restored] = True
        for key, field in fields.items():
            raw = st.query_params.get(key)
            value = field.default
            if raw is not None:
                try:
                    value = field.parse(raw)
                except (ValueError, TypeError):
                    value = field.default
            if value is not None:
                st.session_state[key] = value
    for key in fields:
        if key in st.session_state:
            # Re-assigning a widget's value marks it as set by the page, which Streamlit keeps even in runs that
            # do not draw the widget (a closed tab, a hidden slider, another page).
            st.session_state[key] = st.session_state[key]


def ensure(key: str, default: Any, valid: Callable[[Any], bool] | None = None) -> Any:
    """Set ``key`` to ``default`` unless it holds a value that ``valid`` accepts (any value when None)."""
    if key not in st.session_state or (valid is not None and not valid(st.session_state[key])):
        st.session_state[key] = default
    return st.session_state[key]


def save(fields: dict[str, Field]) -> None:
    """Write the page's current choices to the URL (the ones the page has set; nothing else)."""
    # clean(): text a URL can carry (a lone surrogate, which Python strings may hold, has no UTF-8 form).
    st.query_params.from_dict(
        {key: clean(field.dump(st.session_state[key])) for key, field in fields.items() if key in st.session_state}
    )
