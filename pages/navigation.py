"""The app's pages and the navigation that runs them.

``app.py`` shows :func:`app_pages` with ``st.navigation`` and runs each page inside :func:`routed`. Streamlit starts
in its legacy multipage mode whenever a ``pages/`` folder sits beside the main script, and stays in it until
``st.navigation`` is called: a link straight to a page (``/paper_figures?…``), opened as a fresh server's first
request, would run the page alone, under a sidebar that lists every module of ``pages/``. A page that finds itself
outside :func:`routed` on the app's server calls ``st.navigation`` with the app's pages (which ends that mode) and
runs the request again, through ``app.py``: same page, same URL (:func:`through_the_router`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from pages import url_state
from pages.i18n import t

ROUTER = Path(__file__).resolve().parent.parent / "app.py"  # the app's main script
_routing = threading.local()  # each session's script runs in its own thread


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
        st.Page(translate_and_explore, title=t("nav.explore"), icon=":material/translate:", default=True),
        *(st.Page(str(folder / name), title=t(title), icon=icon) for name, (title, icon) in PAGE_SCRIPTS.items()),
    ]


def page_name(page) -> str:
    """A page of :func:`app_pages` by name: ``explore`` for the main page, else its file name without ``.py``."""
    return page.url_path or "explore"


def open_page(script: str | None, values: dict) -> None:
    """Go to another page (``script``: its file name in ``pages/``; None: the main page) with some of its controls
    set, as if the visitor had left them so there (:func:`pages.url_state.assign`)."""
    url_state.assign(values)
    pages = app_pages()
    names = [None, *PAGE_SCRIPTS]
    st.switch_page(pages[names.index(script)])


@contextmanager
def routed() -> Iterator[None]:
    """``app.py`` runs the chosen page inside this block."""
    _routing.active = True
    try:
        yield
    finally:
        _routing.active = False


def through_the_router() -> None:
    """Make sure the page runs under ``app.py``'s navigation (see the module docstring). A page's script run on its
    own (``streamlit run pages/…``, or a test's ``AppTest``) is left as it is."""
    if not getattr(_routing, "active", False) and Path(sys.argv[0]).resolve() == ROUTER:
        st.navigation(app_pages(), position="hidden")
        st.rerun()


def atlas_button(kind: str, layer: int, head: int, key: str, label: str | None = None, where=st) -> None:
    """A button under a head's heatmap that opens the head's card in the head atlas (0-based layer and head);
    ``label`` names the head where a figure shows several, ``where`` is the container it goes in."""
    if where.button(label or t("atlas.open_card"), key=key, icon=":material/hub:"):
        open_page("head_atlas.py", {"atlas_head": f"{kind}-{layer + 1}-{head + 1}"})


def atlas_buttons(kind: str, layer: int, heads: list[int], key: str, name) -> None:
    """One atlas button per head of a figure that draws several heads of one layer (``name``: a head's label)."""
    if not heads:
        return
    st.caption(t("atlas.open_cards"))
    for column, head in zip(st.columns(len(heads)), heads, strict=True):
        atlas_button(kind, layer, head, key=f"{key}_{head}", label=name(head), where=column)
