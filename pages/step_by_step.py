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
from pages.common import page_checkpoint, presenting, save_page, show_figure
from pages.explore import DEFAULT_SENTENCE, cached_translation, decoding_options
from pages.url_state import Field
from transformer.analysis.attention import KIND_TITLES, KINDS
from transformer.analysis.steps import STEPS, HeadSteps, head_scaling, head_steps, next_tokens, scaling_demo
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
    "steps_dk": Field(64, url_state.choice(plot_steps.WIDTHS)),
    "steps_t": Field(0, url_state.integer(0, 10_000)),
}


@st.cache_data(max_entries=32, show_spinner="Recording the head's tensors…")
def cached_steps(
    checkpoint_path: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...], kind: str, layer: int, head: int,
    _loaded: LoadedCheckpoint,
) -> HeadSteps:  # fmt: skip
    return head_steps(_loaded.model, _loaded.tokenizer, source_ids, output_ids, kind, layer, head)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_demo(d_k: int):
    return scaling_demo(d_k)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_next_tokens(checkpoint_path: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...], _loaded):
    return next_tokens(_loaded.model, _loaded.tokenizer, source_ids, output_ids)


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
# In presenter mode the controls fold away, so that the chart fills the screen.
controls = st.expander("Sentence, attention, layer, head, query") if presenting() else st.container()
with controls:
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

stepwise, scaling, multihead, decoding = st.tabs(
    ["Step by step", "Why √d_k", "Multi-head at a glance", "Decoding, one token at a time"]
)
with stepwise:
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

with scaling:
    st.markdown(
        "§3.2.1: *“assume that the components of q and k are independent random variables with mean 0 and "
        "variance 1. Then their dot product has mean 0 and variance d_k.”* Large scores push the softmax into "
        "regions where one key takes nearly all the weight and the gradients are tiny; dividing by √d_k keeps the "
        "scores' variance at 1 whatever the width."
    )
    d_k = st.select_slider("d_k (width of q and k)", plot_steps.WIDTHS, key="steps_dk",
                           help="The paper's base model uses d_k = 64; this model uses "
                           f"d_k = {steps.d_k}.")  # fmt: skip
    demo = cached_demo(d_k)
    show_figure(plot_steps.scaling_figure(demo, [cached_demo(width) for width in plot_steps.WIDTHS]),
                key="steps_scaling_demo", filename=f"why-sqrt-dk-{d_k}")  # fmt: skip
    st.caption(
        f"d_k = {d_k}: the largest softmax weight in a row of 10 random keys is {demo.largest_weight(False):.2f} on "
        f"average without the scaling and {demo.largest_weight(True):.2f} with it (uniform: 0.10)."
    )
    values = head_scaling(steps)
    show_figure(plot_steps.head_scaling_figure(values, steps), key="steps_scaling_head",
                filename=f"why-sqrt-dk-{steps.kind}-L{layer}-H{head}")  # fmt: skip
    st.caption(
        f"On this head, the softmax entropy averages {values['entropy_scaled'].mean():.2f} bits with the scaling "
        f"(the model as trained) and {values['entropy_unscaled'].mean():.2f} bits without it; a uniform row over the "
        f"keys a query sees would have {values['uniform'].mean():.2f}."
    )

with multihead:
    layer_weights = translation.maps.weights(kind)[layer - 1]
    show_figure(plot_steps.multihead_figure(layer_weights, steps, query), key="steps_multihead",
                filename=f"multi-head-{kind}-L{layer}-q{query}")  # fmt: skip
    st.caption(
        f"Each head weighs the keys in its own way (head {head}, the one chosen above, in red); their outputs, "
        f"{steps.d_k} numbers each, are joined into one row of d_model = {config.d_model} and mixed by W_O "
        "(*Step by step*, steps 8–9)."
    )

with decoding:
    upcoming = cached_next_tokens(str(loaded.path), tuple(translation.source_ids), tuple(translation.output_ids),
                                  loaded)  # fmt: skip
    positions = len(upcoming.position_tokens)
    url_state.ensure("steps_t", 0, lambda value: 0 <= int(value) < positions)
    t = st.slider("Output position", 0, positions - 1, key="steps_t",
                  help="Position t reads the pieces before it and predicts the next one.")  # fmt: skip
    decoder_layer = min(layer, config.decoder_layers) - 1
    maps = translation.maps
    show_figure(
        plot_steps.decoding_figure(maps.decoder[decoder_layer, head - 1, t], maps.cross[decoder_layer, head - 1, t],
                                   maps.source_tokens, upcoming, t, decoder_layer, head - 1),
        key="steps_decoding", filename=f"decoding-step-{t}",
    )  # fmt: skip
    search = "greedy search" if translation.options.greedy else f"beam search (beam {translation.options.beam_size})"
    st.caption(
        f"The red bar is the piece the {search} kept: "
        + ("always the most probable one." if translation.options.greedy else
           "the hypothesis that won, which need not be the most probable piece at every step.")
        + " The attention rows are those of the decoder layer and head chosen above."
    )  # fmt: skip
save_page(FIELDS)
