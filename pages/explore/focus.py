"""The *Token focus* tab of Translate and explore: the paper's token view, lines from each query token to the keys it
attends to, for the chosen heads of one layer."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.explore.shared import Shown, figure_name, kind_choice
from pages.figures import show_figure
from pages.i18n import language, t
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis.attention import KINDS
from transformer.plots import attention as plot_attention


def render(shown: Shown) -> None:
    maps = shown.maps
    kind, queries, keys = kind_choice(maps, "focus_kind")
    left, right = st.columns(2)
    url_state.ensure("focus_layer", min(4, maps.num_layers - 1), lambda i: 0 <= i < maps.num_layers)
    layer = left.selectbox(
        t("explore.layer_label"), range(maps.num_layers), key="focus_layer", format_func=lambda i: str(i + 1)
    )
    options = [None, *range(len(queries))]
    url_state.ensure("focus_query", None, options.__contains__)
    query_names = {i: t("explore.all_tokens") if i is None else f"{i + 1}: {queries[i]}" for i in options}
    query = keyed(right.selectbox, t("explore.query"), options, key="focus_query", format_func=query_names.get)
    url_state.ensure("focus_heads", list(range(maps.num_heads)), url_state.indices_below(maps.num_heads))
    head_names = {h: t("explore.head", head=h + 1) for h in range(maps.num_heads)}
    heads = keyed(
        st.multiselect, t("explore.heads"), list(range(maps.num_heads)), format_func=head_names.get, key="focus_heads"
    )
    title = f"{t(f'kind.{kind}')}, {t('explore.layer', layer=layer + 1)}" + (
        "" if query is None else t("explore.attention_of", token=queries[query])
    )
    lines = plot_attention.token_lines(
        maps.weights(kind)[layer],
        queries,
        keys,
        heads=heads or None,
        query_index=query,
        title=title,
        language=language(),
    )
    show_figure(lines, key="focus", filename=figure_name(maps, kind, layer, None).replace("-headavg", "-token-lines"))


TAB = Tab(
    "Token focus",
    "explore.view_token_focus",
    render,
    {  # layer and heads kept from 0 (named from 1 in the URL), the query position from 0
        "focus_kind": Field("encoder", url_state.choice(KINDS)),
        "focus_layer": Field(None, url_state.numbered(64), url_state.dump_numbered, url_state.integer(0, 63)),
        "focus_query": Field(None, url_state.optional_integer(0, 10_000), url_state.dump_optional),
        "focus_heads": Field(
            None, url_state.numbered_list(64), url_state.dump_numbered_list, url_state.integers(0, 63)
        ),
    },
)
