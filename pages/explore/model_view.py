"""The *Model view* tab of Translate and explore: every layer and head of one attention kind as a grid of small
maps; a click on one opens it below."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.explore.shared import Shown, figure_name, kind_choice, layer_head_pickers, show_head
from pages.figures import show_figure
from pages.i18n import language, t
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis.attention import KINDS
from transformer.plots import grid as plot_grid


def open_clicked_head(chart_key: str) -> None:
    """The grid's click handler: open the clicked tile's head (its marker carries [layer, head], 1-based)."""
    points = st.session_state[chart_key].selection.points
    if points and len(points[0].get("customdata") or ()) == 2:
        layer, head = points[0]["customdata"]
        st.session_state["grid_layer"], st.session_state["grid_head"] = str(int(layer)), str(int(head))


def render(shown: Shown) -> None:
    maps = shown.maps
    kind, queries, keys = kind_choice(maps, "grid_kind")
    fitted = st.session_state["scale"] == "fitted"
    title = t("explore.grid_title", kind=t(f"kind.{kind}"))
    grid = st.container()
    st.caption(t("explore.grid_caption"))
    layer, head = layer_head_pickers(maps, prefix="grid_")
    # A chart keeps its last click: keyed by the open head, a click on the tile that was open before another
    # choice is a new click.
    chart_key = f"model_view_{kind}_{layer}_{head}"
    with grid:
        show_figure(
            plot_grid.model_view_grid(
                maps.weights(kind),
                queries,
                keys,
                title,
                causal=kind == "decoder",
                fitted=fitted,
                language=language(),
                opened=(layer, head),
            ),
            key=chart_key,
            filename=figure_name(maps, kind, None, None).replace("layeravg-headavg", "every-head"),
            on_select=lambda: open_clicked_head(chart_key),
        )
    show_head(maps, kind, layer, head, key="grid_cell")


TAB = Tab(
    "Model view",
    "explore.view_model_view",
    render,
    {
        "grid_kind": Field("encoder", url_state.choice(KINDS)),
        "grid_layer": Field("5"),
        "grid_head": Field("1"),
    },
)
