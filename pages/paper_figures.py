"""The paper's appendix Figures 3–5 redrawn on the loaded model, with the numbers behind them and a training-step
slider that replays them at the run's snapshots."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.common import page
from pages.figures import show_figure
from pages.i18n import escaped, language, score_text, t
from pages.links import atlas_button, atlas_buttons
from pages.models import measured_heads
from pages.url_state import Field
from transformer.analysis.attention import word_attention, word_index
from transformer.analysis.figures import (
    FIGURES,
    PAPER_LAYER,
    anaphora_heads,
    best_example,
    figure_metrics,
    making_heads,
    paper_heads,
    paper_layer,
    pattern_difference,
)
from transformer.analysis.heads import SCORES, head_statistics
from transformer.analysis.score_tables import HeadScoreTables
from transformer.analysis.timeline import TIMELINE_FILE, TimelinePoint, load_timeline
from transformer.formats.checkpoint import CheckpointError
from transformer.plots import head_scores as plot_head_scores
from transformer.plots.paper import figure_3, figure_4, figure_5

st.set_page_config(page_title=t("fig.page"), page_icon="📄", layout="wide")


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_timeline(path: str, modified: float) -> list[TimelinePoint]:
    return load_timeline(path)


HEADS, OLD_HEADS = url_state.numbered_list(64), url_state.integers(0, 63)  # from 1; from 0 before v2
FIELDS = {
    "fig_words": Field(True, url_state.flag, url_state.dump_flag),
    "fig_specials": Field(True, url_state.flag, url_state.dump_flag),
    "fig_step": Field(None, int),  # a training step of the timeline (the loaded model's by default)
    # Layers and heads are kept from 0 and named from 1 in the URL, whatever the numbering the page shows.
    "fig_layer": Field(None, url_state.numbered(64), url_state.dump_numbered, url_state.integer(0, 63)),
    **{
        key: Field(None, HEADS, url_state.dump_numbered_list, OLD_HEADS)
        for key in ("fig3_heads", "fig4_heads", "fig5_heads")
    },
    "fig_score": Field(None),
}


MAKING_GOAL = 3  # heads of one layer the paper's Figure 3 shows on "making … more difficult"


def forget_heads() -> None:
    """Another layer starts from its own best-matching heads."""
    url_state.forget("fig3_heads", "fig4_heads", "fig5_heads")


def go_to_layer(layer: int) -> None:
    st.session_state["fig_layer"] = layer
    forget_heads()


def furthest_head(tables: HeadScoreTables, first: int) -> str:
    """The encoder head that looks furthest over the sample of other sentences the page measured (its share of
    attention on words more than 5 positions away, with its 95% interval); empty without those measurements."""
    mass, bounds = tables.score("encoder", "long_range_mass"), tables.interval("encoder", "long_range_mass")
    if mass is None or bounds is None or mass.ndim != 2 or not np.isfinite(mass).any():
        return ""
    low, high = bounds.low, bounds.high
    layer, head = np.unravel_index(np.nanargmax(mass), mass.shape)
    return t(
        "fig.furthest_head",
        sentences=tables.sentences,
        layer=int(layer) + first,
        head=int(head) + first,
        mass=mass[layer, head],
        low=low[layer, head],
        high=high[layer, head],
    )


def short_of_the_paper(per_layer: list[int], layer: int, best: int, first: int, tables: HeadScoreTables) -> None:
    """Where the loaded model falls short of Figure 3 in the layer shown (fewer than the 3 heads the paper draws):
    say so plainly, with the layer where it does it most (one click away), the head that looks furthest on other
    sentences and how to see a stronger model, so that a visitor can tell the app from the model."""
    if per_layer[layer] >= MAKING_GOAL:
        return
    said = [
        t("fig.short_of_paper", count=per_layer[layer], layer=layer + first, goal=MAKING_GOAL),
        t("fig.does_it_elsewhere", layer=best + first, count=per_layer[best]) if per_layer[best] else "",
        furthest_head(tables, first),
        t("fig.stronger_model"),
    ]
    st.info(" ".join(part for part in said if part), icon=":material/info:")
    if best != layer and per_layer[best]:
        st.button(
            t("fig.go_to_layer", layer=best + first),
            key="fig_go_to_best",
            on_click=go_to_layer,
            args=(best,),
            icon=":material/arrow_forward:",
        )


def drawn_metrics(candidate: TimelinePoint) -> dict:
    """The figure numbers of exactly the attention the figures draw. A point's stored ``metrics`` were measured in
    float32 before its attention was stored in float16, so a weight or a near tie can differ from what is drawn."""
    return figure_metrics(candidate.attention)


def show_best_example() -> None:
    """Open the step and layer where the figures show the paper's examples best (the rule: figures.best_example)."""
    step, layer, found = best_example({candidate.step: drawn_metrics(candidate) for candidate in points})
    if len(points) > 1:
        st.session_state["fig_step"] = step
    st.session_state["fig_layer"] = layer
    st.session_state["fig_best_none"] = not found  # said once, under the button
    forget_heads()  # each figure then opens on that layer's best-matching heads


