"""Find heads by what they do: every score of every head, as a heatmap and a sortable table, over one sentence or
a sample of the dev set, and the heads of the loaded model that match the paper's figures best."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.common import leave_page, page
from pages.figures import show_figure
from pages.i18n import escaped, language, sample_label, score_text, t
from pages.models import measured_heads
from pages.page_slots import called_outside_the_slot
from pages.sentence import sentence_input
from pages.url_state import Field
from transformer.analysis.alignment import DICTIONARY_FILE
from transformer.analysis.figures import LAW_SENTENCE
from transformer.analysis.heads import SCORES
from transformer.analysis.score_tables import HeadScoreTables, head_score_tables
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import head_scores as plot_head_scores

st.set_page_config(page_title=t("heads.title"), page_icon="🔎", layout="wide")


@called_outside_the_slot  # up to 300 sentences of model work: other visitors' pages never wait for it
@per_model(max_entries=8)
def sample_tables(loaded: LoadedCheckpoint, sample: int) -> HeadScoreTables:
    return head_score_tables(loaded, sample=sample)


@per_model(max_entries=16)
def sentence_tables(loaded: LoadedCheckpoint, sentence: str) -> HeadScoreTables:
    return head_score_tables(loaded, sentences=[sentence])


SOURCES = ("dev sample", "one sentence")
KINDS = ("encoder self-attention", "decoder self-attention", "cross-attention")
TABLES = dict(zip(KINDS, ("encoder", "decoder", "cross"), strict=True))  # each kind's tables of head_score_tables
FIELDS = {
    "heads_source": Field(SOURCES[0], url_state.choice(SOURCES)),
    "heads_sample": Field(50, url_state.integer(10, 300)),
    "heads_sentence": Field(LAW_SENTENCE, url_state.text(2000)),
    "heads_kind": Field(KINDS[0], url_state.choice(KINDS)),
    "heads_score": Field(None),
}


FIRST = 1  # layers and heads counted from 1, as on every page


def head_name(layer: int, head: int) -> str:
    return t("heads.layer_head", layer=layer + FIRST, head=head + FIRST)


with page("heads", FIELDS) as loaded:
    name = str(loaded.path)
    first = FIRST

    st.title(t("heads.title"))
    st.markdown(t("heads.intro"))
    # Names looked up now (not inside a format function, which may run later outside this page's run).
    source_names = {source: t(f"heads.source_{source.replace(' ', '_')}") for source in SOURCES}
    kind_names = {kind: t(f"heads.kind_{kind.split()[0].replace('-', '_')}") for kind in KINDS}

    source = keyed(
        st.radio,
        t("heads.measure_over"),
        SOURCES,
        horizontal=True,
        key="heads_source",
        format_func=source_names.get,
        help=t("heads.measure_over_help"),
    )
    if source == "dev sample":
        st.session_state["heads_sample"] = int(st.session_state["heads_sample"]) // 10 * 10
        count = st.slider(t("heads.sentences"), 10, 300, step=10, key="heads_sample")
        measured = measured_heads(loaded)
        with st.spinner(t("heads.scoring_sample")):
            tables = measured.tables if count == measured.sample else sample_tables(loaded, count)
    else:
        sentence = sentence_input(t("heads.sentence"), "heads_sentence", t("heads.type_sentence")) or leave_page()
        with st.spinner(t("heads.scoring_sentence")):
            tables = sentence_tables(loaded, sentence)

    point = measured_heads(loaded).point
    by_kind = {kind: tables.scores.get(TABLES[kind], {}) for kind in KINDS}
    st.caption(
        t(
            "heads.measured_over",
            sample=escaped(sample_label(tables.sample)),
            words=int(tables.output_words),
            partners=int(tables.dictionary_words),
            dictionary=escaped(DICTIONARY_FILE.name, code=True),
        )
    )

    # ------------------------------------------------------------------------------------------------ the paper's heads
    st.header(t("heads.paper_heads"))
    metrics = point.metrics
    making_column, its_column, weight_column = st.columns(3)
    if metrics.get("making_heads_on_more_difficult") is not None:
        making_column.metric(
            t("heads.figure3"),
            t(
                "heads.in_layer",
                count=metrics["making_heads_on_more_difficult"],
                layer=metrics["best_layer_making"] + first,
            ),
            help=t("heads.figure3_help"),
        )
    if metrics.get("its_to_law") is not None:
        best = t("heads.layer_head", layer=metrics["best_layer_its"] + first, head=metrics["best_head_its"] + first)
        its_column.metric(t("heads.figure4"), best)
        weight_column.metric(
            t("heads.its_weight"),
            f"{metrics['its_to_law']:.2f} / {metrics['its_to_application']:.2f}",
            help=t("heads.its_weight_help"),
        )
    st.caption(t("heads.paper_page"))

    # ------------------------------------------------------------------------------------------------ heatmaps
    st.header(t("heads.over_layers"))
    measured_kinds = [kind for kind in KINDS if by_kind[kind]]
    url_state.ensure("heads_kind", measured_kinds[0], measured_kinds.__contains__)
    kind = keyed(
        st.radio, t("heads.attention"), measured_kinds, horizontal=True, key="heads_kind", format_func=kind_names.get
    )
    scores = by_kind[kind]
    names = [key for key in SCORES if key in scores]
    url_state.ensure("heads_score", names[0], names.__contains__)  # another kind starts from its first score
    score_names = {key: score_text(key, "name") for key in names}
    score_key = keyed(
        st.selectbox,
        t("heads.score"),
        names,
        format_func=score_names.get,
        key="heads_score",
        help=t("heads.score_help")
        + "; ".join(f"**{score_names[key]}**: {score_text(key, 'description')}" for key in names),
    )
    score = SCORES[score_key]
    values = scores[score_key]
    bounds = tables.interval(TABLES[kind], score_key)  # its 95% intervals: none over one sentence
    low, high, near_best = (None, None, None) if bounds is None else (bounds.low, bounds.high, bounds.near_best)
    st.caption(f"{escaped(score_names[score_key])}: {escaped(score_text(score_key, 'description'))}.")
    show_figure(
        plot_head_scores.score_heatmap(
            values,
            f"{score_names[score_key]} ({kind_names[kind]})",
            first=first,
            zrange=score.zrange,
            language=language(),
            low=low,
            high=high,
            near_best=near_best,
        ),
        key="heads_heatmap",
        filename=f"head-scores-{score_key}-{source.replace(' ', '-')}",
    )

    if np.isfinite(values).any():
        pick = np.nanargmin if score.low_is_notable else np.nanargmax
        layer, head = np.unravel_index(pick(values), values.shape)
        direction = "lowest" if score.low_is_notable else "highest"
        if bounds is None:
            st.caption(t(f"heads.{direction}", where=head_name(layer, head), value=values[layer, head]))
            st.caption(t("heads.no_interval"))
        else:
            value = values[layer, head]
            interval = {"low": low[layer, head], "high": high[layer, head], "items": bounds.items}
            others = [head_name(a, b) for a, b in np.argwhere(near_best) if (a, b) != (layer, head)]
            if len(others) > 6:  # the map frames them all
                others = [*others[:6], f"… (+{len(others) - 6})"]
            verdict = t("heads.not_clearly_ahead", heads=", ".join(others)) if others else t("heads.clearly_best")
            st.caption(
                t(f"heads.{direction}_interval", where=head_name(layer, head), value=value, **interval) + " " + verdict
            )

    # ------------------------------------------------------------------------------------------------ the table
    st.header(t("heads.every_head"))
    st.caption(t("heads.sort"))
    num_layers, num_heads = next(iter(scores.values())).shape
    rows = {"layer": [], "head": []}
    for layer in range(num_layers):
        for head in range(num_heads):
            rows["layer"].append(layer + first)
            rows["head"].append(head + first)
    for name in names:
        rows[name] = np.round(scores[name].reshape(-1), 4)
    labels = {"layer": t("explore.layer_label"), "head": t("explore.head_label"), **score_names}
    order = ["layer", "head", score_key, *(name for name in names if name != score_key)]
    if (
        bounds is not None
    ):  # beside the chosen score: its interval, and whether the best head is clearly ahead of this one
        rows["interval_low"], rows["interval_high"] = np.round(low.reshape(-1), 4), np.round(high.reshape(-1), 4)
        rows["near_best"] = ["✓" if near else "" for near in near_best.reshape(-1)]  # a mark, in any language
        labels |= {part: t(f"heads.{part}") for part in ("interval_low", "interval_high", "near_best")}
        order[3:3] = ["interval_low", "interval_high", "near_best"]
    st.dataframe(rows, hide_index=True, width="stretch", column_config=labels, column_order=order)
