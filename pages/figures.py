"""Figure display, shared by every page: the palette and presenter mode, a figure shown with its download buttons and
its text alternative (a summary and the data as tables), and figures' data as CSV with file names made from the
sentence."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import plotly.graph_objects as go
import streamlit as st

from pages.choices import keyed
from pages.i18n import escaped, language, language_picker, t
from transformer.plots.describe import describe_for_page
from transformer.plots.palettes import PALETTES, with_palette
from transformer.plots.style import for_dark, for_projector

if TYPE_CHECKING:
    import numpy as np


PRESENT_KEY = "present"
PALETTE_KEY = "palette"
STANDARD_PALETTE = "standard"  # the colours every figure is built in


# Presenter mode: large type (Streamlit sizes in rem), no sidebar, the page across the screen.
PRESENTER_CSS = """<style>
html { font-size: 24px; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] {
    display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 0.5rem 2.5rem 1rem; }
/* The way out floats in the top corner, and the title is smaller: the first chart starts on the first screen. */
.st-key-leave_present { position: fixed; top: 0.4rem; right: 1rem; z-index: 1000; width: auto !important; }
[data-testid="stMain"] h1 { font-size: 1.8rem; padding: 0.25rem 0 0.5rem; }
</style>"""


FIGURE_FORMAT_KEY = "figure_format"
FIGURE_FORMATS = ("png", "svg")


def _remember_figure_format() -> None:
    st.session_state[FIGURE_FORMAT_KEY] = st.session_state[f"_{FIGURE_FORMAT_KEY}_choice"]


def sidebar_figure_choices() -> None:
    """The sidebar's choices for every figure: its colours (the standard palette, or one that people with any
    of the common colour-vision deficiencies tell apart: :mod:`transformer.plots.palettes`; ``palette=`` in the
    URL) and the format the camera button downloads: PNG (twice the screen resolution) or SVG (vector). The format
    is stored outside the widget's own state so that it holds on every page."""
    labels = {name: t(f"common.palette_{name}") for name in PALETTES}
    keyed(
        st.sidebar.selectbox,
        t("common.palette"),
        tuple(PALETTES),
        key=PALETTE_KEY,
        format_func=labels.get,
        help=t("common.palette_help"),
    )
    current = st.session_state.setdefault(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    st.sidebar.radio(
        t("common.figure_format"),
        FIGURE_FORMATS,
        index=FIGURE_FORMATS.index(current),
        key=f"_{FIGURE_FORMAT_KEY}_choice",
        format_func=str.upper,
        horizontal=True,
        on_change=_remember_figure_format,
        help=t("common.figure_format_help"),
    )


def chosen_palette() -> str:
    """The sidebar's chart palette, by name."""
    chosen = st.session_state.get(PALETTE_KEY, STANDARD_PALETTE)
    return chosen if chosen in PALETTES else STANDARD_PALETTE


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT_KEY))


def _stop_presenting() -> None:
    st.session_state[PRESENT_KEY] = False


def presenter_controls() -> None:
    """The sidebar's interface language and presenter-mode toggle (also ``lang=ko``, ``present=1`` in the URL);
    while presenting, the page's large type without the sidebar, and a button that leaves the mode (the sidebar,
    and so the toggle, is hidden)."""
    language_picker()
    st.sidebar.toggle(t("common.present"), key=PRESENT_KEY, help=t("common.present_help"))
    if presenting():
        st.html(PRESENTER_CSS)
        st.button(
            t("common.leave_present"),
            on_click=_stop_presenting,
            icon=":material/close_fullscreen:",
            key="leave_present",
        )


def show_figure(
    fig: go.Figure, key: str, filename: str | None = None, on_select: Callable[[], None] | None = None
) -> None:
    """Show a plotly figure across the page with a download button in both formats, without server-side rendering.

    Plotly draws images in the browser (plotly.js ``toImage``), so no image library such as kaleido is needed; but
    its modebar has a single camera button, and the configuration reaches the browser as JSON, so a second,
    scripted SVG button cannot be added. The camera button therefore downloads the format chosen with
    :func:`sidebar_figure_choices` (PNG by default), named ``filename`` (default: ``key``).

    ``on_select``: called when the visitor clicks a point of the figure (its selection is then in
    ``st.session_state[key].selection``); dragging still zooms.
    """
    image_format = st.session_state.get(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    with_palette(fig, chosen_palette())
    if st.context.theme.type == "dark":  # the visitor's system (or Streamlit's settings) chose the dark theme
        for_dark(fig)
    if presenting():
        fig = for_projector(fig)
    if fig.layout.title.text:
        # The title starts below the chart's toolbar (top right, ~30 px), which on a phone spans the whole width.
        # Whole objects are assigned: update_layout's path parsing cost as much as building the figure.
        title, margin = fig.layout.title.to_plotly_json(), fig.layout.margin.to_plotly_json()
        fig.layout.title = {**title, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 36}}
        fig.layout.margin = {**margin, "t": margin.get("t", 80) + 30}
    if on_select is not None:
        fig.layout.dragmode = "zoom"  # Streamlit would make it "pan" for a chart whose points can be clicked
    st.plotly_chart(
        fig,
        width="stretch",
        key=key,
        **({"on_select": on_select, "selection_mode": "points"} if on_select else {}),
        config={
            "displaylogo": False,
            "toImageButtonOptions": {
                "format": image_format,
                "filename": filename or key,
                "scale": 2 if image_format == "png" else 1,
            },
        },
    )
    # The chart in words for a screen reader (and anyone): what it shows and its strongest links or values, then
    # its data as tables on request (transformer/plots/describe.py).
    described = describe_for_page(fig, language())
    st.caption(escaped(described.summary))
    if described.tables:
        with st.expander(t("common.figure_data")):
            for title, table in described.tables:
                st.markdown(f"**{escaped(title)}**")
                # A table a screen reader can walk cell by cell (HTML, with headers) when it is small enough to
                # read; a larger one (every head of a long sentence) in Streamlit's scrolling grid.
                if table.size <= MOST_HTML_TABLE_CELLS:
                    st.table(table, hide_index=True)
                elif table.size <= MOST_TABLE_CELLS:
                    st.dataframe(table, hide_index=True)
                else:  # every head of a long sentence: megabytes on every run
                    st.caption(t("common.figure_data_too_large", rows=len(table), columns=len(table.columns)))


MOST_HTML_TABLE_CELLS = 2_000
MOST_TABLE_CELLS = 40_000


def matrix_csv(matrix: np.ndarray, query_tokens: list[str], key_tokens: list[str]) -> str:
    """A matrix with query tokens as the first column and key tokens as the header (CSV-quoted)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query \\ key", *key_tokens])
    for token, row in zip(query_tokens, matrix, strict=True):
        writer.writerow([token, *(f"{value:.6f}" for value in row)])
    return buffer.getvalue()


def sentence_slug(text: str) -> str:
    """The first six words of a sentence as a file name's start ("the-children-are-playing-in-the")."""
    words = re.findall(r"[a-z0-9]+", text.replace("▁", " ").lower())
    return "-".join(words[:6]) or "sentence"
