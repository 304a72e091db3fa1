"""The *Attribution* tab of Translate and explore: one output token's gradient attribution over the source and the
words already written, beside its cross-attention (:mod:`transformer.analysis.attribution`)."""

from __future__ import annotations

import re

import numpy as np
import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.explore.shared import Shown
from pages.figures import sentence_slug, show_figure
from pages.i18n import language, t
from pages.models import stored_beside
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis import attribution as at
from transformer.analysis.faithfulness import FAITHFULNESS_FILE
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import readable_piece, readable_pieces
from transformer.plots import attribution as plot_attribution

ALTERNATIVES = 5  # the most probable other tokens offered for "why this and not that"
NO_CONTRAST = -1  # the "why not…" choice of no alternative (a selectbox shows None as no choice at all)


@per_model(max_entries=64)
def cached_attribution(
    loaded: LoadedCheckpoint,
    source_ids: tuple[int, ...],
    output_ids: tuple[int, ...],
    position: int,
    method: str,
    alternative: int | None,
) -> at.Attribution:
    return at.attribute(loaded.model, source_ids, output_ids, position, method, alternative)


@per_model(max_entries=64)
def alternatives(
    loaded: LoadedCheckpoint, source_ids: tuple[int, ...], output_ids: tuple[int, ...], position: int
) -> list[int]:
    """The most probable tokens at the position other than the one written."""
    log_p = at.log_probabilities(loaded.model, source_ids, output_ids, position)
    ranked = [int(i) for i in log_p.topk(ALTERNATIVES + 1).indices]
    return [token for token in ranked if token != output_ids[position]][:ALTERNATIVES]


def render(shown: Shown) -> None:
    translation, loaded = shown.translation, shown.loaded
    try:
        at.captum_attr()
    except at.AttributionUnavailable:
        st.info(t("explore.attr_missing"))
        return
    output_ids = tuple(translation.output_ids)
    if not output_ids:
        st.info(t("explore.attr_nothing"))
        return
    source_ids, pieces = tuple(translation.source_ids), readable_pieces(loaded.tokenizer.pieces(output_ids))
    url_state.ensure("attr_position", 0, lambda value: isinstance(value, int) and 0 <= value < len(output_ids))
    url_state.ensure("attr_method", at.METHODS[-1], lambda value: value in at.METHODS)
    token_column, method_column, against_column = st.columns([2, 3, 2], vertical_alignment="bottom")
    token_column.selectbox(
        t("explore.attr_token"),
        range(len(output_ids)),
        key="attr_position",
        format_func=lambda i: f"{i + 1}: {pieces[i]}",
    )
    position = st.session_state["attr_position"]
    keyed(
        method_column.radio,
        t("explore.attr_method"),
        at.METHODS,
        key="attr_method",
        horizontal=True,
        format_func=lambda name: t(f"explore.attr_{name}"),
        help=t("explore.attr_method_help"),
    )
    options = [NO_CONTRAST, *alternatives(loaded, source_ids, output_ids, position)]
    url_state.ensure("attr_against", NO_CONTRAST, lambda value: value in options)
    keyed(
        against_column.selectbox,
        t("explore.attr_against"),
        options,
        key="attr_against",
        format_func=lambda token: (
            t("explore.attr_nothing_else")
            if token == NO_CONTRAST
            else readable_piece(loaded.tokenizer.pieces([token])[0])
        ),
        help=t("explore.attr_against_help"),
    )
    method = st.session_state["attr_method"]
    against = None if st.session_state["attr_against"] == NO_CONTRAST else st.session_state["attr_against"]
    with st.spinner(t("explore.attr_computing")):
        found = cached_attribution(loaded, source_ids, output_ids, position, method, against)
    written = (
        pieces[position]
        if against is None
        else f"{pieces[position]} / {readable_piece(loaded.tokenizer.pieces([against])[0])}"
    )
    attention = translation.maps.cross[:, :, position, :].mean(axis=(0, 1))
    name = f"{sentence_slug(translation.source_text)}-attribution-{position + 1}-{method}"
    show_figure(
        plot_attribution.attribution_figure(
            readable_pieces(translation.maps.source_tokens),
            found.source,
            t("explore.attr_source_title", token=written),
            attention=plot_attribution.shares(attention),
            language=language(),
        ),
        key="attribution_source",
        filename=f"{name}-source",
    )
    show_figure(
        plot_attribution.attribution_figure(
            readable_pieces(translation.maps.target_tokens[: position + 1]),
            found.prefix,
            t("explore.attr_prefix_title", token=written),
            language=language(),
        ),
        key="attribution_prefix",
        filename=f"{name}-prefix",
    )
    st.caption(
        t("explore.attr_share", share=found.source_share(), score=found.score)
        + ("" if found.delta is None else " " + t("explore.attr_delta", delta=found.delta))
        + "\n\n"
        + t("explore.attr_caption", correlation=_agreement(attention, found.source))
    )
    with st.expander(t("explore.faith_title")):
        faithfulness_panel(loaded)


def explanation_label(name: str) -> str:
    """An explanation's name as ``benchmarks/faithfulness.py`` stores it, in the visitor's language."""
    if name in at.METHODS:
        return t(f"explore.attr_{name}")
    if match := re.fullmatch(r"attention, layer (\d+) head (\d+)", name):
        return t("explore.faith_head", layer=match[1], head=match[2])
    if match := re.fullmatch(r"attention, layer (\d+)", name):
        return t("explore.faith_layer", layer=match[1])
    known = {
        "attention, every layer": "faith_every_layer",
        "rollout": "faith_rollout",
        "random source tokens": "faith_random",
    }
    return t(f"explore.{known[name]}") if name in known else name


def faithfulness_panel(loaded: LoadedCheckpoint) -> None:
    """The deletion test stored beside the model: which explanation names the source tokens the model needs."""
    stored = stored_beside(loaded, FAITHFULNESS_FILE)
    if not stored or not stored.get("rows"):
        st.caption(t("explore.faith_missing"))
        return
    rows = stored["rows"]
    found = stored.get("intervals")  # 95% bootstrap intervals over sentences (files written since they were added)
    bounds = None
    if found:
        bounds = [[tuple(found[row[0]][k]["drop"]) if row[0] in found else None for row in rows] for k in ("1", "3")]
    show_figure(
        plot_attribution.faithfulness_figure(
            [explanation_label(row[0]) for row in rows],
            [row[1] for row in rows],
            [row[2] for row in rows],
            t("explore.faith_chart", tokens=stored["tokens"], sentences=stored["sentences"]),
            language=language(),
            intervals=bounds,
        ),
        key="faithfulness",
        filename="faithfulness",
    )
    st.caption(t("explore.faith_caption"))


def _agreement(attention: np.ndarray, attribution: np.ndarray) -> float:
    """Spearman correlation of the attention and the absolute attribution over the source tokens."""
    if len(attention) < 2:
        return float("nan")
    ranks = [np.argsort(np.argsort(values)) for values in (attention, np.abs(attribution))]
    if ranks[0].std() == 0 or ranks[1].std() == 0:
        return float("nan")
    return float(np.corrcoef(*ranks)[0, 1])


TAB = Tab(
    "Attribution",
    "explore.view_attribution",
    render,
    {  # the output position (0-based), the method, and the token it is explained against (-1: none)
        "attr_position": Field(None, url_state.optional_integer(0, 10_000), url_state.dump_optional),
        "attr_method": Field(None, url_state.choice(at.METHODS)),
        "attr_against": Field(None, url_state.integer(-1, 1_000_000)),
    },
)
