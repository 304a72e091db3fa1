"""The app's main page: translate an English sentence into German and explore every attention head.

``app.py`` runs :func:`main` as the page "Translate and explore". The sidebar picks the checkpoint and the decoding;
the page shows the translation, the tokens as the model sees them, and every head of the three attention kinds as
heatmaps, a layers × heads grid, the paper-style token view and bertviz's views. The URL holds the state, so a link
reproduces the view.
"""

from __future__ import annotations

import csv
import html
import io
import re

import numpy as np
import streamlit as st

from pages import url_state
from pages.common import (
    COMMON_FIELDS,
    presenter_controls,
    selected_checkpoint,
    show_figure,
    sidebar_checkpoint_picker,
    sidebar_figure_format_picker,
    stored_heads,
)
from pages.url_state import Field
from transformer.analysis import precompute
from transformer.analysis.attention import (
    KIND_TITLES,
    KINDS,
    AttentionMaps,
    Translation,
    merged_view,
    translate_with_attention,
    without_specials,
)
from transformer.analysis.figures import FIGURES
from transformer.analysis.input_check import not_source_reasons
from transformer.config import language_name
from transformer.decode import PRECISIONS, DecodingOptions, default_precision
from transformer.plots import attention as plot_attention
from transformer.plots import bertviz as bertviz_view

DEFAULT_SENTENCE = "The children are playing in the park."
# The paper's two attention-figure sentences (newstest2013), one click away.
PAPER_SENTENCES = {
    "“making … more difficult” (Figure 3)": FIGURES[3].sentence,
    "“its → Law / application” (Figures 4, 5)": FIGURES[4].sentence,
}
FALLBACK_VIEW = ("encoder", 4, 0)  # kind, 0-based layer and head: without stored head scores, the paper's layer 5
MAX_CHARACTERS = 2000  # longer pastes are cut before tokenising (the model reads fewer pieces than this anyway)
MAX_SOURCE_TOKENS = 96  # beyond this, attention maps stop being readable on a screen
KIND_LABELS = {"encoder": "Encoder self", "decoder": "Decoder self (masked)", "cross": "Cross (decoder → encoder)"}

# ------------------------------------------------------------------------------------------------ URL state
# Every control's value lives in st.session_state under its key and in the URL under the same name (url_state).
VIEW_KEY = "view"
SCALES = ("0 to 1", "fitted")
VIEWS = ("Heads", "Model view", "Token focus", "bertviz")
BERTVIZ_VIEWS = ("head view", "model view")
FIELDS = {
    "text": Field(DEFAULT_SENTENCE, url_state.text(100_000)),
    "beam": Field(4, url_state.integer(1, 8)),
    "alpha": Field(0.6, url_state.number(0.0, 2.0)),
    "precision": Field(default_precision(), url_state.choice(PRECISIONS)),
    "merge": Field(False, url_state.flag, url_state.dump_flag),
    "specials": Field(True, url_state.flag, url_state.dump_flag),
    "predicted": Field(False, url_state.flag, url_state.dump_flag),
    VIEW_KEY: Field(VIEWS[0], url_state.choice(VIEWS)),
    # Heads
    "kind": Field(None, url_state.choice(KINDS)),  # None: the loaded model's clearest head (default_view)
    "layer": Field(None),
    "head": Field(None),
    "scale": Field(SCALES[0], url_state.choice(SCALES)),
    # Model view
    "grid_kind": Field("encoder", url_state.choice(KINDS)),
    "grid_layer": Field("5"),
    "grid_head": Field("1"),
    # Token focus (layer, query position and heads as 0-based indices)
    "focus_kind": Field("encoder", url_state.choice(KINDS)),
    "focus_layer": Field(None, url_state.integer(0, 63), str),
    "focus_query": Field(None, url_state.optional_integer(0, 10_000), url_state.dump_optional),
    "focus_heads": Field(None, url_state.integers(0, 63), url_state.dump_integers),
    # bertviz
    "bertviz_view": Field(BERTVIZ_VIEWS[0], url_state.choice(BERTVIZ_VIEWS)),
    "bertviz_kind": Field("all", url_state.choice(["all", *KINDS])),
    **COMMON_FIELDS,
}


