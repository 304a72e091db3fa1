"""The paper's appendix Figures 3–5 redrawn on the loaded model, with the numbers behind them and a training-step
slider that replays them at the run's snapshots."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.common import measured_heads, page_checkpoint, save_page, show_figure
from pages.url_state import Field
from transformer.analysis.attention import word_attention, word_index
from transformer.analysis.figures import (
    FIGURES,
    PAPER_LAYER,
    anaphora_heads,
    making_heads,
    paper_heads,
    paper_layer,
    pattern_difference,
)
from transformer.analysis.heads import SCORES, head_statistics
from transformer.analysis.timeline import TIMELINE_FILE, TimelinePoint, load_timeline
from transformer.checkpoint import CheckpointError
from transformer.plots import attention as plot_attention
from transformer.plots.paper import figure_3, figure_4, figure_5

st.set_page_config(page_title="Paper figures", page_icon="📄", layout="wide")


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_timeline(path: str, modified: float) -> list[TimelinePoint]:
    return load_timeline(path)


HEADS = url_state.integers(0, 63)
FIELDS = {
    "fig_first": Field(1, url_state.choice((1, 0))),
    "fig_words": Field(True, url_state.flag, url_state.dump_flag),
    "fig_specials": Field(True, url_state.flag, url_state.dump_flag),
    "fig_step": Field(None, int),  # a training step of the timeline (the loaded model's by default)
    "fig_layer": Field(None, url_state.integer(0, 63)),  # 0-based, whatever the numbering shown
    "fig3_heads": Field(None, HEADS, url_state.dump_integers),
    "fig4_heads": Field(None, HEADS, url_state.dump_integers),
    "fig5_heads": Field(None, HEADS, url_state.dump_integers),
    "fig_score": Field(None),
}


def forget_heads() -> None:
    """Another layer starts from its own best-matching heads."""
    for name in ("fig3_heads", "fig4_heads", "fig5_heads"):
        st.session_state.pop(name, None)


def forget_layer() -> None:
    """Another numbering starts from the paper's layer in that numbering."""
    st.session_state.pop("fig_layer", None)
    forget_heads()


loaded = page_checkpoint("figures", FIELDS)
key = str(loaded.path)
num_layers, num_heads = loaded.config.encoder_layers, loaded.config.num_heads

st.title("The paper's attention figures")
st.markdown(
    "The appendix of *Attention Is All You Need* shows three encoder self-attention figures from **layer 5 of 6**: "
    "heads that follow a long-distance dependency, heads that resolve an anaphor, and heads whose patterns follow "
    "the sentence's structure. Here they are redrawn on the loaded model with the paper's two newstest2013 "
    "sentences, in the paper's style: queries on the left, keys on the right, line opacity = attention weight, one "
    "colour per head. Next to each figure: the paper's caption, what this model shows in numbers, and its "
    "translation. The heads drawn by default are the ones of this model that match each figure best."
)

first = st.sidebar.radio(
    "Count layers and heads from",
    (1, 0),
    format_func=lambda value: f"{value} (the paper's “layer 5” is the {'5th' if value else 'last'})",
    key="fig_first",
    on_change=forget_layer,
    help="The paper says “layer 5 of 6” and “heads 5 and 6” without saying whether it counts from 0 or 1.",
)
words = st.sidebar.toggle("Merge pieces into words", key="fig_words")
specials = st.sidebar.toggle("Show <EOS> and the paper's <pad> tokens", key="fig_specials")
view = {"words": words, "specials": specials}

# ------------------------------------------------------------------------------------------------ which step
timeline_path = loaded.path / TIMELINE_FILE
try:
    timeline = cached_timeline(str(timeline_path), timeline_path.stat().st_mtime) if timeline_path.exists() else []
except CheckpointError as error:
    st.warning(f"The checkpoint's training timeline cannot be read ({error}); showing the loaded model only.")
    timeline = []
measured = measured_heads(loaded, key)
live = measured.point
live_step = int((loaded.meta or {}).get("step", 0))
points = [point for point in timeline if point.step != live_step] + [live]
points.sort(key=lambda point: point.step)
if len(points) > 1:
    st.subheader("Heads over training")
    by_step = {point.step: point for point in points}
    url_state.ensure("fig_step", live.step, by_step.__contains__)
    chosen = st.select_slider(
        "Training step",
        options=list(by_step),
        format_func=lambda step: f"{step:,}" + (" (loaded)" if by_step[step] is live else ""),
        key="fig_step",
        help="Snapshots the trainer kept during the run (`--snapshot-steps`), stored in the checkpoint's "
        f"`{TIMELINE_FILE}`. Move the slider to watch the same figures and scores as the heads specialise.",
    )
    point = by_step[chosen]
    hours = f", {point.train_hours:.2f} h of training" if point.train_hours is not None else ""
    st.caption(f"Showing step {point.step:,}{hours}" + ("" if point is live else " (a snapshot of the same run)."))
