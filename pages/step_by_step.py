"""Attention, step by step: the classroom page, on the loaded model and the translated sentence.

- *Step by step*: one head computed in the paper's order. Every matrix is the real tensor of that head (recorded
  during the model's own forward pass and recomputed from its weights: :mod:`transformer.analysis.steps`), with the
  paper's equation, its shape and every number on hover; a stepper walks through the eleven steps, or all at once.
- *Why √d_k*: §3.2.1's footnote on random vectors with a slider for d_k, and the same scaling on the chosen head.
- *Multi-head at a glance*: the chosen query in every head of the layer, then their concatenation.
- *Decoding, one token at a time*: at each output position its masked self-attention row, its cross-attention row
  and the model's most probable next pieces, with the piece the search kept.
"""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.common import leave_page, page
from pages.decoding import current_options
from pages.figures import presenting, show_figure
from pages.i18n import escaped, language, t
from pages.links import atlas_button
from pages.models import cached_translation
from pages.pickers import head_picker
from pages.sentence import follow_sentence, linked_sentence_note, sentence_input
from pages.url_state import Field
from transformer.analysis.attention import KINDS
from transformer.analysis.steps import (
    PRE_NORM_EQUATIONS,
    STEPS,
    HeadSteps,
    equation,
    head_scaling,
    head_steps,
    next_tokens,
    scaling_demo,
)
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import scaling as plot_scaling
from transformer.plots import steps as plot_steps

st.set_page_config(page_title=t("steps.page_title"), page_icon="🧮", layout="wide")

TABS = ("steps", "scaling", "multihead", "decoding")
FIELDS = {
    "steps_text": Field(None, url_state.text(2000)),
    "steps_kind": Field("encoder", url_state.choice(KINDS)),
    "steps_layer": Field(1, url_state.integer(1, 64)),
    "steps_head": Field(1, url_state.integer(1, 64)),
    "steps_query": Field(0, url_state.integer(0, 10_000)),
    "steps_step": Field(1, url_state.integer(1, len(STEPS))),
    "steps_all": Field(False, url_state.flag, url_state.dump_flag),
    "steps_dk": Field(64, url_state.choice(plot_scaling.WIDTHS)),
    "steps_t": Field(0, url_state.integer(0, 10_000)),
    "steps_tab": Field(TABS[0], url_state.choice(TABS)),
}


@per_model(max_entries=32)
def cached_steps(
    loaded: LoadedCheckpoint, source_ids: tuple[int, ...], output_ids: tuple[int, ...], kind: str, layer: int, head: int
) -> HeadSteps:
    return head_steps(loaded.model, loaded.tokenizer, source_ids, output_ids, kind, layer, head)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_demo(d_k: int):
    return scaling_demo(d_k)


@per_model(max_entries=32)
def cached_next_tokens(loaded: LoadedCheckpoint, source_ids: tuple[int, ...], output_ids: tuple[int, ...]):
    return next_tokens(loaded.model, loaded.tokenizer, source_ids, output_ids)


def move(by: int) -> None:
    st.session_state["steps_step"] = min(max(st.session_state["steps_step"] + by, 1), len(STEPS))


def show_step(steps: HeadSteps, number: int, query: int) -> None:
    step = STEPS[number - 1]
    st.header(t("steps.of", number=number, total=len(STEPS), title=t(f"step.{step.key}.title")))
    left, right = st.columns([1, 1])
    left.latex(equation(step, steps.norm_first))
    right.markdown(t(f"step.{step.key}.explanation"))
    if steps.norm_first and step.key in PRE_NORM_EQUATIONS:
        right.info(t("steps.pre_norm"))
    show_figure(
        plot_steps.step_figure(steps, step.key, query, language()),
        key=f"step_{step.key}",
        filename=f"step-{number}-{step.key}-{steps.kind}-L{steps.layer + 1}-H{steps.head + 1}",
    )
    if step.key in ("masked", "weights"):
        show_figure(plot_steps.query_row_figure(steps, query, language()), key=f"step_row_{step.key}")
    atlas_button(steps.kind, steps.layer, steps.head, key=f"step_atlas_{step.key}")
    if step.key == "weights":
        st.caption(t("steps.same_weights"))
    if step.key in ("concatenated", "projected", "output"):
        st.caption(t("steps.agreement", difference=steps.agreement()[step.key]))