def restore_from_url() -> None:
    """Take the controls from the URL on a session's first visit, and keep them while tabs and pages change."""
    url_state.keep(FIELDS, "explore")


def save_to_url() -> None:
    url_state.save(FIELDS)


def default_view(loaded) -> None:
    """Open on the loaded model's clearest head (best-aligned cross-attention head, else its sharpest encoder
    head: :func:`transformer.analysis.precompute.default_head`) unless the link or an earlier choice names one."""
    if all(key in st.session_state for key in ("kind", "layer", "head")):
        return
    stored = stored_heads(loaded)
    kind, layer, head = FALLBACK_VIEW if stored is None else precompute.default_head(stored.tables)
    layers = loaded.config.encoder_layers if kind == "encoder" else loaded.config.decoder_layers
    url_state.ensure("kind", kind)
    url_state.ensure("layer", str(min(layer, layers - 1) + 1))
    url_state.ensure("head", str(head + 1))


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeio" else "a"


def use_sentence(sentence: str) -> None:
    st.session_state["text"] = sentence


# ------------------------------------------------------------------------------------------------ translation
@st.cache_data(max_entries=64, show_spinner=False)
def cached_translation(checkpoint_path: str, text: str, options: DecodingOptions, _loaded) -> Translation:
    """Translations are cached per checkpoint folder, sentence and decoding options."""
    return translate_with_attention(_loaded.model, _loaded.tokenizer, text, options, MAX_SOURCE_TOKENS)


def decoding_options() -> DecodingOptions:
    """The sidebar's decoding choices as one object."""
    state = st.session_state
    return DecodingOptions(int(state["beam"]), float(state["alpha"]), precision=state["precision"])


def token_strip(label: str, tokens: list[str]) -> None:
    """Tokens as the model sees them, each in its own box; escaped so any input shows as text."""
    boxes = "".join(
        f'<span style="display:inline-block;border:1px solid #ccc;border-radius:4px;padding:1px 5px;margin:2px;'
        f'font-family:monospace;font-size:0.85em">{html.escape(token)}</span>'
        for token in tokens
    )
    st.markdown(f"**{html.escape(label)}** ({len(tokens)})<br>{boxes}", unsafe_allow_html=True)


def matrix_csv(matrix: np.ndarray, query_tokens: list[str], key_tokens: list[str]) -> str:
    """A matrix with query tokens as the first column and key tokens as the header (CSV-quoted)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query \\ key", *key_tokens])
    for token, row in zip(query_tokens, matrix, strict=True):
        writer.writerow([token, *(f"{value:.6f}" for value in row)])
    return buffer.getvalue()


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
    left.selectbox("Layer", layer_options, key=f"{prefix}layer", format_func=lambda v: "average" if v == "avg" else v)
    right.selectbox(
        "Head", head_options, key=f"{prefix}head", format_func=lambda v: "average" if v == "avg" else v,
        disabled=every_layer, help="With the layers averaged, so are the heads: heads of different layers that share "
        "a number are unrelated." if every_layer else None,
    )  # fmt: skip
    return (
        choice_index(st.session_state[f"{prefix}layer"], maps.num_layers),
        choice_index(st.session_state[f"{prefix}head"], maps.num_heads),
    )


def figure_name(maps: AttentionMaps, kind: str, layer: int | None, head: int | None) -> str:
    """A download's name after what it shows: sentence, attention kind, layer and head."""
    words = re.findall(r"[a-z0-9]+", "".join(maps.source_tokens).replace("▁", " ").lower())
    sentence = "-".join(words[:6]) or "sentence"
    return f"{sentence}-{kind}-layer{'avg' if layer is None else layer + 1}-head{'avg' if head is None else head + 1}"


