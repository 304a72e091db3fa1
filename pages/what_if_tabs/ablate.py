"""*Switch heads off*: any set of heads (output zeroed before Wᴼ, Michel et al. 2019) → the new translation beside
the original with the differences marked, and one head's attention with and without them
(:mod:`transformer.analysis.ablation`)."""

from __future__ import annotations

import html

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.i18n import t
from pages.models import MAX_SOURCE_TOKENS
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import (
    Case,
    describe,
    download_json,
    head_pickers,
    heads_off,
    heatmap,
    set_heads_off,
    translation_line,
    view_fields,
)
from transformer.analysis import ablation
from transformer.analysis.attention import KINDS, Translation
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import whatif as plot_whatif
from transformer.search.decode import DecodingOptions
from transformer.serving.translator import scratch_model


@per_model(max_entries=32)
def cached_ablation(loaded: LoadedCheckpoint, text: str, off: tuple, options: DecodingOptions) -> Translation:
    with scratch_model(loaded) as model:  # switching heads off changes a model: never the one all sessions share
        return ablation.translate_ablated(model, loaded.tokenizer, text, list(off), options, MAX_SOURCE_TOKENS)


def render(case: Case) -> None:
    loaded, text, translation, options = case.loaded, case.text, case.translation, case.options
    st.caption(t("whatif.ablate_intro"))
    config = loaded.config
    columns = st.columns(3)
    every_head = {
        kind: [(layer, head) for layer in range(config.layers(kind)) for head in range(config.num_heads)]
        for kind in KINDS
    }
    for column, kind in zip(columns, KINDS, strict=True):
        every = every_head[kind]
        key = f"wi_off_{kind}"
        url_state.ensure(key, [], lambda chosen, every=set(every): all(pair in every for pair in chosen))
        keyed(
            column.multiselect,
            t("whatif.off", kind=t(f"kind.{kind}")),
            every,
            key=key,
            format_func=lambda pair: t("whatif.head_chip", layer=pair[0] + 1, head=pair[1] + 1),  # short: chips fit
            placeholder=t("whatif.none_off"),
        )
    off = heads_off()
    # One short row instead of a wall of long buttons: "Every head off: Encoder · Decoder · Cross · Switch every head
    # back on".
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(t("whatif.every_head_off"), width="content")
        for kind in KINDS:
            st.button(
                t(f"kind_short.{kind}"),
                key=f"wi_all_{kind}",
                on_click=set_heads_off,
                args=([*[h for h in off if h[0] != kind], *((kind, *pair) for pair in every_head[kind])],),
                help=t("whatif.all_off", kind=t(f"kind.{kind}")),
            )
        st.button(t("whatif.clear"), on_click=set_heads_off, args=([],), disabled=not off, type="tertiary")
    with st.spinner(t("whatif.translating")):
        ablated = cached_ablation(loaded, text, tuple(off), options)
    left, right = st.columns(2)
    with left:
        translation_line(t("whatif.original"), translation.translation)
    with right:
        st.markdown(f"**{html.escape(t('whatif.ablated', count=len(off)))}**")
        titles = {"removed": t("whatif.diff_removed"), "added": t("whatif.diff_added")}
        segments = ablation.word_diff(translation.translation, ablated.translation)
        st.markdown(plot_whatif.diff_html(segments, titles), unsafe_allow_html=True)
    if off and ablated.translation == translation.translation:
        st.caption(t("whatif.unchanged"))
    kind, layer, head = head_pickers(loaded)
    state = t("whatif.this_head_off") if (kind, layer, head) in off else ""
    left, right = st.columns(2)
    with left:
        heatmap(translation.maps, kind, layer, head, describe(kind, layer, head), "wi_ablate_before", atlas=True)
    with right:
        heatmap(ablated.maps, kind, layer, head, f"{describe(kind, layer, head)} {state}".strip(), "wi_ablate_after")
    st.caption(t("whatif.ablate_note"))
    download_json(
        "wi_ablation",
        {
            "sentence": text,
            "heads_off": [[kind, layer + 1, head + 1] for kind, layer, head in off],
            "translation": translation.translation,
            "ablated": ablated.translation,
            "diff": ablation.word_diff(translation.translation, ablated.translation),
        },
    )


TAB = Tab(
    "ablate",
    "whatif.tab_ablate",
    render,
    {  # the heads switched off (per kind, layer-head from 1) and the head shown with and without them
        **{
            f"wi_off_{kind}": Field([], url_state.heads, url_state.dump_heads, legacy=url_state.integers(0, 4095))
            for kind in KINDS
        },
        **view_fields(""),
    },
)
