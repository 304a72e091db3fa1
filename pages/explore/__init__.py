"""The app's main page: translate an English sentence into German and explore every attention head.

The navigation runs :func:`main` as the page "Translate and explore" (``pages/translate.py``). The sidebar picks the
checkpoint and the decoding; the page shows the translation, the tokens as the model sees them, and the views of its
heads as tabs, one module each in this package (:data:`TABS`, :class:`pages.tabs.Tab`): every head of the three
attention kinds as heatmaps, a layers × heads grid, the paper-style token view, the word alignment, attribution, the
logit lens and bertviz's views. The URL holds the state, so a link reproduces the view.
"""

from __future__ import annotations

import html

import streamlit as st

from pages import decoding, tabs, url_state
from pages.choices import keyed
from pages.common import fragment_of, leave_page, page
from pages.explore import alignment, attribution, bertviz, focus, heads, lens, model_view, pair
from pages.explore.shared import Shown
from pages.figures import presenting
from pages.i18n import decoding_label, escaped, language, language_label, t
from pages.models import MAX_SOURCE_TOKENS, cached_translation, stored_heads
from pages.page_slots import fragment_in_a_slot
from pages.sentence import DEFAULT_SENTENCE, follow_sentence, linked_sentence_note
from pages.url_state import Field
from transformer.analysis import precompute
from transformer.analysis.attention import AttentionMaps, Translation, merged_view, without_specials
from transformer.analysis.figures import FIGURES
from transformer.analysis.input_check import not_source_reasons, unknown_characters

# The paper's two attention-figure sentences (newstest2013), one click away.
PAPER_SENTENCES = {  # message key of the button → sentence
    "explore.paper_making": FIGURES[3].sentence,
    "explore.paper_its": FIGURES[4].sentence,
}
FALLBACK_VIEW = ("encoder", 4, 0)  # kind, 0-based layer and head: without stored head scores, the paper's layer 5
MAX_CHARACTERS = 2000  # longer pastes are cut before tokenising (the model reads fewer pieces than this anyway)

# ------------------------------------------------------------------------------------------------ URL state
# Every control's value lives in st.session_state under its key and in the URL under the same name (url_state).
TABS = (heads.TAB, model_view.TAB, focus.TAB, pair.TAB, alignment.TAB, attribution.TAB, lens.TAB, bertviz.TAB)
VIEW_KEY = "view"
VIEW_TAB_KEY = "view_tab"  # the tab strip (its widget: view_tab__en, …; the open tab: VIEW_KEY)
SCALES = ("0 to 1", "fitted")
FIELDS = {
    "text": Field(DEFAULT_SENTENCE, url_state.text(100_000)),
    **decoding.FIELDS,
    "merge": Field(True, url_state.flag, url_state.dump_flag),  # words; off: the pieces the model reads
    "specials": Field(True, url_state.flag, url_state.dump_flag),
    "predicted": Field(True, url_state.flag, url_state.dump_flag),  # decoder rows by the token they write
    "scale": Field(SCALES[0], url_state.choice(SCALES)),
    VIEW_KEY: tabs.choice(TABS),
    **tabs.fields_of(TABS),
}
# The controls drawn inside each fragment (below the sidebar's): a fragment restores its own before drawing them.
PANEL_KEYS = ("text",)
VIEWS_KEYS = (VIEW_KEY, *tabs.fields_of(TABS))


def default_view(loaded) -> None:
    """Open on the loaded model's clearest head (best-aligned cross-attention head, else its sharpest encoder
    head: :func:`transformer.analysis.precompute.default_head`) unless the link or an earlier choice names one."""
    if all(key in st.session_state for key in ("kind", "layer", "head")):
        return
    stored = stored_heads(loaded)
    kind, layer, head = FALLBACK_VIEW if stored is None else precompute.default_head(stored.tables)
    layers = loaded.config.layers(kind)
    url_state.ensure("kind", kind)
    url_state.ensure("layer", str(min(layer, layers - 1) + 1))
    url_state.ensure("head", str(head + 1))


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeio" else "a"


def use_sentence(sentence: str) -> None:
    st.session_state["text"] = sentence


def token_strip(label: str, tokens: list[str]) -> None:
    """Tokens as the model sees them, each in its own box; escaped so any input shows as text."""
    boxes = "".join(
        f'<span style="display:inline-block;border:1px solid #ccc;border-radius:4px;padding:1px 5px;margin:2px;'
        f'font-family:monospace;font-size:0.85em">{html.escape(token)}</span>'
        for token in tokens
    )
    st.markdown(f"**{html.escape(label)}** ({len(tokens)})<br>{boxes}", unsafe_allow_html=True)


# ------------------------------------------------------------------------------------------------ page
def sidebar() -> None:
    """The page's own sidebar controls: the decoding and how the maps are drawn."""
    st.header(t("explore.decoding"))
    decoding.controls()
    st.header(t("explore.display"))
    st.toggle(t("explore.merge"), key="merge", help=t("explore.merge_help"))
    st.toggle(t("explore.specials"), key="specials")
    st.toggle(t("explore.predicted"), key="predicted", help=t("explore.predicted_help"))
    scales = {"0 to 1": t("explore.scale_fixed"), "fitted": t("explore.scale_fitted")}
    keyed(
        st.radio,
        t("explore.scale"),
        SCALES,
        key="scale",
        horizontal=True,
        format_func=scales.get,
        help=t("explore.scale_help"),
    )


