"""Links from one page to another that carry a view: open a page with some of its controls set, and the buttons
under a head's figure that open the head's card in the head atlas."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.i18n import t
from pages.navigation import MAIN_PAGE, PAGE_SCRIPTS, app_pages


def open_page(script: str | None, values: dict) -> None:
    """Go to another page (``script``: its file name in ``pages/``; None: the main page) with some of its controls
    set, as if the visitor had left them so there (:func:`pages.url_state.assign`)."""
    url_state.assign(values)
    names = [MAIN_PAGE, *PAGE_SCRIPTS]
    st.switch_page(app_pages()[names.index(script or MAIN_PAGE)])


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
