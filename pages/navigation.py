"""The app's site map: its pages in the sidebar's order, and the navigation that runs them. It imports no page:
links that carry a view from one page to another are :mod:`pages.links`.

``app.py`` shows :func:`app_pages` with ``st.navigation`` and runs each page inside :func:`routed`. Streamlit starts
in its legacy multipage mode whenever a ``pages/`` folder sits beside the main script, and stays in it until
``st.navigation`` is called: a link straight to a page (``/paper_figures?…``), opened as a fresh server's first
request, would run the page alone, under a sidebar that lists every module of ``pages/``. A page that finds itself
outside :func:`routed` on the app's server calls ``st.navigation`` with the app's pages (which ends that mode) and
runs the request again, through ``app.py``: same page, same URL (:func:`through_the_router`).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from pages.i18n import t

ROUTER = Path(__file__).resolve().parent.parent / "app.py"  # the app's main script
_routing = threading.local()  # each session's script runs in its own thread

MAIN_PAGE = "translate.py"  # Translate and explore: the page at the app's address (pages/translate.py)
# The page scripts after the main page, in the sidebar's order: file name → (title message, icon).
PAGE_SCRIPTS = {
    "lessons.py": ("nav.lessons", ":material/co_present:"),
    "step_by_step.py": ("nav.steps", ":material/school:"),
    "paper_figures.py": ("nav.figures", ":material/article:"),
    "head_discovery.py": ("nav.heads", ":material/search:"),
    "head_atlas.py": ("nav.atlas", ":material/hub:"),
    "what_if.py": ("nav.whatif", ":material/science:"),
    "positional_encoding.py": ("nav.positional", ":material/waves:"),
    "toy_model.py": ("nav.toy", ":material/model_training:"),
    "why_self_attention.py": ("nav.why", ":material/compare_arrows:"),
    "model_and_training.py": ("nav.model", ":material/monitoring:"),
}


def app_pages() -> list:
    """The pages, with the names and order the sidebar shows (instead of file names)."""
    folder = ROUTER.parent / "pages"
    return [
        st.Page(str(folder / MAIN_PAGE), title=t("nav.explore"), icon=":material/translate:", default=True),
        *(st.Page(str(folder / name), title=t(title), icon=icon) for name, (title, icon) in PAGE_SCRIPTS.items()),
    ]


def page_name(page) -> str:
    """A page of :func:`app_pages` by name: ``explore`` for the main page, else its file name without ``.py``."""
    return page.url_path or "explore"


@contextmanager
def routed() -> Iterator[None]:
    """``app.py`` runs the chosen page inside this block."""
    _routing.active = True
    try:
        yield
    finally:
        _routing.active = False
        clear_first_paint()


def through_the_router() -> None:
    """Make sure the page runs under ``app.py``'s navigation (see the module docstring). A page's script run on its
    own (``streamlit run pages/…``, or a test's ``AppTest``) is left as it is."""
    if not getattr(_routing, "active", False) and Path(sys.argv[0]).resolve() == ROUTER:
        st.navigation(app_pages(), position="hidden")
        st.rerun()


MODEL_CODE = "pages.common"  # the module every page with a model imports first: it brings torch (seconds)


def model_code_loaded() -> bool:
    return MODEL_CODE in sys.modules


def first_paint(page) -> None:
    """On a server's first visit (nothing has imported torch yet): draw the page's title, on the main page the
    sentence box with the visitor's sentence (read-only until the model is there), and a spinner counting the
    seconds, before the imports that take them. It stays until the page has its model (:func:`clear_first_paint`),
    or its run ends: a visitor sees the page at once instead of a blank screen."""
    if model_code_loaded():
        return
    from pages.sentence import DEFAULT_SENTENCE, VISITOR_SENTENCE

    early = st.empty()
    with early.container():
        main = page_name(page) == "explore"
        st.title(t("explore.title") if main else page.title)
        if main:
            sentence = st.query_params.get("text") or st.session_state.get(VISITOR_SENTENCE) or DEFAULT_SENTENCE
            box, button = st.columns([6, 1], vertical_alignment="bottom")
            box.text_area(t("common.starting_sentence"), sentence[:2000], height=68, disabled=True, key="_early_text")
            button.button(t("explore.translate"), type="primary", width="stretch", disabled=True, key="_early_go")
        # An empty chart, so that the browser fetches and starts plotly.js while Python imports: the page's first
        # heatmap drew 1.4 s sooner with it (benchmarks/app_latency.py --only-start, 2 cores).
        st.plotly_chart(EMPTY_CHART, config={"displayModeBar": False, "staticPlot": True}, key="_early_chart")
        with st.spinner(t("common.starting"), show_time=True):
            importlib.import_module(MODEL_CODE)
    _routing.early = early


EMPTY_CHART = {
    "data": [{"type": "scatter", "x": [0], "y": [0], "mode": "markers", "marker": {"opacity": 0}, "hoverinfo": "skip"}],
    "layout": {
        "height": 24,
        "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
        "xaxis": {"visible": False},
        "yaxis": {"visible": False},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
    },
}


def clear_first_paint() -> None:
    """Take :func:`first_paint`'s page away (the page is drawing its own); nothing when there is none."""
    early = getattr(_routing, "early", None)
    _routing.early = None
    if early is not None:
        early.empty()
