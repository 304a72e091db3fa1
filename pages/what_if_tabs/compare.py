"""*Side by side*: two checkpoints (a training-step snapshot is a checkpoint folder too) on one sentence, or two
sentences on one checkpoint, the same view on both sides and their difference where the shapes match."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.figures import matrix_csv, show_figure
from pages.i18n import escaped, language, t
from pages.models import cached_translation, error_line, may_open_folders, open_checkpoint
from pages.sentence import sentence_input
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import (
    Case,
    comparison_checkpoints,
    describe,
    download,
    head_pickers,
    heatmap,
    open_comparison,
    translation_line,
    view_fields,
)
from transformer.analysis.compare import difference, same_tokens
from transformer.formats.checkpoint import CheckpointError
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import whatif as plot_whatif

MODES = ("checkpoints", "sentences")


def render(case: Case) -> None:
    loaded, text, translation, options = case.loaded, case.text, case.translation, case.options
    st.caption(t("whatif.compare_intro"))
    mode_names = {mode: t(f"whatif.mode_{mode}") for mode in MODES}
    mode = keyed(st.radio, t("whatif.compare"), MODES, key="wi_mode", format_func=mode_names.get, horizontal=True)
    if mode == "checkpoints":
        choices = comparison_checkpoints(loaded)
        url_state.ensure("wi_other", choices[0], choices.__contains__)
        left, right = st.columns(2)
        chosen = left.selectbox(t("whatif.other_checkpoint"), choices, key="wi_other", help=t("whatif.other_help"))
        typed = ""
        if may_open_folders():  # the box, like the sidebar's, only for a visitor who may open any folder
            typed = right.text_input(
                t("whatif.other_folder"), key="wi_other_path", max_chars=1000, help=t("whatif.other_folder_help")
            ).strip()
        elif st.session_state.get("wi_other_path", "").strip():  # a link named a folder: say it is not opened
            right.info(t("whatif.folder_not_offered"))
        other_name = typed or chosen
        try:
            other = open_checkpoint(typed) if typed else open_comparison(chosen)
        except CheckpointError as error:
            st.error(t("whatif.other_failed", name=escaped(other_name), message=error_line(error)))
            return
        second = cached_translation(other, text, options)
        sides = ((loaded.path.name, translation), (other.path.name, second))
        compared = other
    else:
        other_text = sentence_input(t("whatif.other_sentence"), "wi_other_text", t("whatif.type_other"))
        if other_text is None:
            return
        second = cached_translation(loaded, other_text, options)
        sides = ((text, translation), (other_text, second))
        compared = loaded
    kind, layer, head = head_pickers(loaded, "wi_compare_", also=compared if compared is not loaded else None)
    if shape(loaded.config) != shape(compared.config):
        st.caption(t("whatif.shapes_of_models", left=shape(loaded.config), right=shape(compared.config)))
    columns = st.columns(2)
    for index, (column, (name, side)) in enumerate(zip(columns, sides, strict=True)):
        with column:
            translation_line(name, side.translation)
            heatmap(side.maps, kind, layer, head, describe(kind, layer, head), f"wi_compare_{index}")
    delta = difference(translation.maps, second.maps, kind, layer, head)
    if delta is None:
        st.info(t("whatif.shapes_differ"))
        return
    queries, keys = map(readable_pieces, translation.maps.tokens(kind))
    if not same_tokens(translation.maps, second.maps, kind):
        queries, keys = [str(i) for i in range(delta.shape[0])], [str(i) for i in range(delta.shape[1])]
        st.caption(t("whatif.positions_only"))
    show_figure(
        plot_whatif.difference_heatmap(delta, queries, keys, t("whatif.difference_title"), language()),
        key="wi_difference",
    )
    st.caption(t("whatif.largest_difference", value=float(np.abs(delta).max())))
    download("wi_difference", "difference", lambda: matrix_csv(delta, queries, keys), "csv", "text/csv")


def shape(config) -> str:
    """A model's shape as the caption names it: ``6+6 layers × 8 heads``."""
    return t("whatif.shape", encoder=config.encoder_layers, decoder=config.decoder_layers, heads=config.num_heads)


TAB = Tab(
    "compare",
    "whatif.tab_compare",
    render,
    {
        **view_fields("compare_"),
        "wi_mode": Field(MODES[0], url_state.choice(MODES)),
        "wi_other": Field(None),
        "wi_other_path": Field("", url_state.text(1000)),
        "wi_other_text": Field(
            "The Law will never be perfect, but its application should be just.", url_state.text(2000)
        ),
    },
)
