"""Attention, step by step: one head of the loaded model computed in the paper's order, on the translated sentence.

Every matrix is the real tensor of that head (recorded during the model's own forward pass and recomputed from its
weights: :mod:`transformer.analysis.steps`), with the paper's equation, its shape and every number on hover. A
stepper walks through the eleven steps one at a time; "Show all steps" lays them out in one page.
"""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.common import page_checkpoint, save_page, show_figure
from pages.explore import DEFAULT_SENTENCE, cached_translation, decoding_options
from pages.url_state import Field
from transformer.analysis.attention import KIND_TITLES, KINDS
from transformer.analysis.steps import STEPS, HeadSteps, head_steps
from transformer.checkpoint import LoadedCheckpoint
from transformer.decode import DEFAULT_DECODING, DecodingOptions
from transformer.plots import steps as plot_steps

st.set_page_config(page_title="Attention, step by step", page_icon="🧮", layout="wide")

FIELDS = {
    "steps_text": Field(None, url_state.text(2000)),
    "steps_kind": Field("encoder", url_state.choice(KINDS)),
    "steps_layer": Field(1, url_state.integer(1, 64)),
    "steps_head": Field(1, url_state.integer(1, 64)),
    "steps_query": Field(0, url_state.integer(0, 10_000)),
    "steps_step": Field(1, url_state.integer(1, len(STEPS))),
    "steps_all": Field(False, url_state.flag, url_state.dump_flag),
}


@st.cache_data(max_entries=32, show_spinner="Recording the head's tensors…")
def cached_steps(
    checkpoint_path: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...], kind: str, layer: int, head: int,
    _loaded: LoadedCheckpoint,
) -> HeadSteps:  # fmt: skip
    return head_steps(_loaded.model, _loaded.tokenizer, source_ids, output_ids, kind, layer, head)


def current_options() -> DecodingOptions:
    """The main page's decoding choices when it has been visited in this session, else the paper's."""
    try:
        return decoding_options()
    except (KeyError, ValueError):
        return DEFAULT_DECODING


def move(by: int) -> None:
    st.session_state["steps_step"] = min(max(st.session_state["steps_step"] + by, 1), len(STEPS))


def show_step(steps: HeadSteps, number: int, query: int) -> None:
    step = STEPS[number - 1]
    st.subheader(f"Step {number} of {len(STEPS)}: {step.title}")
    left, right = st.columns([1, 1])
    left.latex(step.equation)
    right.markdown(step.explanation)
    show_figure(plot_steps.step_figure(steps, step.key, query), key=f"step_{step.key}",
                filename=f"step-{number}-{step.key}-{steps.kind}-L{steps.layer + 1}-H{steps.head + 1}")  # fmt: skip
    if step.key in ("masked", "weights"):
        show_figure(plot_steps.query_row_figure(steps, query), key=f"step_row_{step.key}")
    if step.key == "weights":
        st.caption("These are exactly the weights the *Translate and explore* page draws for this head.")
    if step.key in ("concatenated", "projected", "output"):
        difference = steps.agreement()[step.key]
        st.caption(
            f"Recomputed from the model's weights; the model's own forward pass gives the same matrix (largest "
            f"difference {difference:.1e})."
        )


loaded = page_checkpoint("step_by_step", FIELDS)
url_state.ensure("steps_text", st.session_state.get("text") or DEFAULT_SENTENCE)
st.title("Attention, step by step")
st.caption(
    "One head of the loaded model, computed in the order of §3.2 of the paper, from the tensors of its own forward "
    "pass on the sentence and its translation. Hover over any cell for its value."
)
text = st.text_input("English sentence", key="steps_text", max_chars=2000).strip()
if not text:
    st.info("Type a sentence to translate.")
    save_page(FIELDS)
    st.stop()
translation = cached_translation(str(loaded.path), text, current_options(), loaded)
st.markdown(f"**Translation:** {translation.translation or '∅'}")

config = loaded.config
kind_column, layer_column, head_column, query_column = st.columns([3, 1, 1, 2])
kind = kind_column.radio("Attention", KINDS, format_func=KIND_TITLES.get, key="steps_kind", horizontal=True)
layers = config.encoder_layers if kind == "encoder" else config.decoder_layers
url_state.ensure("steps_layer", 1, lambda value: 1 <= int(value) <= layers)
url_state.ensure("steps_head", 1, lambda value: 1 <= int(value) <= config.num_heads)
layer = layer_column.selectbox("Layer", range(1, layers + 1), key="steps_layer")
head = head_column.selectbox("Head", range(1, config.num_heads + 1), key="steps_head")
steps = cached_steps(str(loaded.path), tuple(translation.source_ids), tuple(translation.output_ids), kind,
                     layer - 1, head - 1, loaded)  # fmt: skip
url_state.ensure("steps_query", 0, lambda value: 0 <= int(value) < len(steps.query_tokens))
query = query_column.selectbox(
    "Query token", range(len(steps.query_tokens)), key="steps_query",
    format_func=lambda index: f"{index}: {steps.query_tokens[index]}",
    help="Its row is outlined in every matrix, and its scores and weights are drawn as bars.",
)  # fmt: skip
st.caption(
    f"{len(steps.query_tokens)} queries × {len(steps.key_tokens)} keys, d_model = {config.d_model}, "
    f"h = {config.num_heads} heads of width d_k = {steps.d_k}."
)

show_all = st.toggle("Show all steps", key="steps_all")
if show_all:
    for number in range(1, len(STEPS) + 1):
        show_step(steps, number, query)
else:
    previous, position, following = st.columns([1, 4, 1])
    previous.button("← Previous", on_click=move, args=(-1,), disabled=st.session_state["steps_step"] <= 1,
                    width="stretch")  # fmt: skip
    following.button("Next →", on_click=move, args=(1,), disabled=st.session_state["steps_step"] >= len(STEPS),
                     width="stretch")  # fmt: skip
    number = position.select_slider(
        "Step", range(1, len(STEPS) + 1), key="steps_step", label_visibility="collapsed",
        format_func=lambda n: f"{n}. {STEPS[n - 1].title}",
    )  # fmt: skip
    show_step(steps, number, query)
save_page(FIELDS)
