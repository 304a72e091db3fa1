"""Select boxes, radios, select sliders and multiselects whose options are shown in the visitor's language, with the
choice kept as the option itself (a name, a number), never as the label shown.

Streamlit sends a choice between the browser and the server as the label it shows. When the language changes, a
choice in flight (a fragment's run on a timer, a click while the page reruns) carries a label of the language
before, which the widget of the new language cannot read back: it would hand the label itself to the page. So the
widget of each language has a key of its own (:func:`shown_key`: ``palette__ko``), and the page's key (``palette``,
the one a :class:`pages.url_state.Field` declares and a link names) is a plain session entry that holds the option:
copied into the widget before it is drawn, and back from it when the visitor chooses.

    kind = keyed(column.radio, t("explore.attention"), KINDS, key="kind", format_func=names.get)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from pages.i18n import language

SEPARATOR = "__"  # between the page's key and the language: ``palette__ko``


def shown_key(key: str, code: str | None = None) -> str:
    """The key of the widget that shows control ``key`` in language ``code`` (the chosen one by default)."""
    return f"{key}{SEPARATOR}{code or language()}"


def keyed(widget: Callable[..., Any], label: str, options: Sequence[Any], *, key: str, **kwargs: Any) -> Any:
    """Draws ``widget`` (``st.selectbox``, ``column.radio``, ``st.sidebar.multiselect``, …) for control ``key`` and
    returns its value, kept under ``key`` as one of ``options`` (a list of them for a multiselect). ``kwargs`` go to
    the widget (``format_func`` for the labels); an ``on_change`` runs after the choice is kept."""
    state = st.session_state
    shown = shown_key(key)
    on_change, args = kwargs.pop("on_change", None), kwargs.pop("args", ())
    if key in state:
        if shown not in state or state[shown] != state[key]:
            state[shown] = state[key]
        kwargs.pop("index", None)  # the value comes from the session: Streamlit warns about a second source

    def chosen() -> None:
        state[key] = state[shown]
        if on_change is not None:
            on_change(*args)

    value = widget(label, options, key=shown, on_change=chosen, **kwargs)
    state[key] = value  # the widget's own choice when the page set none (or one no longer among the options)
    return value
