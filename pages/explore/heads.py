"""The *Heads* tab of Translate and explore: one head as a heatmap, with its matrix and every map to download."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.explore.shared import Shown, figure_name, layer_head_pickers, maps_npz, query_labels, show_head
from pages.figures import matrix_csv
from pages.i18n import t
from pages.pickers import kind_picker
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis.attention import KINDS


def render(shown: Shown) -> None:
    maps, translation = shown.maps, shown.translation
    kind_column, layer_column, head_column = st.columns([3, 1, 1], vertical_alignment="bottom")
    kind = kind_picker("kind", kind_column)
    layer, head = layer_head_pickers(maps, columns=(layer_column, head_column))
    chart, guide = st.columns([3, 1])
    with chart:
        show_head(maps, kind, layer, head, key="heatmap")
    if kind != "encoder":
        chart.caption(t("explore.rows_predicted" if st.session_state.get("predicted") else "explore.rows_read"))
    with guide, st.expander(t("explore.how_to_read"), expanded=True):
        st.markdown(t("explore.how_to_read_text"))
    downloads = st.container(horizontal=True)
    name = figure_name(maps, kind, layer, head)
    # The files are made when the button is pressed (a callable), not at every run of the page.
    downloads.download_button(
        t("explore.download_csv"),
        lambda: matrix_csv(maps.matrix(kind, layer, head), query_labels(maps, kind), maps.tokens(kind)[1]),
        file_name=f"{name}.csv",
        mime="text/csv",
    )
    downloads.download_button(
        t("explore.download_npz"),
        lambda: maps_npz(maps, translation),
        file_name=f"{name.split('-' + kind)[0]}.npz",
        mime="application/octet-stream",
    )


TAB = Tab(
    "Heads",
    "explore.view_heads",
    render,
    {
        "kind": Field(None, url_state.choice(KINDS)),  # None: the loaded model's clearest head (explore.default_view)
        "layer": Field(None),
        "head": Field(None),
    },
)
