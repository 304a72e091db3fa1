"""The *Alignment* tab of Translate and explore: the translation's words linked by the cross-attention
(:mod:`transformer.analysis.word_alignment`), how far that reading agreed with human alignments, and the source words
the translation may have left out (:mod:`transformer.analysis.omissions`)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.explore.shared import Shown, layer_head_pickers
from pages.figures import sentence_slug, show_figure
from pages.i18n import escaped, language, t
from pages.models import stored_beside
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis import alignment_choice
from transformer.analysis import word_alignment as wa
from transformer.analysis.attention import Translation
from transformer.analysis.omissions import MARGIN as OMISSION_MARGIN
from transformer.analysis.omissions import OMISSIONS_FILE, Omissions, Support, omissions, source_support
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots import alignment as plot_alignment


def render(shown: Shown) -> None:
    """The translation's words linked by the cross-attention (:mod:`transformer.analysis.word_alignment`), the
    reading chosen with the controls (by default the one measured best against gold alignments), how far that
    reading agreed with human alignments, and the source words the translation may have left out."""
    translation, loaded = shown.translation, shown.loaded
    stored = stored_beside(loaded, alignment_choice.ALIGNMENT_FILE)
    default = alignment_choice.default_choice(stored)
    url_state.ensure("align_layer", "avg" if default.layer is None else str(default.layer + 1))
    url_state.ensure("align_head", "avg" if default.head is None else str(default.head + 1))
    url_state.ensure("align_shift", default.shift, lambda value: isinstance(value, bool))
    url_state.ensure("align_both", default.both, lambda value: isinstance(value, bool))
    maps = translation.maps
    layer_column, head_column, shift_column, both_column = st.columns([1, 1, 2, 2], vertical_alignment="bottom")
    layer, head = layer_head_pickers(maps, prefix="align_", columns=(layer_column, head_column))
    shift_column.checkbox(t("explore.align_shift"), key="align_shift", help=t("explore.align_shift_help"))
    both_column.checkbox(t("explore.align_both"), key="align_both", help=t("explore.align_both_help"))
    method = wa.Method(layer, head, st.session_state["align_shift"], st.session_state["align_both"])
    trust_note(method, stored)
    pair = wa.from_maps(maps)
    scores = wa.word_scores(pair, method)  # once: the links and the lines' strength both read it
    found_links = wa.links(pair, method, scores)
    found, support = word_checks(loaded, translation)
    title = t("explore.align_title", method=method.name)
    show_figure(
        plot_alignment.alignment_figure(
            pair.english,
            pair.german,
            found_links,
            scores,
            title,
            language(),
            english_marks=omission_marks(found, pair.english),
            german_marks=support_marks(support, pair.german),
            compounds=wa.compound_links(pair, method, found_links, scores),
        ),
        key="alignment",
        filename=f"{sentence_slug(translation.source_text)}-alignment-{method.name}",
    )
    st.caption(t("explore.align_caption"))
    omission_note(found, support, stored_beside(loaded, OMISSIONS_FILE))


@per_model(max_entries=64)
def cached_omissions(loaded: LoadedCheckpoint, text: str, output_ids: tuple[int, ...]) -> Omissions:
    return omissions(loaded, text.split(), output_ids)


@per_model(max_entries=64)
def cached_support(loaded: LoadedCheckpoint, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> Support:
    words, owners = wa.words_of(loaded.tokenizer.pieces(output_ids))
    return source_support(loaded, source_ids, output_ids, owners, words)


def word_checks(loaded: LoadedCheckpoint, translation: Translation) -> tuple[Omissions | None, Support | None]:
    """The source words the translation may leave out and the output words the source may not support; None for an
    empty source or translation."""
    text = translation.read_text or translation.source_text
    if not text.split() or not translation.output_ids:
        return None, None
    output_ids = tuple(translation.output_ids)
    return (
        cached_omissions(loaded, text, output_ids),
        cached_support(loaded, tuple(translation.source_ids), output_ids),
    )


def omission_marks(found: Omissions | None, english: list[str]) -> plot_alignment.Marks:
    """Each English word's omission gain as its note; the words flagged, marked (their letters, not their
    punctuation). Nothing when the source's words and the tokenizer's do not spell the same letters."""
    spans = None if found is None else wa.regroup(found.words, english)
    if spans is None:
        return plot_alignment.Marks()
    spans = [[index for index in span if any(c.isalnum() for c in english[index])] for span in spans]
    notes: list[str | None] = [None] * len(english)
    for word, span in enumerate(spans):
        for index in span if np.isfinite(found.gain[word]) else ():
            notes[index] = t("explore.omission_hover", gain=found.gain[word])
    flagged = {index for word in found.flagged() for index in spans[word]}
    return plot_alignment.Marks(notes, flagged, t("explore.omission_mark"))


def support_marks(support: Support | None, german: list[str]) -> plot_alignment.Marks:
    """Each German content word's support from the source as its note; the unsupported ones marked."""
    if support is None or support.words != german:
        return plot_alignment.Marks()
    notes: list[str | None] = [None] * len(german)
    for index in support.ranked():
        notes[index] = t("explore.support_hover", pmi=support.pmi[index])
    return plot_alignment.Marks(notes, set(support.flagged()), t("explore.support_mark"))