def choose_heads(key: str, default: list[int], label: str, help: str, most: int | None = None) -> list[int]:
    """The heads a figure draws, chosen in a multiselect under ``key`` (at most ``most``): kept while the layer
    stays, the best-matching ones (``default``) otherwise."""
    url_state.ensure(
        key, default, lambda heads: url_state.indices_below(num_heads)(heads) and (most is None or len(heads) <= most)
    )
    # Chips show the head's number alone: "head 1" … "head 8" in one row left the last chips cut off.
    return st.multiselect(
        label, list(range(num_heads)), max_selections=most, format_func=head_number, key=key, help=help
    )


def head_number(head: int) -> str:
    return str(head + first)


def head_name(head: int) -> str:
    return head_names[head]


def paper_side(number: int, findings: str) -> None:
    figure = FIGURES[number]
    caption = t(f"fig.caption{number}") if language() != "en" else figure.caption
    st.markdown(t("fig.paper_caption", number=number, caption=escaped(caption)))
    st.markdown(t("fig.this_model", findings=findings))
    if point is live:
        st.markdown(t("fig.our_translation", translation=escaped(measured.translations[number])))
    else:
        st.markdown(t("fig.no_translation"))
    st.markdown(t("fig.reference", line=figure.dev_line, reference=figure.reference))


def figure_section(number: int) -> tuple[dict, object, object]:
    """A paper figure's heading, its numbers at the chosen step, and its two columns (the figure, then what it
    shows); a figure that could not be measured says why in the second."""
    st.header(figure_title(number))
    found = metrics[f"figure_{number}"]
    left, right = st.columns([3, 2])
    if "error" in found:
        right.warning(t("fig.cannot_measure", number=number, error=escaped(found["error"])))
    return found, left, right


def figure_title(number: int) -> str:
    return t(
        "fig.figure", number=number, title=t(f"fig.title{number}") if language() != "en" else FIGURES[number].title
    )


def sidebar() -> None:
    """What the figures' token axes show."""
    st.toggle(t("fig.words"), key="fig_words")
    st.toggle(t("fig.specials"), key="fig_specials")


