"""Attention Explorer: translate an English sentence into German and explore every attention head.

Run with ``streamlit run app.py``. This file names the pages; the main page itself is :mod:`pages.explore`.
"""

from __future__ import annotations

import faulthandler
import signal
import sys

# Imported by every run before any figure is built. Plotly looks NumPy and pandas up in `sys.modules` without
# importing them, and on a fresh server another session's run may be halfway through importing them (torch brings
# NumPy): a class opening the app at once then showed one visitor "partially initialized module 'numpy' has no
# attribute 'ndarray'". An import statement waits until the other thread has finished.
import numpy  # noqa: F401
import pandas  # noqa: F401
import plotly.graph_objects as go
import streamlit as st

from pages.i18n import t
from pages.page_slots import page_slots

# `kill -USR1 <server pid>` writes every thread's stack to the server's standard error: what a stuck server waits for.
if hasattr(signal, "SIGUSR1"):
    faulthandler.register(signal.SIGUSR1, all_threads=True)

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
# Less empty space above each page's title, so that the first chart is on the first screen (1280 × 800).
st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 2.5rem; }</style>")


def loading_figure() -> go.Figure:
    """An empty chart shown while the server's first visitor waits for the model: the browser fetches and starts
    plotly.js while Python is still importing torch and loading the checkpoint."""
    fig = go.Figure()
    fig.add_annotation(text="Loading the model and translating…", showarrow=False, font={"size": 16})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=160, margin={"l": 0, "r": 0, "t": 0, "b": 0}, plot_bgcolor="white")
    return fig


def translate_and_explore() -> None:
    page = st.container()
    loading = None
    if "pages.explore" not in sys.modules:  # the first visit since the server started
        loading = st.empty()
        loading.plotly_chart(loading_figure(), config={"displayModeBar": False}, key="loading")
    from pages import explore  # torch, the model code and the figures: a second or two, once per server

    with page:
        explore.main(loading)


# The pages, with the names and order the sidebar shows (instead of file names).
PAGES = [
    st.Page(translate_and_explore, title=t("nav.explore"), icon=":material/translate:", default=True),
    st.Page("pages/step_by_step.py", title=t("nav.steps"), icon=":material/school:"),
    st.Page("pages/paper_figures.py", title=t("nav.figures"), icon=":material/article:"),
    st.Page("pages/head_discovery.py", title=t("nav.heads"), icon=":material/search:"),
    st.Page("pages/what_if.py", title=t("nav.whatif"), icon=":material/science:"),
    st.Page("pages/positional_encoding.py", title=t("nav.positional"), icon=":material/waves:"),
    st.Page("pages/model_and_training.py", title=t("nav.model"), icon=":material/monitoring:"),
]


with page_slots().run():  # pages run one per core at once, in arrival order (pages/page_slots.py)
    st.navigation(PAGES).run()
