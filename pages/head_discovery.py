"""Find heads by what they do: every score of every head, as a heatmap and a sortable table, over one sentence or
a sample of the dev set, and the heads of the loaded model that match the paper's figures best."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.common import measured_heads, page_checkpoint, save_page, show_figure
from pages.url_state import Field
from transformer.analysis.figures import LAW_SENTENCE
from transformer.analysis.heads import DICTIONARY_FILE, SCORES, head_score_tables
from transformer.checkpoint import LoadedCheckpoint
from transformer.plots import attention as plot_attention

st.set_page_config(page_title="Head discovery", page_icon="🔎", layout="wide")


@st.cache_data(show_spinner="Scoring every head over the sample (translating it too)…", max_entries=8)
def sample_tables(_loaded: LoadedCheckpoint, name: str, sample: int) -> dict:
    return head_score_tables(_loaded, sample=sample)


@st.cache_data(show_spinner="Scoring every head on the sentence…", max_entries=16)
def sentence_tables(_loaded: LoadedCheckpoint, name: str, sentence: str) -> dict:
    return head_score_tables(_loaded, sentences=[sentence])


SOURCES = ("dev sample", "one sentence")
KINDS = ("encoder self-attention", "cross-attention")
FIELDS = {
    "heads_first": Field(1, url_state.choice((1, 0))),
    "heads_source": Field(SOURCES[0], url_state.choice(SOURCES)),
    "heads_sample": Field(50, url_state.integer(10, 300)),
    "heads_sentence": Field(LAW_SENTENCE, url_state.text(2000)),
    "heads_kind": Field(KINDS[0], url_state.choice(KINDS)),
    "heads_score": Field(None),
}
loaded = page_checkpoint("heads", FIELDS)
name = str(loaded.path)
first = st.sidebar.radio("Count layers and heads from", (1, 0), key="heads_first")

st.title("Head discovery")
st.markdown(
    "Every head of the loaded model, scored by what it does. **Encoder self-attention:** how far it looks (mean "
    "distance, mass beyond 5 tokens), whether it is positional (weight on the previous / next token, on itself), "
    "whether it parks on delimiters (`</s>` and punctuation), how sharp it is (entropy), and whether it resolves "
    "pronouns (anaphora: weight from a pronoun to its antecedent over the project's marked sentences). "
    "**Cross-attention:** whether a head aligns output words with their translations in the source."
)

source = st.radio(
    "Measure over", SOURCES, horizontal=True, key="heads_source",
    help="The dev sample is the first sentences of newstest2013 (or the project's pronoun sentences when the data "
    "is not installed); cross-attention is scored on the model's greedy translations.",
)  # fmt: skip
if source == "dev sample":
    st.session_state["heads_sample"] = int(st.session_state["heads_sample"]) // 10 * 10
    count = st.slider("Sentences", 10, 300, step=10, key="heads_sample")
    measured = measured_heads(loaded, name)
    tables = measured.tables if count == measured.sample else sample_tables(loaded, name, count)
else:
    sentence = st.text_input("Sentence", key="heads_sentence", max_chars=2000).strip()
    if not sentence:
        st.info("Type a sentence to score the heads on it.")
        st.stop()
    tables = sentence_tables(loaded, name, sentence)

point = measured_heads(loaded, name).point
encoder = {key: np.asarray(values) for key, values in tables["encoder"].items()}
encoder.update({key: point.scores[key] for key in ("anaphora", "anaphora_hits") if key in point.scores})
cross = {key: np.asarray(values, dtype=float) for key, values in tables.get("cross", {}).items()}
st.caption(
    f"Measured over {tables['sample']}; anaphora scores over the project's pronoun sentences; alignment over "
    f"{tables.get('output_words', 0)} output words, {tables.get('dictionary_words', 0)} of them with a dictionary "
    f"partner in their source (dictionary: `{DICTIONARY_FILE.name}`)."
)

# ------------------------------------------------------------------------------------------------ the paper's heads
st.header("Heads that match the paper's figures")
metrics = point.metrics
a, b, c = st.columns(3)
if metrics.get("making_heads_on_more_difficult") is not None:
    a.metric(
        "Figure 3: heads from “making” on “more”/“difficult”",
        f"{metrics['making_heads_on_more_difficult']} in layer {metrics['best_layer_making'] + first}",
        help="The largest number of heads of one layer whose strongest non-self word from “making” is “more” or "
        "“difficult” (goal: at least 3).",
    )
if metrics.get("its_to_law") is not None:
    best = f"layer {metrics['best_layer_its'] + first}, head {metrics['best_head_its'] + first}"
    b.metric("Figure 4: best “its” head", best)
    c.metric(
        "Its weight on “Law” / “application”",
        f"{metrics['its_to_law']:.2f} / {metrics['its_to_application']:.2f}",
        help="Goal: one head with weight ≥ 0.5 on “Law” or “application”.",
    )
st.caption("The *Paper figures* page draws them, in the paper's style.")

# ------------------------------------------------------------------------------------------------ heatmaps
st.header("Scores over layers × heads")
kind = st.radio(
    "Attention", KINDS, horizontal=True, key="heads_kind",
    disabled=not cross,
)  # fmt: skip
scores = encoder if kind == "encoder self-attention" or not cross else cross
names = [key for key in SCORES if key in scores]
url_state.ensure("heads_score", names[0], names.__contains__)  # another kind starts from its first score
score_key = st.selectbox(
    "Score", names, format_func=lambda key: SCORES[key].name, key="heads_score", help="What each score measures: "
    + "; ".join(f"**{SCORES[key].name}**: {SCORES[key].description}" for key in names),
)  # fmt: skip
score = SCORES[score_key]
st.caption(f"{score.name}: {score.description}.")
show_figure(
    plot_attention.score_heatmap(scores[score_key], f"{score.name} ({kind})", first=first, zrange=score.zrange),
    key="heads_heatmap", filename=f"head-scores-{score_key}-{source.replace(' ', '-')}",
)  # fmt: skip
values = scores[score_key]
if np.isfinite(values).any():
    pick = np.nanargmin if score.low_is_notable else np.nanargmax
    layer, head = np.unravel_index(pick(values), values.shape)
    st.caption(
        f"{'Lowest' if score.low_is_notable else 'Highest'}: layer {layer + first}, head {head + first} "
        f"({values[layer, head]:.3f})."
    )

# ------------------------------------------------------------------------------------------------ the table
st.header("Every head")
st.caption("Click a column header to sort.")
num_layers, num_heads = next(iter(scores.values())).shape
rows = {"layer": [], "head": []}
for layer in range(num_layers):
    for head in range(num_heads):
        rows["layer"].append(layer + first)
        rows["head"].append(head + first)
for name in names:
    rows[name] = np.round(scores[name].reshape(-1), 4)
st.dataframe(rows, hide_index=True, width="stretch")
save_page(FIELDS)