def main() -> None:
    """The page."""
    with page("explore", FIELDS, sidebar=sidebar) as loaded:
        default_view(loaded)
        config = loaded.config
        source, target = language_label(config.source_language), language_label(config.target_language)
        st.title(t("explore.title"))
        if not presenting():  # on a projector the first chart needs the room
            st.caption(
                t(
                    "explore.about",
                    article=article(source).capitalize(),
                    source=escaped(source),
                    target=target,
                    encoder=config.encoder_layers,
                    decoder=config.decoder_layers,
                    heads=config.num_heads,
                    d_model=config.d_model,
                    checkpoint=escaped(loaded.path.name, code=True),
                )
            )
        translation_panel(loaded)


@fragment_in_a_slot
def translation_panel(loaded) -> None:
    """The sentence, its translation and the views of its heads. A fragment: submitting a sentence reruns this
    panel only, not the sidebar above it (whose controls rerun the whole page)."""
    with fragment_of("explore", FIELDS, PANEL_KEYS):  # a fragment's rerun does not pass through main()
        sentence_and_views(loaded)


def sentence_and_views(loaded) -> None:
    config = loaded.config
    source, target = language_label(config.source_language), language_label(config.target_language)
    follow_sentence("text")
    with st.form("translate", border=False):
        sentence, button = st.columns([6, 1], vertical_alignment="bottom")
        sentence.text_area(t("explore.sentence", source=source), key="text", height=68, max_chars=None)
        button.form_submit_button(t("explore.translate"), type="primary", width="stretch")
    linked_sentence_note("text")
    # Rows of controls are single horizontal containers rather than columns: fewer elements for every run to send.
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(t("explore.paper_sentences"), width="content")
        for label, sentence in PAPER_SENTENCES.items():
            st.button(t(label), on_click=use_sentence, args=(sentence,), type="tertiary")

    text = st.session_state["text"]
    if not text.strip():
        st.info(t("explore.type_sentence", article=article(source), source=escaped(source)))
        leave_page()
    pasted = len(text)
    text = text[:MAX_CHARACTERS]  # what no screen can show anyway; the model reads fewer pieces still

    with st.spinner(t("explore.translating"), show_time=True):  # the seconds so far, after the first half second
        translation = cached_translation(loaded, text, decoding.options())
    if translation.truncated or pasted > len(text):
        read = translation.read_text.strip()
        ending = read[-40:].lstrip()
        st.warning(t("explore.too_long", pasted=pasted, pieces=MAX_SOURCE_TOKENS - 1, read=len(read), ending=ending))
    reasons = not_source_reasons(
        text, translation.maps.source_tokens, config.source_language, config.target_language, language()
    )
    if reasons:
        reads = language_label(config.source_language)
        st.warning(t("explore.not_source", reads=reads, reasons=escaped("; ".join(reasons))))
    missing = unknown_characters(translation.read_text, loaded.tokenizer)
    if missing and not reasons:  # input made mostly of them already has the warning above
        shown = ", ".join(f"`{character}`" for character in missing[:12]) + (" …" if len(missing) > 12 else "")
        st.info(t("explore.unknown_characters", characters=shown))
    st.markdown(
        f'<div class="translation" style="font-size:1.45rem;font-weight:600;margin:0.2rem 0">'
        f"{html.escape(translation.translation) or '∅'}</div>",
        unsafe_allow_html=True,
    )
    search = decoding_label(translation.options)
    timing = t(
        "explore.timing",
        target=target,
        decoding=search,
        decode=translation.seconds["decode"] * 1000,
        attention=translation.seconds["attention"] * 1000,
    )
    others, waited = int(translation.seconds.get("batch", 1)) - 1, translation.seconds.get("waited", 0.0)
    if others > 0 or waited >= 0.05:  # other sessions were translating at the same time
        timing += t("explore.shared", others=others, waited=waited * 1000)
    if not presenting():
        st.caption(timing)

    maps = translation.maps
    by_prediction = bool(st.session_state["predicted"])
    if st.session_state["merge"]:
        maps = merged_view(maps, by_prediction)
    if not st.session_state["specials"]:
        maps = without_specials(maps, by_prediction)
    with st.expander(t("explore.tokens"), expanded=bool(reasons)):
        token_strip(t("explore.source_tokens"), maps.source_tokens)
        token_strip(t("explore.decoder_tokens"), maps.target_tokens)

    views_panel(maps, translation, loaded)


@fragment_in_a_slot
def views_panel(maps: AttentionMaps, translation: Translation, loaded) -> None:
    """The views of the heads, as tabs (:data:`TABS`). A fragment: changing the tab, the attention kind, a layer or a
    head reruns only this panel with the translation already made, not the sidebar, the form and the translation
    above it. Only the open tab is built and sent (the others run when chosen), which keeps each answer and the first
    render fast."""
    # The controls of the tab that was open in the last run were forgotten at its end: restored here.
    with fragment_of("explore", FIELDS, VIEWS_KEYS):
        tabs.show(TABS, VIEW_KEY, VIEW_TAB_KEY, Shown(maps, translation, loaded))