HOW_TO_READ = """
- **Rows** are queries (the token looking), **columns** keys (the tokens looked at). Each row sums to 1.
- **Encoder self**: source on both axes. **Decoder self**: output tokens; the hatched triangle is the **masked
  future**. **Cross**: output rows, source columns; a good head lights up the word being translated.
- **`▁`** starts a word (`▁play` `ing` = one word); **`<0x..>`** is a raw byte of a character the vocabulary
  lacks; **`</s>`** ends the sentence, **`<s>`** starts the output. Heads often park attention on `</s>`.
- A row spread evenly (≈ uniform) is a head that selects nothing.
"""


def describe(kind: str, layer: int | None, head: int | None) -> str:
    where = "all layers" if layer is None else f"layer {layer + 1}"
    which = "average of all heads" if head is None else f"head {head + 1}"
    return f"{KIND_TITLES[kind]}, {where}, {which}"


# ------------------------------------------------------------------------------------------------ page
def main(loading=None) -> None:
    """The page; ``loading`` is a placeholder (``st.empty``) to clear once the translation is ready."""

    def stop() -> None:
        if loading is not None:
            loading.empty()
        st.stop()

    restore_from_url()
    with st.sidebar:
        st.header("Model")
        sidebar_checkpoint_picker()
        st.header("Decoding")
        url_state.ensure("search", "beam" if st.session_state["beam"] > 1 else "greedy")
        st.radio("Search", ["beam", "greedy"], key="search", horizontal=True)
        if st.session_state["search"] == "beam":
            if st.session_state["beam"] < 2:
                st.session_state["beam"] = 4
            st.slider("Beam size", 2, 8, key="beam")
            st.slider("Length penalty α", 0.0, 2.0, step=0.1, key="alpha")
        else:
            st.session_state["beam"] = 1
        st.radio(
            "Search precision",
            PRECISIONS,
            key="precision",
            horizontal=True,
            help="bfloat16 searches with a half-size copy of the weights: faster on CPUs with AVX512-BF16 or AMX, "
            "about the same BLEU (±0.1 on multi30k), and mostly the same translations. Attention is always "
            "recorded in float32.",
        )
        st.header("Display")
        st.toggle("Merge word pieces into words", key="merge")
        st.toggle("Show <s>, </s> and padding", key="specials")
        st.toggle("Label decoder rows by the token they predict", key="predicted")
        st.radio(
            "Colour scale", SCALES, key="scale", horizontal=True,
            help="0 to 1: every map on the same scale, so a flat head looks flat (best for teaching). Fitted: "
            "from 0 to the map's largest weight, to see the structure of weak maps.",
        )  # fmt: skip
        sidebar_figure_format_picker()
    presenter_controls()

    loaded = selected_checkpoint()
    if loaded is None:
        stop()

    default_view(loaded)
    config = loaded.config
    source, target = language_name(config.source_language), language_name(config.target_language)
    st.title("Attention Explorer")
    st.caption(
        f"{article(source).capitalize()} {source}→{target} encoder–decoder Transformer as in *Attention Is All You "
        "Need* (Vaswani et al., 2017): "
        f"{loaded.config.encoder_layers}+{loaded.config.decoder_layers} layers, {loaded.config.num_heads} heads, "
        f"d_model {loaded.config.d_model} — checkpoint `{loaded.path.name}`."
    )
    with st.form("translate", border=False):
        sentence, button = st.columns([6, 1], vertical_alignment="bottom")
        sentence.text_area(f"{source} sentence", key="text", height=68, max_chars=None)
        button.form_submit_button("Translate", type="primary", width="stretch")
    paper = st.columns(len(PAPER_SENTENCES) + 1, vertical_alignment="center")
    paper[0].caption("Or one of the paper's figure sentences:")
    for column, (label, sentence) in zip(paper[1:], PAPER_SENTENCES.items(), strict=True):
        column.button(label, on_click=use_sentence, args=(sentence,), type="tertiary")

    text = st.session_state["text"]
    if not text.strip():
        st.info(f"Type {article(source)} {source} sentence above and press **Translate**.")
        save_to_url()
        stop()
    pasted = len(text)
    text = text[:MAX_CHARACTERS]  # what no screen can show anyway; the model reads fewer pieces still

    with st.spinner("Translating…"):
        translation = cached_translation(str(loaded.path), text, decoding_options(), loaded)
    if translation.truncated or pasted > len(text):
        read = translation.read_text.strip()
        ending = read[-40:].lstrip()
        st.warning(
            f"The input has {pasted:,} characters and the model reads at most {MAX_SOURCE_TOKENS - 1} word pieces: "
            f"only its first {len(read):,} characters, up to “…{ending}”, were translated and are shown below."
        )
    reasons = not_source_reasons(text, translation.maps.source_tokens, config.source_language, config.target_language)
    if reasons:
        reads = language_name(config.source_language)
        st.warning(
            f"**This model reads {reads}**, and this input does not look like {reads}: "
            + "; ".join(reasons)
            + ". Its translation below is likely meaningless; the source tokens show what the model made of it."
        )
    st.markdown(
        f'<div class="translation" style="font-size:1.45rem;font-weight:600;margin:0.2rem 0">'
        f"{html.escape(translation.translation) or '∅'}</div>",
        unsafe_allow_html=True,
    )
    decoding = translation.options.describe()
    st.caption(
        f"{target} translation · {decoding} · decoded in {translation.seconds['decode'] * 1000:.0f} ms, attention "
        f"recorded in {translation.seconds['attention'] * 1000:.0f} ms"
    )

    if loading is not None:
        loading.empty()
    maps = translation.maps
    if st.session_state["merge"]:
        maps = merged_view(maps)
    if not st.session_state["specials"]:
        maps = without_specials(maps)
    with st.expander("Tokens as the model sees them", expanded=bool(reasons)):
        token_strip("Source tokens", maps.source_tokens)
        token_strip("Decoder input tokens", maps.target_tokens)

    # Only the open tab is built and sent (the others run when chosen), which keeps each answer and the first
    # render fast.
    views = dict(zip(VIEWS, (
        lambda: heads_view(maps, translation), lambda: grid_view(maps), lambda: focus_view(maps),
        lambda: bertviz_panel(maps),
    ), strict=True))  # fmt: skip
    for tab, render in zip(st.tabs(list(views), key=VIEW_KEY, on_change="rerun"), views.values(), strict=True):
        if tab.open:
            with tab:
                render()
    save_to_url()