def marks_trust(measured: dict | None) -> str:
    """How often the omission marks were right for this model (``benchmarks/omissions.py --store``), or that it was
    not measured."""
    try:
        figures = {name: measured[name]["value"] for name in ("deleted_marked", "marks_right", "intact_words_marked")}
        cases = int(measured["cases"])
    except (KeyError, TypeError, ValueError):
        return t("explore.omissions_unmeasured")
    return t(
        "explore.omissions_measured",
        cases=cases,
        marked=figures["deleted_marked"],
        right=figures["marks_right"],
        intact=figures["intact_words_marked"],
    )


def omission_note(found: Omissions | None, support: Support | None, measured: dict | None = None) -> None:
    """The marks in words: the source words whose absence would make this translation more likely (contrastive
    conditioning) and the output words the source does not make more likely, each with how they were found and
    (``measured``: stored beside the model) how often such a mark was right."""
    if found is None or support is None:
        return

    def listed(words: list[str], values, flagged: list[int]) -> str:
        return ", ".join(f"“{words[i]}” ({values[i]:+.1f})" for i in flagged)

    if found.flagged():
        st.warning(t("explore.omissions_found", words=escaped(listed(found.words, found.gain, found.flagged()))))
    else:
        st.caption(t("explore.omissions_none"))
    st.caption(t("explore.omissions_how", margin=OMISSION_MARGIN) + " " + marks_trust(measured))
    if support.flagged():
        st.warning(t("explore.unsupported_found", words=escaped(listed(support.words, support.pmi, support.flagged()))))
    st.caption(t("explore.unsupported_how"))


def trust_note(method: wa.Method, stored: dict | None) -> None:
    """How far the chosen reading agreed with gold alignments, beside the best reading and the usual one."""
    measured = (stored or {}).get("methods", {})
    if method.name not in measured:
        fallback = escaped(alignment_choice.FALLBACK_METHOD)
        st.warning(t("explore.align_unmeasured", method=escaped(method.name), fallback=fallback))
        return
    score, usual = measured[method.name], measured.get("mean", {})
    held_out = [check["aer"] for check in stored.get("held_out", [])]
    mean = sum(held_out) / len(held_out) if held_out else stored["aer"]
    # the cross-fitted AER with its bootstrap interval (files written before intervals: the halves' mean, no interval)
    interval = stored.get("held_out_interval") or {"value": mean, "low": float("nan"), "high": float("nan")}
    st.info(
        t("explore.align_trust", method=escaped(method.name), pairs=stored["pairs"], gold=stored["gold"], **score)
        + "\n\n"
        + t(
            "explore.align_best",
            best=stored["method"],
            aer=stored["aer"],
            held_out=interval["value"],
            low=interval["low"],
            high=interval["high"],
            usual=usual.get("aer", float("nan")),
        )
    )


TAB = Tab(
    "Alignment",
    "explore.view_alignment",
    render,
    {  # None: the reading stored beside the model, else the fallback (word_alignment.default_choice)
        "align_layer": Field(None),
        "align_head": Field(None),
        "align_shift": Field(None, url_state.flag, url_state.dump_flag),
        "align_both": Field(None, url_state.flag, url_state.dump_flag),
    },
)
