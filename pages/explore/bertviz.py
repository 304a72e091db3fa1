"""The *bertviz* tab of Translate and explore: bertviz's head and model views of the sentence, drawn offline."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.explore.shared import Shown
from pages.i18n import t
from pages.pickers import kind_labels
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis.attention import KINDS
from transformer.plots import bertviz as bertviz_view

BERTVIZ_VIEWS = ("head view", "model view")


def render(shown: Shown) -> None:
    maps = shown.maps
    left, right = st.columns(2)
    bertviz_names = {"head view": t("explore.bertviz_head_view"), "model view": t("explore.bertviz_model_view")}
    view = keyed(
        left.radio,
        t("explore.bertviz_view"),
        BERTVIZ_VIEWS,
        key="bertviz_view",
        horizontal=True,
        format_func=bertviz_names.get,
    )
    kinds = {"all": t("explore.all_three"), **kind_labels()}
    kind = keyed(right.selectbox, t("explore.attention"), ["all", *KINDS], key="bertviz_kind", format_func=kinds.get)
    selected = None if kind == "all" else kind
    if view == "head view":
        document = bertviz_view.head_view_html(maps, selected)
    else:
        document = bertviz_view.model_view_html(maps, selected)
    st.iframe(document, height=bertviz_view.frame_height(maps, view.split()[0], selected))
    st.download_button(
        t("explore.download_html"),
        lambda: document,
        file_name=bertviz_view.standalone_filename(selected, view.split()[0]),
        mime="text/html",
    )
    st.caption(t("explore.bertviz_credit"))


TAB = Tab(
    "bertviz",
    "explore.view_bertviz",
    render,
    {
        "bertviz_view": Field(BERTVIZ_VIEWS[0], url_state.choice(BERTVIZ_VIEWS)),
        "bertviz_kind": Field("all", url_state.choice(["all", *KINDS])),
    },
)