with page("step_by_step", FIELDS) as loaded:
    follow_sentence("steps_text")
    st.title(t("steps.page_title"))
    st.caption(t("steps.intro"))
    # In presenter mode the controls fold away, so that the chart fills the screen.
    controls = st.expander(t("steps.controls")) if presenting() else st.container()
    with controls:
        text = sentence_input(t("steps.sentence"), "steps_text", t("steps.type_sentence")) or leave_page()
        linked_sentence_note("steps_text")
        translation = cached_translation(loaded, text, current_options())
        st.markdown(t("steps.translation", translation=escaped(translation.translation) or "∅"))

        config = loaded.config
        kind_column, layer_column, head_column, query_column = st.columns([3, 1, 1, 2])
        kind, layer, head = head_picker(config, "steps_", (kind_column, layer_column, head_column))
        with st.spinner(t("steps.recording")):
            steps = cached_steps(
                loaded, tuple(translation.source_ids), tuple(translation.output_ids), kind, layer, head
            )
        url_state.ensure("steps_query", 0, lambda value: 0 <= int(value) < len(steps.query_tokens))
        query = query_column.selectbox(
            t("steps.query"),
            range(len(steps.query_tokens)),
            key="steps_query",
            format_func=lambda index: f"{index}: {steps.query_tokens[index]}",
            help=t("steps.query_help"),
        )
        st.caption(
            t(
                "steps.shape",
                queries=len(steps.query_tokens),
                keys=len(steps.key_tokens),
                d_model=config.d_model,
                heads=config.num_heads,
                d_k=steps.d_k,
            )
        )

    # Only the open tab is built; the URL names it (steps_tab).
    tabs = url_state.tabs("steps_tab", {tab: t(f"steps.tab_{tab}") for tab in TABS})
    stepwise, scaling, multihead, decoding = (tabs[tab] for tab in TABS)
    if stepwise.open:
        with stepwise:
            step_names = {n: f"{n}. {t(f'step.{step.key}.title')}" for n, step in enumerate(STEPS, start=1)}
            show_all = st.toggle(t("steps.show_all"), key="steps_all")
            if show_all:
                for number in range(1, len(STEPS) + 1):
                    show_step(steps, number, query)
            else:
                previous, position, following = st.columns([1, 4, 1])
                first = st.session_state["steps_step"] <= 1
                previous.button(t("steps.previous"), on_click=move, args=(-1,), disabled=first, width="stretch")
                last = st.session_state["steps_step"] >= len(STEPS)
                following.button(t("steps.next"), on_click=move, args=(1,), disabled=last, width="stretch")
                number = keyed(
                    position.select_slider,
                    t("steps.step"),
                    range(1, len(STEPS) + 1),
                    key="steps_step",
                    label_visibility="collapsed",
                    format_func=step_names.get,
                )
                show_step(steps, number, query)

    if scaling.open:
        with scaling:
            st.markdown(t("steps.scaling_intro"))
            d_k = st.select_slider(
                t("steps.d_k"), plot_scaling.WIDTHS, key="steps_dk", help=t("steps.d_k_help", d_k=steps.d_k)
            )
            demo = cached_demo(d_k)
            show_figure(
                plot_scaling.scaling_figure(demo, [cached_demo(width) for width in plot_scaling.WIDTHS], language()),
                key="steps_scaling_demo",
                filename=f"why-sqrt-dk-{d_k}",
            )
            st.caption(
                t(
                    "steps.scaling_caption",
                    d_k=d_k,
                    unscaled=demo.largest_weight(False),
                    scaled=demo.largest_weight(True),
                )
            )
            values = head_scaling(steps)
            show_figure(
                plot_scaling.head_scaling_figure(values, steps, language()),
                key="steps_scaling_head",
                filename=f"why-sqrt-dk-{steps.kind}-L{layer + 1}-H{head + 1}",
            )
            st.caption(
                t(
                    "steps.head_scaling_caption",
                    scaled=values["entropy_scaled"].mean(),
                    unscaled=values["entropy_unscaled"].mean(),
                    uniform=values["uniform"].mean(),
                )
            )

    if multihead.open:
        with multihead:
            layer_weights = translation.maps.weights(kind)[layer]
            show_figure(
                plot_steps.multihead_figure(layer_weights, steps, query, language()),
                key="steps_multihead",
                filename=f"multi-head-{kind}-L{layer + 1}-q{query}",
            )
            st.caption(t("steps.multihead_caption", head=head + 1, d_k=steps.d_k, d_model=config.d_model))

    if decoding.open:
        with decoding:
            upcoming = cached_next_tokens(loaded, tuple(translation.source_ids), tuple(translation.output_ids))
            positions = len(upcoming.position_tokens)
            url_state.ensure("steps_t", 0, lambda value: 0 <= int(value) < positions)
            at = st.slider(t("steps.position"), 0, positions - 1, key="steps_t", help=t("steps.position_help"))
            decoder_layer = min(layer, config.decoder_layers - 1)
            maps = translation.maps
            show_figure(
                plot_steps.decoding_figure(
                    maps.decoder[decoder_layer, head, at],
                    maps.cross[decoder_layer, head, at],
                    readable_pieces(maps.source_tokens),
                    upcoming,
                    at,
                    decoder_layer,
                    head,
                    language(),
                ),
                key="steps_decoding",
                filename=f"decoding-step-{at}",
            )
            options = translation.options
            search = t("steps.greedy") if options.greedy else t("steps.beam", beam=options.beam_size)
            kept = t("steps.kept_greedy" if options.greedy else "steps.kept_beam", search=search)
            st.caption(f"{kept} {t('steps.rows_chosen')}")
