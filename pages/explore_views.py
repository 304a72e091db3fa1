"""The four views of the main page's heads (``pages/explore.py``): *Heads* (one head as a heatmap), *Model view*
(every layer and head as a clickable grid), *Token focus* (the paper-style token lines) and bertviz's views, with the
layer/head pickers and download names they share."""

from __future__ import annotations

import io

import numpy as np
import streamlit as st

from pages import url_state
from pages.common import matrix_csv, sentence_slug, show_figure, stored_beside
from pages.i18n import language, t
from pages.links import atlas_button
from transformer.analysis import word_alignment as wa
from transformer.analysis.attention import KINDS, AttentionMaps, Translation
from transformer.analysis.omissions import MARGIN as OMISSION_MARGIN
from transformer.analysis.omissions import Omissions, Support, omissions, source_support
from transformer.checkpoint import LoadedCheckpoint
from transformer.plots import alignment as plot_alignment
from transformer.plots import attention as plot_attention
from transformer.plots import bertviz as bertviz_view
from transformer.plots import grid as plot_grid

BERTVIZ_VIEWS = ("head view", "model view")


def maps_npz(maps: AttentionMaps, translation: Translation) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        encoder=maps.encoder,
        decoder=maps.decoder,
        cross=maps.cross,
        source_tokens=np.array(maps.source_tokens),
        target_tokens=np.array(maps.target_tokens),
        predicted_tokens=np.array(maps.predicted_tokens),
        source_text=np.array(translation.source_text),
        translation=np.array(translation.translation),
    )
    return buffer.getvalue()


def choice_index(value: str, count: int) -> int | None:
    """'avg' → None (average), else a 1-based number clamped into range → 0-based index."""
    if value == "avg":
        return None
    try:
        return min(max(int(value), 1), count) - 1
    except ValueError:
        return 0


def layer_head_pickers(maps: AttentionMaps, prefix: str = "", columns=None) -> tuple[int | None, int | None]:
    """Layer and head selectboxes (keys ``{prefix}layer``/``{prefix}head``, values "1"… or "avg") → 0-based indices,
    None for an average. Averaging "head N" over layers would mix heads that only share a number, so the average
    over layers is always over all heads."""
    layer_options = ["avg", *map(str, range(1, maps.num_layers + 1))]
    head_options = ["avg", *map(str, range(1, maps.num_heads + 1))]
    for key, options in ((f"{prefix}layer", layer_options), (f"{prefix}head", head_options)):
        if st.session_state.get(key) not in options:
            st.session_state[key] = options[min(1, len(options) - 1)]
    every_layer = st.session_state[f"{prefix}layer"] == "avg"
    if every_layer:
        st.session_state[f"{prefix}head"] = "avg"
    left, right = columns or st.columns(2)
    average = t("explore.average")
    names = {value: average if value == "avg" else value for value in {*layer_options, *head_options}}
    left.selectbox(t("explore.layer_label"), layer_options, key=f"{prefix}layer", format_func=names.get)
    right.selectbox(
        t("explore.head_label"),
        head_options,
        key=f"{prefix}head",
        format_func=names.get,
        disabled=every_layer,
        help=t("explore.heads_averaged") if every_layer else None,
    )
    return (
        choice_index(st.session_state[f"{prefix}layer"], maps.num_layers),
        choice_index(st.session_state[f"{prefix}head"], maps.num_heads),
    )


def figure_name(maps: AttentionMaps, kind: str, layer: int | None, head: int | None) -> str:
    """A download's name after what it shows: sentence, attention kind, layer and head."""
    sentence = sentence_slug("".join(maps.source_tokens))
    return f"{sentence}-{kind}-layer{'avg' if layer is None else layer + 1}-head{'avg' if head is None else head + 1}"


def kind_labels() -> dict[str, str]:
    """The attention kinds' short names in the chosen language (looked up now, not inside a format function)."""
    return {kind: t(f"explore.kind_{kind}") for kind in KINDS}


def describe(kind: str, layer: int | None, head: int | None) -> str:
    where = t("explore.all_layers") if layer is None else t("explore.layer", layer=layer + 1)
    which = t("explore.all_heads") if head is None else t("explore.head", head=head + 1)
    return f"{t(f'kind.{kind}')}, {where}, {which}"


def query_labels(maps: AttentionMaps, kind: str) -> list[str]:
    queries, _ = maps.tokens(kind)
    if kind != "encoder" and st.session_state.get("predicted"):
        return [f"→{token}" for token in maps.predicted_tokens]
    return queries


def show_head(maps: AttentionMaps, kind: str, layer: int, head: int, key: str) -> None:
    """One head's heatmap, drawn at the scale the sidebar chose."""
    show_figure(
        plot_attention.attention_heatmap(
            maps.matrix(kind, layer, head),
            query_labels(maps, kind),
            maps.tokens(kind)[1],
            describe(kind, layer, head),
            causal=kind == "decoder",
            fitted=st.session_state["scale"] == "fitted",
            language=language(),
        ),
        key=key,
        filename=figure_name(maps, kind, layer, head),
    )
    atlas_button(kind, layer, head, key=f"{key}_atlas")


