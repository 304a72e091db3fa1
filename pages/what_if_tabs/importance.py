"""*Head importance*: BLEU/chrF lost when each head alone is off, Michel et al.'s gradient proxy, and BLEU as the k
least important heads go together; stored beside the checkpoint by ``python -m transformer importance --save``,
or measured here on a few dev sentences."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.figures import show_figure
from pages.i18n import decoding_label, escaped, language, sample_label, t
from pages.page_slots import called_outside_the_slot
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import Case, download_json, set_heads_off
from transformer.analysis import ablation
from transformer.analysis.attention import KINDS
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.formats.runs import portable_path
from transformer.paper.data import DEV_PREFIX, has_pairs, read_pairs
from transformer.plots import head_scores as plot_head_scores
from transformer.plots import whatif as plot_whatif
from transformer.serving.translator import scratch_model

MEASURES = ("bleu_drop", "chrf_drop", "gradient")
IMPORTANCE_SAMPLE = (5, 50)  # dev sentences the page may measure on (every head: one search of them each)


# Minutes of model work: outside the page slots, so that other pages and translation batches never wait for it.
@called_outside_the_slot
@per_model(max_entries=8)
def cached_importance(loaded: LoadedCheckpoint, sample: int, with_ablation: bool) -> dict:
    pairs = read_pairs(DEV_PREFIX, loaded.config.languages)[:sample]
    with scratch_model(loaded) as model:
        result = ablation.measure_importance(model, loaded.tokenizer, pairs, ablation=with_ablation)
    return {**result, "source": f"{DEV_PREFIX.name}, first {sample} pairs"}


def interval_of(result: dict, kind: str, layer: int, head: int) -> str:
    """A head's BLEU drop interval as "[low, high]" (paired bootstrap over the sentences)."""
    low, high = result["bleu_drop_low"][kind][layer][head], result["bleu_drop_high"][kind][layer][head]
    return f"[{low:+.2f}, {high:+.2f}]"


def render(case: Case) -> None:
    loaded = case.loaded
    st.caption(t("whatif.importance_intro"))
    stored = ablation.read_importance(loaded)
    if stored is None:
        st.info(t("whatif.no_stored_importance", folder=escaped(loaded.path.name)))
        left, right = st.columns([2, 1], vertical_alignment="bottom")
        sample = left.slider(t("whatif.sample"), *IMPORTANCE_SAMPLE, key="wi_sample")
        measure_all = right.button(t("whatif.measure"), help=t("whatif.measure_help"))
        if not has_pairs(DEV_PREFIX, loaded.config.languages):
            st.warning(t("whatif.no_dev", path=escaped(portable_path(str(DEV_PREFIX)))))
            return
        with_ablation = measure_all or st.session_state.get(f"_wi_measured_{sample}", False)
        if measure_all:
            st.session_state[f"_wi_measured_{sample}"] = True
            st.session_state["wi_measure"] = "bleu_drop"  # what was just measured
        with st.spinner(t("whatif.measuring")):
            result = cached_importance(loaded, sample, with_ablation)
    else:
        result = stored
    source = sample_label(result.get("source", ""))
    st.caption(
        t(
            "whatif.importance_measured",
            sentences=int(result["sentences"]),
            source=escaped(source),
            bleu=result["bleu"],
            chrf=result["chrf"],
            decoding=decoding_label(result.get("decoding", "")),
        )
    )
    has_ablation = result.get("ranked_by") == "bleu_drop"
    measures = [m for m in MEASURES if has_ablation or m == "gradient"]
    url_state.ensure("wi_measure", measures[0], measures.__contains__)
    measure_names = {m: t(f"whatif.measure_{m}") for m in measures}
    measure = keyed(
        st.radio, t("whatif.measure_by"), measures, key="wi_measure", format_func=measure_names.get, horizontal=True
    )
    for kind in KINDS:  # one under another: three across left each head's number unreadably small at 1280 px
        show_figure(
            plot_head_scores.score_heatmap(
                np.asarray(result[measure][kind], dtype=float),
                f"{t(f'kind.{kind}')}: {measure_names[measure]}",
                fmt=".2f" if measure != "gradient" else ".1f",
                language=language(),
            ),
            key=f"wi_importance_{kind}",
        )
    rows = sorted(
        (
            {
                "kind": t(f"kind.{kind}"),
                "layer": layer + 1,
                "head": head + 1,
                **{measure_names.get(m, m): result[m][kind][layer][head] for m in measures},
                **(
                    {t("whatif.drop_interval"): interval_of(result, kind, layer, head)}
                    if "bleu_drop_low" in result
                    else {}
                ),
            }
            for kind in KINDS
            for layer in range(len(result[measure][kind]))
            for head in range(len(result[measure][kind][layer]))
        ),
        key=lambda row: -row[measure_names[measure]],
    )
    with st.expander(t("whatif.table"), expanded=False):
        labels = {"kind": t("whatif.attention"), "layer": t("whatif.layer"), "head": t("whatif.head")}
        st.dataframe(rows, hide_index=True, width="stretch", column_config=labels)
    total = len(result["ranked"])
    show_figure(plot_whatif.prune_curve(result["prune"], result["bleu"], total, language()), key="wi_prune")
    # From the curve itself (stored files written before this rule hold the largest count within 1 BLEU instead).
    within = t("whatif.within", count=ablation.heads_off_within(result["prune"], result["bleu"]), total=total)
    if any("change" in point for point in result["prune"]):
        clear = ablation.heads_off_within(result["prune"], result["bleu"], clear=True)
        within += " " + t("whatif.within_clear", count=clear)
    st.caption(within)
    k = st.slider(t("whatif.k"), 0, total, key="wi_k")
    chosen = [tuple(head) for head in result["ranked"][:k]]
    st.button(
        t("whatif.switch_k", k=k),
        on_click=set_heads_off,
        args=(chosen,),
        disabled=k == 0,
        help=t("whatif.switch_k_help"),
    )
    download_json("wi_importance", {key: value for key, value in result.items() if key != "fingerprint"})


TAB = Tab(
    "importance",
    "whatif.tab_importance",
    render,
    {
        "wi_measure": Field(MEASURES[0], url_state.choice(MEASURES)),
        "wi_sample": Field(10, url_state.integer(*IMPORTANCE_SAMPLE)),
        "wi_k": Field(0, url_state.integer(0, 4096)),
    },
)
