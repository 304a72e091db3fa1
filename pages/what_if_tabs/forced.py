"""*Forced decoding*: a given German sentence scored teacher-forced beside the model's own
(:mod:`transformer.analysis.forced`)."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.figures import show_figure
from pages.i18n import language, t
from pages.models import cached_translation
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import Case, describe, download_json, head_pickers, heatmap, view_fields
from transformer.analysis.forced import ForcedDecoding, force, reference_for
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import whatif as plot_whatif
from transformer.search.decode import DecodingOptions


@per_model(max_entries=16)
def cached_force(loaded: LoadedCheckpoint, text: str, given: str, options: DecodingOptions) -> ForcedDecoding:
    """``given`` scored teacher-forced beside the model's own translation of ``text`` (the page's, from its cache)."""
    return force(loaded.model, loaded.tokenizer, cached_translation(loaded, text, options), given)


def render(case: Case) -> None:
    loaded, text, translation, options = case.loaded, case.text, case.translation, case.options
    st.caption(t("whatif.forced_intro"))
    reference = reference_for(text, languages=loaded.config.languages)
    if reference is not None:
        st.button(
            t("whatif.use_reference", name=reference[0]),
            on_click=st.session_state.__setitem__,
            args=("wi_given", reference[1]),
        )
    given = st.text_area(t("whatif.given"), key="wi_given", height=68, max_chars=2000).strip()
    if not given:
        st.info(t("whatif.type_given"))
        return
    with st.spinner(t("whatif.scoring")):
        forced: ForcedDecoding = cached_force(loaded, text, given, options)
    if forced.given.truncated:
        st.warning(t("whatif.given_truncated", tokens=len(forced.given.output_ids)))
    bleu_column, chrf_column, given_column, model_column = st.columns(4)
    bleu_column.metric(t("whatif.bleu_against"), f"{forced.bleu:.1f}")
    chrf_column.metric(t("whatif.chrf_against"), f"{forced.chrf:.1f}")
    given_column.metric(
        t("whatif.given_log_prob"),
        f"{forced.given.log_prob:.2f}",
        help=t("whatif.mean_per_token", mean=forced.given.mean_log_prob),
    )
    model_column.metric(
        t("whatif.model_log_prob"),
        f"{forced.model.log_prob:.2f}",
        help=t("whatif.mean_per_token", mean=forced.model.mean_log_prob),
    )
    series = {t("whatif.given_series"): forced.given.tokens, t("whatif.model_series"): forced.model.tokens}
    left, right = st.columns(2)
    for column, (name, tokens) in zip((left, right), series.items(), strict=True):
        with column:
            show_figure(plot_whatif.token_probabilities({name: tokens}, name, language()), key=f"wi_forced_{name}")
    download_json(
        "wi_forced",
        {
            "sentence": text,
            "given": given,
            "translation": translation.translation,
            "bleu": forced.bleu,
            "chrf": forced.chrf,
            **{
                name: [
                    {"piece": p.piece, "probability": p.probability, "rank": p.rank, "top": p.top}
                    for p in scored.tokens
                ]
                for name, scored in (("given", forced.given), ("model", forced.model))
            },
        },
    )
    kind, layer, head = head_pickers(loaded, "wi_forced_")
    left, right = st.columns(2)
    with left:
        heatmap(
            forced.given.maps,
            kind,
            layer,
            head,
            f"{describe(kind, layer, head)} — {t('whatif.given_series')}",
            "wi_forced_given_map",
        )
    with right:
        heatmap(
            forced.model.maps,
            kind,
            layer,
            head,
            f"{describe(kind, layer, head)} — {t('whatif.model_series')}",
            "wi_forced_model_map",
        )


TAB = Tab(
    "forced",
    "whatif.tab_forced",
    render,
    {**view_fields("forced_"), "wi_given": Field("", url_state.text(2000))},
)
