"""*Rollout and flow*: Abnar & Zuidema's (2020) attention rollout and flow for the encoder, and a rollout through
cross-attention to the source words, beside raw attention (:mod:`transformer.analysis.rollout`)."""

from __future__ import annotations

import io

import numpy as np
import streamlit as st

from pages import url_state
from pages.figures import show_figure
from pages.i18n import language, t
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import Case, download, heatmap
from transformer.analysis import rollout
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import attention as plot_attention


@st.cache_data(max_entries=16, show_spinner=False)
def cached_flow(checkpoint: str, text: str, residual: float, layer: int, _weights: np.ndarray) -> np.ndarray:
    return rollout.attention_flow(_weights, residual, layer)


def render(case: Case) -> None:
    loaded, text, translation = case.loaded, case.text, case.translation
    st.caption(t("whatif.rollout_intro"))
    maps = translation.maps
    layers = maps.num_layers
    left, middle, right = st.columns([2, 2, 1], vertical_alignment="bottom")
    url_state.ensure("wi_roll_layer", layers, lambda value: 1 <= int(value) <= layers)
    layer = left.slider(t("whatif.up_to_layer"), 1, layers, key="wi_roll_layer") - 1
    residual = middle.slider(
        t("whatif.residual"), 0.0, 0.9, step=0.1, key="wi_residual", help=t("whatif.residual_help")
    )
    short = len(maps.source_tokens) <= rollout.MAX_FLOW_TOKENS
    flow = right.toggle(
        t("whatif.flow"), key="wi_flow", disabled=not short, help=t("whatif.flow_help", most=rollout.MAX_FLOW_TOKENS)
    )
    tokens = readable_pieces(maps.source_tokens)
    st.header(t("whatif.encoder_rollout"))
    columns = st.columns(2)  # two across, flow below: three across left each map too narrow to read at 1280 px
    with columns[0]:
        heatmap(maps, "encoder", layer, None, t("whatif.raw", layer=layer + 1), "wi_raw_encoder")
    rolled = rollout.attention_rollout(maps.encoder, residual)[layer]
    with columns[1]:
        show_figure(
            plot_attention.attention_heatmap(
                rolled, tokens, tokens, t("whatif.rollout", layer=layer + 1), language=language()
            ),
            key="wi_rollout",
        )
    if flow and short:
        with st.spinner(t("whatif.flowing")):
            flowed = cached_flow(str(loaded.path), text, residual, layer, maps.encoder)
        with st.columns(2)[0]:
            title = t("whatif.flow_title", layer=layer + 1)
            show_figure(
                plot_attention.attention_heatmap(flowed, tokens, tokens, title, language=language()), key="wi_flow_map"
            )
    st.header(t("whatif.cross_rollout"))
    through = rollout.cross_rollout(maps.encoder, maps.decoder, maps.cross, residual)
    share = through["source_share"]
    normalised = through["source"] / np.where(share > 0, share, 1.0)[:, None]
    left, right = st.columns(2)
    with left:
        heatmap(maps, "cross", None, None, t("whatif.raw_cross"), "wi_raw_cross")
    with right:
        show_figure(
            plot_attention.attention_heatmap(
                normalised,
                readable_pieces(maps.target_tokens),
                tokens,
                t("whatif.cross_rollout_title"),
                language=language(),
            ),
            key="wi_cross_rollout",
        )
    st.caption(t("whatif.source_share", low=float(share.min()), high=float(share.max())))
    arrays = {
        "source_tokens": np.array(maps.source_tokens),
        "target_tokens": np.array(maps.target_tokens),
        "encoder_rollout": rollout.attention_rollout(maps.encoder, residual),
        "cross_rollout": through["source"],
        "source_share": share,
        "residual": np.array(residual),
    }
    if flow and short:
        arrays["encoder_flow"] = flowed

    def archive() -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        return buffer.getvalue()

    download("wi_rollout", "rollout", archive, "npz", "application/octet-stream")


TAB = Tab(
    "rollout",
    "whatif.tab_rollout",
    render,
    {
        "wi_residual": Field(0.5, url_state.number(0.0, 0.9)),
        "wi_roll_layer": Field(6, url_state.integer(1, 64)),
        "wi_flow": Field(False, url_state.flag, url_state.dump_flag),
    },
)
