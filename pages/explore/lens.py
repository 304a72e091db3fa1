"""The *Logit lens* tab of Translate and explore: at which decoder layer each word of the translation becomes the
model's top prediction (:mod:`transformer.analysis.logit_lens`)."""

from __future__ import annotations

import streamlit as st

from pages.caching import per_model
from pages.explore.shared import Shown
from pages.figures import sentence_slug, show_figure
from pages.i18n import language, t
from pages.tabs import Tab
from transformer.analysis.logit_lens import LogitLens, logit_lens
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import logit_lens as plot_lens


@per_model(max_entries=64)
def cached_lens(loaded: LoadedCheckpoint, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> LogitLens:
    return logit_lens(loaded, source_ids, output_ids)


def render(shown: Shown) -> None:
    translation, loaded = shown.translation, shown.loaded
    if not translation.output_ids:
        st.info(t("explore.lens_empty"))
        return
    lens = cached_lens(loaded, tuple(translation.source_ids), tuple(translation.output_ids))
    show_figure(
        plot_lens.lens_figure(lens, t("explore.lens_title"), language()),
        key="logit_lens",
        filename=f"{sentence_slug(translation.source_text)}-logit-lens",
    )
    settled = [layer for layer in lens.settled() if layer is not None]
    layers = lens.probability.shape[0]
    by_layer = [sum(layer <= limit for layer in settled) for limit in range(layers)]
    st.markdown(
        t(
            "explore.lens_summary",
            tokens=len(lens.tokens),
            counts=", ".join(f"{count} ({t('plot_lens.layer', layer=i + 1)})" for i, count in enumerate(by_layer)),
        )
    )
    st.caption(t("explore.lens_how"))


TAB = Tab("Logit lens", "explore.view_logit_lens", render)
