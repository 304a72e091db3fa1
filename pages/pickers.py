"""The head picker every page shares: an attention kind, a layer and a head, numbered from 1 as the app shows them
(and as the URL keeps them)."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.i18n import t
from transformer.paper.config import ATTENTION_KINDS, ModelConfig


def kind_labels() -> dict[str, str]:
    """The attention kinds' short names in the chosen language (looked up now, not inside a format function)."""
    return {kind: t(f"explore.kind_{kind}") for kind in ATTENTION_KINDS}


def kind_picker(key: str, where=st) -> str:
    """A radio of the three attention kinds (key ``key``) in ``where``; returns the kind."""
    return keyed(
        where.radio, t("explore.attention"), ATTENTION_KINDS, key=key, format_func=kind_labels().get, horizontal=True
    )


def head_picker(
    config: ModelConfig, prefix: str, columns=None, also: ModelConfig | None = None
) -> tuple[str, int, int]:
    """A radio for the attention kind and selectboxes for the layer and head (keys ``{prefix}kind``,
    ``{prefix}layer``, ``{prefix}head``; 1-based numbers, brought into range when the kind or the model changes) in
    ``columns`` (default: a row of three). ``also``: a second model shown beside the first, of which the layer and
    head must exist too (only the layers and heads both have are offered). Returns the kind and the 0-based layer
    and head."""
    kind_column, layer_column, head_column = columns or st.columns([3, 1, 1], vertical_alignment="bottom")
    kind = kind_picker(f"{prefix}kind", kind_column)
    layers, heads = config.layers(kind), config.num_heads
    if also is not None:
        layers, heads = min(layers, also.layers(kind)), min(heads, also.num_heads)
    url_state.ensure(f"{prefix}layer", 1, lambda value: 1 <= int(value) <= layers)
    url_state.ensure(f"{prefix}head", 1, lambda value: 1 <= int(value) <= heads)
    layer = layer_column.selectbox(t("explore.layer_label"), range(1, layers + 1), key=f"{prefix}layer")
    head = head_column.selectbox(t("explore.head_label"), range(1, heads + 1), key=f"{prefix}head")
    return kind, layer - 1, head - 1
