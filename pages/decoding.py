"""The decoding choices: the controls the main page shows in its sidebar (beam or greedy search, beam size, length
penalty, precision), their URL fields, and the options they make — which the other pages that show the same
translation (the step page, What if) read too."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.i18n import t
from pages.url_state import Field
from transformer.search.decode import DEFAULT_DECODING, PRECISIONS, DecodingOptions, default_precision

FIELDS = {
    "search": Field(None, url_state.choice(("beam", "greedy"))),  # None: from the beam size (beam=1: greedy)
    "beam": Field(4, url_state.integer(1, 8)),
    "alpha": Field(0.6, url_state.number(0.0, 2.0)),
    "precision": Field(default_precision(), url_state.choice(PRECISIONS)),
}


def controls() -> None:
    """The decoding controls, where they are called (the main page's sidebar)."""
    url_state.ensure("search", "beam" if st.session_state["beam"] > 1 else "greedy")
    searches = {"beam": t("explore.beam"), "greedy": t("explore.greedy")}
    keyed(st.radio, t("explore.search"), ["beam", "greedy"], key="search", horizontal=True, format_func=searches.get)
    if st.session_state["search"] == "beam":
        if st.session_state["beam"] < 2:
            st.session_state["beam"] = 4
        st.slider(t("explore.beam_size"), 2, 8, key="beam")
        st.slider(t("explore.alpha"), 0.0, 2.0, step=0.1, key="alpha")
    else:
        st.session_state["beam"] = 1
    st.radio(t("explore.precision"), PRECISIONS, key="precision", horizontal=True, help=t("explore.precision_help"))


def options() -> DecodingOptions:
    """The chosen decoding as one object (the controls must have been drawn or restored in this session)."""
    state = st.session_state
    return DecodingOptions(int(state["beam"]), float(state["alpha"]), precision=state["precision"])


def current_options() -> DecodingOptions:
    """The main page's decoding choices when it has been visited in this session, else the paper's (for the
    pages that show the same translation)."""
    try:
        return options()
    except (KeyError, ValueError):
        return DEFAULT_DECODING