def heads_view(maps: AttentionMaps, translation: Translation) -> None:
    kind_column, layer_column, head_column = st.columns([3, 1, 1], vertical_alignment="bottom")
    kind_column.radio(t("explore.attention"), KINDS, key="kind", format_func=kind_labels().get, horizontal=True)
    kind = st.session_state["kind"]
    layer, head = layer_head_pickers(maps, columns=(layer_column, head_column))
    chart, guide = st.columns([3, 1])
    with chart:
        show_head(maps, kind, layer, head, key="heatmap")
    if kind != "encoder":
        chart.caption(t("explore.rows_predicted" if st.session_state.get("predicted") else "explore.rows_read"))
    with guide, st.expander(t("explore.how_to_read"), expanded=True):
        st.markdown(t("explore.how_to_read_text"))
    downloads = st.container(horizontal=True)
    name = figure_name(maps, kind, layer, head)
    # The files are made when the button is pressed (a callable), not at every run of the page.
    downloads.download_button(
        t("explore.download_csv"),
        lambda: matrix_csv(maps.matrix(kind, layer, head), query_labels(maps, kind), maps.tokens(kind)[1]),
        file_name=f"{name}.csv",
        mime="text/csv",
    )
    downloads.download_button(
        t("explore.download_npz"),
        lambda: maps_npz(maps, translation),
        file_name=f"{name.split('-' + kind)[0]}.npz",
        mime="application/octet-stream",
    )


def open_clicked_head(chart_key: str) -> None:
    """The grid's click handler: open the clicked tile's head (its marker carries [layer, head], 1-based)."""
    points = st.session_state[chart_key].selection.points
    if points and len(points[0].get("customdata") or ()) == 2:
        layer, head = points[0]["customdata"]
        st.session_state["grid_layer"], st.session_state["grid_head"] = str(int(layer)), str(int(head))


def grid_view(maps: AttentionMaps) -> None:
    kind = st.radio(t("explore.attention"), KINDS, key="grid_kind", format_func=kind_labels().get, horizontal=True)
    queries, keys = query_labels(maps, kind), maps.tokens(kind)[1]
    fitted = st.session_state["scale"] == "fitted"
    title = t("explore.grid_title", kind=t(f"kind.{kind}"))
    grid = st.container()
    st.caption(t("explore.grid_caption"))
    layer, head = layer_head_pickers(maps, prefix="grid_")
    # A chart keeps its last click: keyed by the open head, a click on the tile that was open before another
    # choice is a new click.
    chart_key = f"model_view_{kind}_{layer}_{head}"
    with grid:
        show_figure(
            plot_grid.model_view_grid(
                maps.weights(kind),
                queries,
                keys,
                title,
                causal=kind == "decoder",
                fitted=fitted,
                language=language(),
                opened=(layer, head),
            ),
            key=chart_key,
            filename=figure_name(maps, kind, None, None).replace("layeravg-headavg", "every-head"),
            on_select=lambda: open_clicked_head(chart_key),
        )
    show_head(maps, kind, layer, head, key="grid_cell")


def focus_view(maps: AttentionMaps) -> None:
    kind = st.radio(t("explore.attention"), KINDS, key="focus_kind", format_func=kind_labels().get, horizontal=True)
    queries, keys = query_labels(maps, kind), maps.tokens(kind)[1]
    left, right = st.columns(2)
    url_state.ensure("focus_layer", min(4, maps.num_layers - 1), lambda i: 0 <= i < maps.num_layers)
    layer = left.selectbox(
        t("explore.layer_label"), range(maps.num_layers), key="focus_layer", format_func=lambda i: str(i + 1)
    )
    options = [None, *range(len(queries))]
    url_state.ensure("focus_query", None, options.__contains__)
    query_names = {i: t("explore.all_tokens") if i is None else f"{i + 1}: {queries[i]}" for i in options}
    query = right.selectbox(t("explore.query"), options, key="focus_query", format_func=query_names.get)
    url_state.ensure("focus_heads", list(range(maps.num_heads)), url_state.indices_below(maps.num_heads))
    head_names = {h: t("explore.head", head=h + 1) for h in range(maps.num_heads)}
    heads = st.multiselect(
        t("explore.heads"), list(range(maps.num_heads)), format_func=head_names.get, key="focus_heads"
    )
    title = f"{t(f'kind.{kind}')}, {t('explore.layer', layer=layer + 1)}" + (
        "" if query is None else t("explore.attention_of", token=queries[query])
    )
    lines = plot_attention.token_lines(
        maps.weights(kind)[layer],
        queries,
        keys,
        heads=heads or None,
        query_index=query,
        title=title,
        language=language(),
    )
    show_figure(lines, key="focus", filename=figure_name(maps, kind, layer, None).replace("-headavg", "-token-lines"))


