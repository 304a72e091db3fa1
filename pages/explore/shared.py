"""What the tabs of *Translate and explore* share: what the page hands each of them (:class:`Shown`), the layer and
head pickers, the head heatmap with its link to the atlas, and the names of downloads."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import streamlit as st

from pages.choices import keyed
from pages.figures import sentence_slug, show_figure
from pages.i18n import language, t
from pages.links import atlas_button
from pages.pickers import kind_picker
from transformer.analysis.attention import AttentionMaps, Translation
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import attention as plot_attention


@dataclass(frozen=True)
class Shown:
    """What every tab draws from: the sentence's attention as the sidebar shows it (merged words, specials or not),
    the translation itself, and the loaded model."""

    maps: AttentionMaps
    translation: Translation
    loaded: LoadedCheckpoint


def maps_npz(maps: AttentionMaps, translation: Translation) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        encoder=maps.encoder,
        decoder=maps.decoder,
        cross=maps.cross,
        source_tokens=np.array(maps.source_tokens),
        target_tokens=np.array(maps.target_tokens),
        predicted_tokens=np.array(maps.predicted_tokens),
        source_text=np.array(translation.source_text),
        translation=np.array(translation.translation),
    )
    return buffer.getvalue()


def choice_index(value: str, count: int) -> int | None:
    """'avg' → None (average), else a 1-based number clamped into range → 0-based index."""
    if value == "avg":
        return None
    try:
        return min(max(int(value), 1), count) - 1
    except ValueError:
        return 0


def layer_head_pickers(maps: AttentionMaps, prefix: str = "", columns=None) -> tuple[int | None, int | None]:
    """Layer and head selectboxes (keys ``{prefix}layer``/``{prefix}head``, values "1"… or "avg") → 0-based indices,
    None for an average. Averaging "head N" over layers would mix heads that only share a number, so the average
    over layers is always over all heads."""
    layer_options = ["avg", *map(str, range(1, maps.num_layers + 1))]
    head_options = ["avg", *map(str, range(1, maps.num_heads + 1))]
    for key, options in ((f"{prefix}layer", layer_options), (f"{prefix}head", head_options)):
        if st.session_state.get(key) not in options:
            st.session_state[key] = options[min(1, len(options) - 1)]
    every_layer = st.session_state[f"{prefix}layer"] == "avg"
    if every_layer:
        st.session_state[f"{prefix}head"] = "avg"
    left, right = columns or st.columns(2)
    average = t("explore.average")
    names = {value: average if value == "avg" else value for value in {*layer_options, *head_options}}
    keyed(left.selectbox, t("explore.layer_label"), layer_options, key=f"{prefix}layer", format_func=names.get)
    keyed(
        right.selectbox,
        t("explore.head_label"),
        head_options,
        key=f"{prefix}head",
        format_func=names.get,
        disabled=every_layer,
        help=t("explore.heads_averaged") if every_layer else None,
    )
    return (
        choice_index(st.session_state[f"{prefix}layer"], maps.num_layers),
        choice_index(st.session_state[f"{prefix}head"], maps.num_heads),
    )


def figure_name(maps: AttentionMaps, kind: str, layer: int | None, head: int | None) -> str:
    """A download's name after what it shows: sentence, attention kind, layer and head."""
    sentence = sentence_slug("".join(maps.source_tokens))
    return f"{sentence}-{kind}-layer{'avg' if layer is None else layer + 1}-head{'avg' if head is None else head + 1}"


def describe(kind: str, layer: int | None, head: int | None) -> str:
    where = t("explore.all_layers") if layer is None else t("explore.layer", layer=layer + 1)
    which = t("explore.all_heads") if head is None else t("explore.head", head=head + 1)
    return f"{t(f'kind.{kind}')}, {where}, {which}"


def kind_choice(maps: AttentionMaps, key: str, where=st) -> tuple[str, list[str], list[str]]:
    """The attention kind picked with the radio ``key``, and its query and key tokens as the views label them."""
    kind = kind_picker(key, where)
    return kind, query_labels(maps, kind), maps.tokens(kind)[1]


def query_labels(maps: AttentionMaps, kind: str) -> list[str]:
    queries, _ = maps.tokens(kind)
    if kind != "encoder" and st.session_state.get("predicted"):
        return [f"→{token}" for token in maps.predicted_tokens]
    return queries


def show_head(maps: AttentionMaps, kind: str, layer: int, head: int, key: str) -> None:
    """One head's heatmap, drawn at the scale the sidebar chose."""
    show_figure(
        plot_attention.attention_heatmap(
            maps.matrix(kind, layer, head),
            query_labels(maps, kind),
            maps.tokens(kind)[1],
            describe(kind, layer, head),
            causal=kind == "decoder",
            fitted=st.session_state["scale"] == "fitted",
            language=language(),
        ),
        key=key,
        filename=figure_name(maps, kind, layer, head),
    )
    atlas_button(kind, layer, head, key=f"{key}_atlas")