def query_labels(maps: AttentionMaps, kind: str) -> list[str]:
    queries, _ = maps.tokens(kind)
    if kind != "encoder" and st.session_state.get("predicted"):
        return [f"→{token}" for token in maps.predicted_tokens]
    return queries


def heads_view(maps: AttentionMaps, translation: Translation) -> None:
    kind_column, layer_column, head_column = st.columns([3, 1, 1], vertical_alignment="bottom")
    kind_column.radio("Attention", KINDS, key="kind", format_func=KIND_LABELS.get, horizontal=True)
    kind = st.session_state["kind"]
    layer, head = layer_head_pickers(maps, columns=(layer_column, head_column))
    queries, keys = query_labels(maps, kind), maps.tokens(kind)[1]
    matrix = maps.matrix(kind, layer, head)
    name = figure_name(maps, kind, layer, head)
    chart, guide = st.columns([3, 1])
    with chart:
        show_figure(plot_attention.attention_heatmap(matrix, queries, keys, describe(kind, layer, head),
                                          causal=kind == "decoder", fitted=st.session_state["scale"] == "fitted"),
                    key="heatmap", filename=name)  # fmt: skip
    with guide, st.expander("How to read this", expanded=True):
        st.markdown(HOW_TO_READ)
    left, right = st.columns(2)
    left.download_button("Download this matrix (CSV)", matrix_csv(matrix, queries, keys), file_name=f"{name}.csv",
                         mime="text/csv")  # fmt: skip
    right.download_button(
        "Download every head (NPZ)", maps_npz(maps, translation), file_name=f"{name.split('-' + kind)[0]}.npz",
        mime="application/octet-stream",
    )  # fmt: skip