def bertviz_panel(maps: AttentionMaps) -> None:
    left, right = st.columns(2)
    bertviz_names = {"head view": t("explore.bertviz_head_view"), "model view": t("explore.bertviz_model_view")}
    view = left.radio(
        t("explore.bertviz_view"), BERTVIZ_VIEWS, key="bertviz_view", horizontal=True, format_func=bertviz_names.get
    )
    kinds = {"all": t("explore.all_three"), **kind_labels()}
    kind = right.selectbox(t("explore.attention"), ["all", *KINDS], key="bertviz_kind", format_func=kinds.get)
    selected = None if kind == "all" else kind
    if view == "head view":
        document = bertviz_view.head_view_html(maps, selected)
    else:
        document = bertviz_view.model_view_html(maps, selected)
    st.iframe(document, height=bertviz_view.frame_height(maps, view.split()[0], selected))
    st.download_button(
        t("explore.download_html"),
        lambda: document,
        file_name=bertviz_view.standalone_filename(selected, view.split()[0]),
        mime="text/html",
    )
    st.caption(t("explore.bertviz_credit"))


ALIGNMENT_KEYS = ("align_layer", "align_head", "align_shift", "align_both")


def alignment_view(translation: Translation, loaded: LoadedCheckpoint) -> None:
    """The translation's words linked by the cross-attention (:mod:`transformer.analysis.word_alignment`), the
    reading chosen with the controls (by default the one measured best against gold alignments), how far that
    reading agreed with human alignments, and the source words the translation may have left out."""
    stored = stored_beside(loaded, wa.ALIGNMENT_FILE)
    default = wa.default_choice(stored)
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
    found, support = word_checks(loaded, translation)
    title = t("explore.align_title", method=method.name)
    show_figure(
        plot_alignment.alignment_figure(
            pair.english,
            pair.german,
            wa.links(pair, method, scores),
            scores,
            title,
            language(),
            english_marks=omission_marks(found, pair.english),
            german_marks=support_marks(support, pair.german),
        ),
        key="alignment",
        filename=f"{sentence_slug(translation.source_text)}-alignment-{method.name}",
    )
    st.caption(t("explore.align_caption"))
    omission_note(found, support)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_omissions(_loaded: LoadedCheckpoint, checkpoint: str, text: str, output_ids: tuple[int, ...]) -> Omissions:
    return omissions(_loaded, text.split(), output_ids)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_support(
    _loaded: LoadedCheckpoint, checkpoint: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]
) -> Support:
    words, owners = wa.words_of(_loaded.tokenizer.pieces(output_ids))
    return source_support(_loaded, source_ids, output_ids, owners, words)


def word_checks(loaded: LoadedCheckpoint, translation: Translation) -> tuple[Omissions | None, Support | None]:
    """The source words the translation may leave out and the output words the source may not support; None for an
    empty source or translation."""
    text = translation.read_text or translation.source_text
    if not text.split() or not translation.output_ids:
        return None, None
    output_ids = tuple(translation.output_ids)
    return (
        cached_omissions(loaded, str(loaded.path), text, output_ids),
        cached_support(loaded, str(loaded.path), tuple(translation.source_ids), output_ids),
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


def omission_note(found: Omissions | None, support: Support | None) -> None:
    """The marks in words: the source words whose absence would make this translation more likely (contrastive
    conditioning) and the output words the source does not make more likely, each with how they were found."""
    if found is None or support is None:
        return
    flagged = found.flagged()
    if flagged:
        words = ", ".join(f"“{found.words[i]}” (+{found.gain[i]:.1f})" for i in flagged)
        st.warning(t("explore.omissions_found", words=words))
    else:
        st.caption(t("explore.omissions_none"))
    st.caption(t("explore.omissions_how", margin=OMISSION_MARGIN))
    unsupported = support.flagged()
    if unsupported:
        words = ", ".join(f"“{support.words[i]}” ({support.pmi[i]:+.1f})" for i in unsupported)
        st.warning(t("explore.unsupported_found", words=words))
    st.caption(t("explore.unsupported_how"))


def trust_note(method: wa.Method, stored: dict | None) -> None:
    """How far the chosen reading agreed with gold alignments, beside the best reading and the usual one."""
    measured = (stored or {}).get("methods", {})
    if method.name not in measured:
        st.warning(t("explore.align_unmeasured", method=method.name, fallback=wa.FALLBACK_METHOD))
        return
    score, usual = measured[method.name], measured.get("mean", {})
    held_out = [check["aer"] for check in stored.get("held_out", [])]
    mean = sum(held_out) / len(held_out) if held_out else stored["aer"]
    # the cross-fitted AER with its bootstrap interval (files written before intervals: the halves' mean, no interval)
    interval = stored.get("held_out_interval") or {"value": mean, "low": float("nan"), "high": float("nan")}
    st.info(
        t("explore.align_trust", method=method.name, pairs=stored["pairs"], gold=stored["gold"], **score)
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