else:
    point = live
    st.caption(
        f"This checkpoint ships no `{TIMELINE_FILE}`, so only the loaded model is shown. "
        "`python -m transformer.analysis.timeline` builds one from a run's snapshots."
    )
metrics = point.metrics


def paper_likeness(candidate: TimelinePoint) -> tuple[float, int]:
    """How well a point matches the paper's Figures 3 and 4 (higher is better): the share of one layer's heads
    that go from “making” to “more”/“difficult”, plus the sharpest “its” head's weight on “Law”/“application”."""
    numbers = candidate.metrics
    making = (numbers.get("making_heads_on_more_difficult") or 0) / num_heads
    its = max(numbers.get("its_to_law") or 0.0, numbers.get("its_to_application") or 0.0)
    return making + its, candidate.step


def show_best_example() -> None:
    best = max(points, key=paper_likeness)
    numbers = best.metrics
    if len(points) > 1:
        st.session_state["fig_step"] = best.step
    layer = numbers.get("best_layer_its")
    if layer is None or (numbers.get("making_heads_on_more_difficult") or 0) > num_heads // 2:
        layer = numbers.get("best_layer_making", layer)
    if layer is not None:
        st.session_state["fig_layer"] = int(layer)
    forget_heads()  # each figure then opens on that layer's best-matching heads


st.button(
    "Show the best example", on_click=show_best_example,
    help="Jump to the training step and encoder layer of this run that match the paper's figures best (most heads "
    "from “making” on “more”/“difficult”, sharpest “its” head), with each figure's best-matching heads.",
)  # fmt: skip

the_paper_layer = paper_layer(num_layers, first == 1)
url_state.ensure("fig_layer", the_paper_layer, lambda i: 0 <= i < num_layers)
layer = st.selectbox(
    "Encoder layer",
    list(range(num_layers)),
    format_func=lambda i: f"layer {i + first}" + (" (the paper's layer)" if i == the_paper_layer else ""),
    key="fig_layer",
    on_change=forget_heads,
)


def pick_heads(name: str, default: list[int], most: int | None = None) -> None:
    """The heads the figure ``name`` draws: kept while the layer stays, the best-matching ones otherwise."""
    url_state.ensure(
        name, default, lambda heads: all(0 <= h < num_heads for h in heads) and (most is None or len(heads) <= most)
    )


def head_name(head: int) -> str:
    return f"head {head + first}"


def paper_side(number: int, findings: str) -> None:
    figure = FIGURES[number]
    st.markdown(f"**Paper, Figure {number}:** *{figure.caption}*")
    st.markdown(f"**This model:** {findings}")
    if point is live:
        st.markdown(f"**Our translation:** {measured.translations[number]}")
    else:
        st.markdown("**Our translation:** (only for the loaded model; a snapshot keeps its attention, not its weights)")
    st.markdown(f"**Reference** (newstest2013 line {figure.dev_line}): {figure.reference}")


# ------------------------------------------------------------------------------------------------ Figure 3
st.header(f"Figure 3 — {FIGURES[3].title}")
making = metrics["figure_3"]
left, right = st.columns([3, 2])
if "error" in making:
    right.warning(f"Cannot measure Figure 3 on this model: {making['error']}")
    best_making = []
else:
    best_making = making_heads(making, layer)
with right:
    if "error" not in making:
        per_layer = making["heads_on_more_difficult_per_layer"]
        # One metric per row: side by side, their labels are cut in a 2/5-wide column.
        st.metric(f"Heads of layer {layer + first} on “more”/“difficult”", f"{per_layer[layer]} of {num_heads}")
        st.metric(
            "Best layer",
            f"layer {making['best_layer_making'] + first}",
            f"{making['making_heads_on_more_difficult']} heads",
            delta_color="off",
        )
        tokens = point.attention[3].tokens
        weights = point.attention[3].weights
        m = word_index(tokens, "making")
        on_more = word_attention(weights, tokens, m, word_index(tokens, "more"))[layer]
        on_difficult = word_attention(weights, tokens, m, word_index(tokens, "difficult"))[layer]
        st.dataframe(
            {
                "head": [head + first for head in range(num_heads)],
                "strongest other word": making["strongest_word_from_making"][layer],
                "weight on “more”": np.round(on_more, 3),
                "weight on “difficult”": np.round(on_difficult, 3),
            },
            hide_index=True,
        )
        findings = (
            f"{per_layer[layer]} head(s) of layer {layer + first} put their largest non-self weight from “making” on "
            f"“more” or “difficult” (goal: at least 3 in one layer); per layer: {per_layer}."
        )
    else:
        findings = "not measurable."
    paper_side(3, findings)
with left:
    pick_heads("fig3_heads", best_making or list(range(num_heads)))
    heads = st.multiselect(
        "Heads",
        list(range(num_heads)),
        format_func=head_name,
        key="fig3_heads",
        help="Default: the heads of this layer whose strongest non-self word from “making” is “more” or "
        "“difficult” (all heads if there are none).",
    )
    if heads:
        show_figure(figure_3(point.attention[3], layer, heads, first=first, **view), key="figure_3")
    else:
        st.info("Choose at least one head.")