def grid_view(maps: AttentionMaps) -> None:
    kind = st.radio("Attention", KINDS, key="grid_kind", format_func=KIND_LABELS.get, horizontal=True)
    queries, keys = query_labels(maps, kind), maps.tokens(kind)[1]
    fitted = st.session_state["scale"] == "fitted"
    show_figure(
        plot_attention.model_view_grid(maps.weights(kind), queries, keys, f"{KIND_TITLES[kind]}: every layer and head",
                            causal=kind == "decoder", fitted=fitted),
        key="grid", filename=figure_name(maps, kind, None, None).replace("layeravg-headavg", "every-head"),
    )  # fmt: skip
    st.caption("Rows are layers (L1 at the top), columns are heads. Pick a layer and head to see one tile large:")
    layer, head = layer_head_pickers(maps, prefix="grid_")
    show_figure(
        plot_attention.attention_heatmap(maps.matrix(kind, layer, head), queries, keys, describe(kind, layer, head),
                              causal=kind == "decoder", fitted=fitted),
        key="grid_cell", filename=figure_name(maps, kind, layer, head),
    )  # fmt: skip


def focus_view(maps: AttentionMaps) -> None:
    kind = st.radio("Attention", KINDS, key="focus_kind", format_func=KIND_LABELS.get, horizontal=True)
    queries, keys = query_labels(maps, kind), maps.tokens(kind)[1]
    left, right = st.columns(2)
    url_state.ensure("focus_layer", min(4, maps.num_layers - 1), lambda i: 0 <= i < maps.num_layers)
    layer = left.selectbox("Layer", range(maps.num_layers), key="focus_layer", format_func=lambda i: str(i + 1))
    options = [None, *range(len(queries))]
    url_state.ensure("focus_query", None, options.__contains__)
    query = right.selectbox(
        "Query token", options, key="focus_query",
        format_func=lambda i: "all tokens" if i is None else f"{i + 1}: {queries[i]}",
    )  # fmt: skip
    url_state.ensure("focus_heads", list(range(maps.num_heads)),
                      lambda heads: all(0 <= h < maps.num_heads for h in heads))  # fmt: skip
    heads = st.multiselect("Heads", list(range(maps.num_heads)), format_func=lambda h: f"head {h + 1}",
                           key="focus_heads")  # fmt: skip
    title = f"{KIND_TITLES[kind]}, layer {layer + 1}" + ("" if query is None else f": attention of “{queries[query]}”")
    lines = plot_attention.token_lines(maps.weights(kind)[layer], queries, keys, heads=heads or None,
                                       query_index=query, title=title)  # fmt: skip
    show_figure(lines, key="focus",
                filename=figure_name(maps, kind, layer, None).replace("-headavg", "-token-lines"))  # fmt: skip


def bertviz_panel(maps: AttentionMaps) -> None:
    left, right = st.columns(2)
    view = left.radio("View", BERTVIZ_VIEWS, key="bertviz_view", horizontal=True)
    kind = right.selectbox("Attention", ["all", *KINDS], key="bertviz_kind",
                           format_func=lambda k: "all three" if k == "all" else KIND_LABELS[k])  # fmt: skip
    selected = None if kind == "all" else kind
    if view == "head view":
        document = bertviz_view.head_view_html(maps, selected)
    else:
        document = bertviz_view.model_view_html(maps, selected)
    st.iframe(document, height=bertviz_view.frame_height(maps, view.split()[0], selected))
    st.download_button(
        "Download this view (standalone HTML, works offline)", document,
        file_name=bertviz_view.standalone_filename(selected, view.split()[0]), mime="text/html",
    )  # fmt: skip
    st.caption("bertviz by Jesse Vig; its scripts and libraries are served with the page, nothing is fetched online.")