with page("figures", FIELDS, sidebar=sidebar) as loaded:
    key = str(loaded.path)
    num_layers, num_heads = loaded.config.encoder_layers, loaded.config.num_heads

    st.title(t("fig.title"))
    st.markdown(t("fig.intro"))
    first = 1  # layers and heads counted from 1, as on every page: the paper's "layer 5 of 6" is the 5th
    view = {
        "words": st.session_state["fig_words"],
        "specials": st.session_state["fig_specials"],
        "language": language(),
    }

    # ------------------------------------------------------------------------------------------------ which step
    timeline_path = loaded.path / TIMELINE_FILE
    try:
        timeline = cached_timeline(str(timeline_path), timeline_path.stat().st_mtime) if timeline_path.exists() else []
    except CheckpointError as error:
        st.warning(t("fig.timeline_error", error=escaped(error)))
        timeline = []
    measured = measured_heads(loaded)
    live = measured.point
    live_step = int((loaded.meta or {}).get("step", 0))
    points = [point for point in timeline if point.step != live_step] + [live]
    points.sort(key=lambda point: point.step)
    if len(points) > 1:
        st.header(t("fig.over_training"))
        by_step = {point.step: point for point in points}
        url_state.ensure("fig_step", live.step, by_step.__contains__)
        step_names = {step: f"{step:,}" + (t("fig.loaded") if by_step[step] is live else "") for step in by_step}
        chosen = keyed(
            st.select_slider,
            t("fig.step"),
            options=list(by_step),
            format_func=step_names.get,
            key="fig_step",
            help=t("fig.step_help", file=TIMELINE_FILE),
        )
        point = by_step[chosen]
        hours = t("fig.hours", hours=point.train_hours) if point.train_hours is not None else ""
        earlier = t("fig.rerun") if point.label == "rerun" else t("fig.snapshot")
        st.caption(t("fig.showing", step=point.step, hours=hours) + ("" if point is live else earlier))
    else:
        point = live
        st.caption(t("fig.no_timeline", file=TIMELINE_FILE))

    metrics = drawn_metrics(point)

    st.button(t("fig.best_example"), on_click=show_best_example, help=t("fig.best_example_help"))
    if st.session_state.pop("fig_best_none", False):
        st.info(t("fig.best_example_none"))

    the_paper_layer = paper_layer(num_layers, first == 1)
    url_state.ensure("fig_layer", the_paper_layer, lambda i: 0 <= i < num_layers)
    layer_names = {
        i: t("fig.layer", layer=i + first) + (t("fig.papers_layer") if i == the_paper_layer else "")
        for i in range(num_layers)
    }
    layer = keyed(
        st.selectbox,
        t("fig.encoder_layer"),
        list(range(num_layers)),
        format_func=layer_names.get,
        key="fig_layer",
        on_change=forget_heads,
    )

    head_names = {head: t("fig.head", head=head + first) for head in range(num_heads)}

    # ------------------------------------------------------------------------------------------------ Figure 3
    making, left, right = figure_section(3)
    best_making = [] if "error" in making else making_heads(making, layer)
    with right:
        if "error" not in making:
            per_layer = making["heads_on_more_difficult_per_layer"]
            # One metric per row: side by side, their labels are cut in a 2/5-wide column.
            st.metric(
                t("fig.heads_of_layer", layer=layer + first), t("fig.of", count=per_layer[layer], total=num_heads)
            )
            st.metric(
                t("fig.best_layer"),
                t("fig.layer", layer=making["best_layer_making"] + first),
                t("fig.heads_count", count=making["making_heads_on_more_difficult"]),
                delta_color="off",
            )
            short_of_the_paper(per_layer, layer, making["best_layer_making"], first, measured.tables)
            tokens = point.attention[3].tokens
            weights = point.attention[3].weights
            m = word_index(tokens, "making")
            on_more = word_attention(weights, tokens, m, word_index(tokens, "more"))[layer]
            on_difficult = word_attention(weights, tokens, m, word_index(tokens, "difficult"))[layer]
            st.dataframe(
                {
                    t("fig.col_head"): [head + first for head in range(num_heads)],
                    t("fig.col_strongest"): making["strongest_word_from_making"][layer],
                    t("fig.col_more"): np.round(on_more, 3),
                    t("fig.col_difficult"): np.round(on_difficult, 3),
                },
                hide_index=True,
            )
            findings = t("fig.findings3", count=per_layer[layer], layer=layer + first, per_layer=per_layer)
        else:
            findings = t("fig.not_measurable")
        paper_side(3, findings)
    with left:
        heads = choose_heads("fig3_heads", best_making or list(range(num_heads)), t("fig.heads"), t("fig.heads3_help"))
        if heads:
            show_figure(figure_3(point.attention[3], layer, heads, first=first, **view), key="figure_3")
            atlas_buttons("encoder", layer, heads, "figure_3_atlas", head_name)
        else:
            st.info(t("fig.choose_head"))

    # ------------------------------------------------------------------------------------------------ Figure 4
    its, left, right = figure_section(4)
    best_its = paper_heads(num_heads, first == 1) if "error" in its else anaphora_heads(its, layer)
    with left:
        paper_ones = ", ".join(head_name(h) for h in paper_heads(num_heads, first == 1))
        heads = choose_heads("fig4_heads", best_its, t("fig.heads4"), t("fig.heads4_help", heads=paper_ones))
        if heads:
            top, bottom = figure_4(point.attention[4], layer, heads, first=first, **view)
            show_figure(top, key="figure_4_top")
            show_figure(bottom, key="figure_4_bottom")
            atlas_buttons("encoder", layer, heads, "figure_4_atlas", head_name)
        else:
            st.info(t("fig.choose_head"))
    with right:
        if "error" not in its:
            # Every number and head named here comes from these two arrays, rounded as the table shows them.
            law = np.round(np.array(its["its_to_law_per_head"]), 3)
            application = np.round(np.array(its["its_to_application_per_head"]), 3)
            strength = np.maximum(np.array(its["its_to_law_per_head"]), np.array(its["its_to_application_per_head"]))
            top_layer, top_head = (int(i) for i in np.unravel_index(np.argmax(strength), strength.shape))
            st.metric(t("fig.best_law"), f"{law[top_layer, top_head]:.3f}")
            st.metric(t("fig.best_application"), f"{application[top_layer, top_head]:.3f}")
            st.caption(t("fig.best_its", layer=top_layer + first, head=top_head + first))
            st.dataframe(
                {
                    t("fig.col_head"): [head + first for head in range(num_heads)],
                    "“its” → “Law”": law[layer],
                    "“its” → “application”": application[layer],
                },
                hide_index=True,
            )
            sharpest = anaphora_heads(its, layer)[0]  # the head Figure 4 draws in full by default
            findings = t(
                "fig.findings4",
                layer=layer + first,
                head=sharpest + first,
                law=law[layer, sharpest],
                application=application[layer, sharpest],
            )
        else:
            findings = t("fig.not_measurable")
        paper_side(4, findings)

    # ------------------------------------------------------------------------------------------------ Figure 5
    st.header(figure_title(5))
    law_attention = point.attention[5]
    default_structure = metrics["figure_5"]["structure_heads_per_layer"][layer]
    left, right = st.columns([3, 2])
    with left:
        heads = choose_heads("fig5_heads", default_structure, t("fig.two_heads"), t("fig.heads5_help"), most=2)
        for index, panel in enumerate(figure_5(law_attention, layer, heads, first=first, **view)):
            show_figure(panel, key=f"figure_5_{index}")
            atlas_button("encoder", layer, heads[index], key=f"figure_5_atlas_{index}")
        if not heads:
            st.info(t("fig.choose_two"))
    with right:
        statistics = head_statistics(law_attention.weights, law_attention.tokens)  # over the real (not <pad>) queries
        st.dataframe(
            {
                t("fig.col_head"): [head + first for head in range(num_heads)],
                t("fig.col_entropy"): np.round(statistics["entropy"][layer], 2),
                t("fig.col_distance"): np.round(statistics["mean_distance"][layer], 2),
            },
            hide_index=True,
        )
        real = [i for i, token in enumerate(law_attention.tokens) if token != "<pad>"]
        rows = law_attention.weights[layer][:, real]
        chosen = heads if len(heads) == 2 else default_structure
        difference = pattern_difference(rows[chosen[0]], rows[chosen[1]])
        paper_side(
            5, t("fig.findings5", a=chosen[0] + first, b=chosen[1] + first, layer=layer + first, difference=difference)
        )

    # ------------------------------------------------------------------------------------------------ scores
    st.header(t("fig.scores"))
    st.caption(t("fig.scores_caption"))
    url_state.ensure("fig_score", next(iter(point.scores)), point.scores.__contains__)
    score_names = {key: score_text(key, "name") if key in SCORES else key for key in point.scores}
    score_key = keyed(st.selectbox, t("fig.score"), list(point.scores), format_func=score_names.get, key="fig_score")
    score = SCORES.get(score_key)
    name = score_names[score_key]
    st.caption(f"{escaped(name)}: {escaped(score_text(score_key, 'description')) if score else ''}.")
    bounds = point.intervals.get(score_key)  # none for a snapshot recorded before intervals were kept
    show_figure(
        plot_head_scores.score_heatmap(
            point.scores[score_key],
            t("fig.at_step", name=name, step=point.step),
            first=first,
            zrange=score.zrange if score else None,
            language=language(),
            low=None if bounds is None else bounds.low,
            high=None if bounds is None else bounds.high,
            near_best=None if bounds is None else bounds.near_best,
        ),
        key="fig_scores",
        filename=f"paper-figures-head-scores-{score_key}-step{point.step}",
    )
    st.caption(t("fig.scores_interval", items=bounds.items) if bounds else t("fig.scores_no_interval"))
    st.caption(t("fig.papers_row", paper=PAPER_LAYER, row=t("fig.layer", layer=the_paper_layer + first)))