# ------------------------------------------------------------------------------------------------ Figure 4
st.header(f"Figure 4 — {FIGURES[4].title}")
its = metrics["figure_4"]
left, right = st.columns([3, 2])
if "error" in its:
    right.warning(f"Cannot measure Figure 4 on this model: {its['error']}")
    best_its = paper_heads(num_heads, first == 1)
else:
    best_its = anaphora_heads(its, layer)
with left:
    pick_heads("fig4_heads", best_its)
    heads = st.multiselect(
        "Heads (the first one is drawn in full on top)",
        list(range(num_heads)),
        format_func=head_name,
        key="fig4_heads",
        help="Default: the two heads of this layer with the most weight from “its” on “Law” or “application”. "
        f"The paper's heads 5 and 6 are {', '.join(head_name(h) for h in paper_heads(num_heads, first == 1))} "
        "in this numbering.",
    )
    if heads:
        top, bottom = figure_4(point.attention[4], layer, heads, first=first, **view)
        show_figure(top, key="figure_4_top")
        show_figure(bottom, key="figure_4_bottom")
    else:
        st.info("Choose at least one head.")
with right:
    if "error" not in its:
        law, application = np.array(its["its_to_law_per_head"]), np.array(its["its_to_application_per_head"])
        st.metric("Best head: “its” → “Law”", f"{its['its_to_law']:.2f}")
        st.metric("Best head: “its” → “application”", f"{its['its_to_application']:.2f}")
        st.caption(
            f"Best head of the whole model: layer {its['best_layer_its'] + first}, head {its['best_head_its'] + first}."
            " Goal: one head with weight ≥ 0.5 on “Law” or “application”."
        )
        st.dataframe(
            {
                "head": [head + first for head in range(num_heads)],
                "“its” → “Law”": np.round(law[layer], 3),
                "“its” → “application”": np.round(application[layer], 3),
            },
            hide_index=True,
        )
        findings = (
            f"in layer {layer + first} the sharpest “its” head puts {max(law[layer].max(), 0):.2f} on “Law” and "
            f"{application[layer].max():.2f} on “application” (the paper's heads are “very sharp”)."
        )
    else:
        findings = "not measurable."
    paper_side(4, findings)

# ------------------------------------------------------------------------------------------------ Figure 5
st.header(f"Figure 5 — {FIGURES[5].title}")
law_attention = point.attention[5]
default_structure = metrics["figure_5"]["structure_heads_per_layer"][layer]
left, right = st.columns([3, 2])
with left:
    pick_heads("fig5_heads", default_structure, most=2)
    heads = st.multiselect(
        "Two heads",
        list(range(num_heads)),
        max_selections=2,
        format_func=head_name,
        key="fig5_heads",
        help="Default: the sharpest head of the layer (lowest entropy) and, among the next sharpest four, the one "
        "whose pattern differs most from it.",
    )
    for index, panel in enumerate(figure_5(law_attention, layer, heads, first=first, **view)):
        show_figure(panel, key=f"figure_5_{index}")
    if not heads:
        st.info("Choose one or two heads.")
with right:
    statistics = head_statistics(law_attention.weights, law_attention.tokens)  # over the real (not <pad>) queries
    st.dataframe(
        {
            "head": [head + first for head in range(num_heads)],
            "entropy (bits)": np.round(statistics["entropy"][layer], 2),
            "mean distance": np.round(statistics["mean_distance"][layer], 2),
        },
        hide_index=True,
    )
    real = [i for i, token in enumerate(law_attention.tokens) if token != "<pad>"]
    rows = law_attention.weights[layer][:, real]
    chosen = heads if len(heads) == 2 else default_structure
    difference = pattern_difference(rows[chosen[0]], rows[chosen[1]])
    paper_side(
        5,
        f"heads {chosen[0] + first} and {chosen[1] + first} of layer {layer + first} differ by {difference:.2f} "
        "in mean total variation (0 = the same pattern, 1 = disjoint).",
    )

# ------------------------------------------------------------------------------------------------ scores
st.header("Head scores at this step")
st.caption(
    "Encoder self-attention scores over the project's pronoun sentences "
    "(the *Head discovery* page computes them over the dev set, with cross-attention alignment too)."
)
url_state.ensure("fig_score", next(iter(point.scores)), point.scores.__contains__)
score_key = st.selectbox(
    "Score",
    list(point.scores),
    format_func=lambda key: SCORES[key].name if key in SCORES else key,
    key="fig_score",
)
score = SCORES.get(score_key)
name = score.name if score else score_key
st.caption(f"{name}: {score.description if score else ''}.")
show_figure(
    plot_attention.score_heatmap(
        point.scores[score_key], f"{name} at step {point.step:,}", first=first, zrange=score.zrange if score else None,
    ),
    key="fig_scores", filename=f"paper-figures-head-scores-{score_key}-step{point.step}",
)  # fmt: skip
st.caption(f"The paper's layer {PAPER_LAYER} is row “layer {the_paper_layer + first}” here.")
save_page(FIELDS)
