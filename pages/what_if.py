"""What if: switch heads off, rank them, trace attention through the layers, open up the beam search, score your
own translation, and compare two checkpoints or two sentences — each on the loaded model and the chosen sentence.

- *Switch heads off*: any set of heads (output zeroed before Wᴼ, Michel et al. 2019) → the new translation beside
  the original with the differences marked, and one head's attention with and without them
  (:mod:`transformer.analysis.ablation`).
- *Head importance*: BLEU/chrF lost when each head alone is off, Michel et al.'s gradient proxy, and BLEU as the k
  least important heads go together; stored beside the checkpoint by ``python -m transformer.importance --save``,
  or measured here on a few dev sentences.
- *Rollout and flow*: Abnar & Zuidema's (2020) attention rollout and flow for the encoder, and a rollout through
  cross-attention to the source words, beside raw attention (:mod:`transformer.analysis.rollout`).
- *Beam search*: the search's tree, its n-best list, and each token's probability with the alternatives
  (:mod:`transformer.analysis.beam`).
- *Forced decoding*: a given German sentence scored teacher-forced beside the model's own
  (:mod:`transformer.analysis.forced`).
- *Side by side*: two checkpoints (a training-step snapshot is a checkpoint folder too) on one sentence, or two
  sentences on one checkpoint, the same view on both sides and their difference where the shapes match.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import numpy as np
import streamlit as st

from pages import url_state
from pages.common import (
    available_checkpoints,
    get_checkpoint,
    page_checkpoint,
    save_page,
    show_figure,
    stored_heads,
)
from pages.explore import (
    DEFAULT_SENTENCE,
    MAX_SOURCE_TOKENS,
    cached_translation,
    current_options,
    matrix_csv,
    sentence_slug,
)
from pages.i18n import decoding_label, language, sample_label, t
from pages.page_slots import called_outside_the_slot
from pages.url_state import Field
from transformer.analysis import ablation, precompute, rollout
from transformer.analysis.attention import KINDS, AttentionMaps, Translation
from transformer.analysis.beam import BeamTree, explore_beam
from transformer.analysis.compare import difference, same_tokens
from transformer.analysis.forced import ForcedDecoding, Scored, force, reference_for, score_output
from transformer.checkpoint import REPOSITORY_CHECKPOINTS, CheckpointError, LoadedCheckpoint
from transformer.data import DATA_ROOT, read_parallel
from transformer.decode import DecodingOptions
from transformer.plots import attention as plot_attention
from transformer.plots import whatif as plot_whatif
from transformer.serving.translator import scratch_model

st.set_page_config(page_title=t("whatif.page_title"), page_icon="🧪", layout="wide")

TABS = ("ablate", "importance", "rollout", "beam", "forced", "compare")
TAB_KEY = "wi_tab_widget"
MEASURES = ("bleu_drop", "chrf_drop", "gradient")
MODES = ("checkpoints", "sentences")
IMPORTANCE_SAMPLE = (5, 50)  # dev sentences the page may measure on (every head: one search of them each)
DEV = DATA_ROOT / "dev" / "newstest2013"
VIEW_PREFIXES = ("", "beam_", "forced_", "compare_")
FIELDS = {
    "wi_text": Field(None, url_state.text(2000)),
    "wi_tab": Field(TABS[0], url_state.choice(TABS)),
    **{f"wi_off_{kind}": Field([], url_state.integers(0, 4095), url_state.dump_integers) for kind in KINDS},
    # The view (kind, 1-based layer and head) of the ablation, beam, forced-decoding and side-by-side tabs; without
    # a link's choice, the loaded model's clearest head (head_pickers).
    **{
        f"wi_{prefix}{name}": field
        for prefix in VIEW_PREFIXES
        for name, field in (
            ("kind", Field(None, url_state.choice(KINDS))),
            ("layer", Field(None, url_state.integer(1, 64))),
            ("head", Field(None, url_state.integer(1, 64))),
        )
    },
    "wi_measure": Field(MEASURES[0], url_state.choice(MEASURES)),
    "wi_sample": Field(10, url_state.integer(*IMPORTANCE_SAMPLE)),
    "wi_k": Field(0, url_state.integer(0, 4096)),
    "wi_residual": Field(0.5, url_state.number(0.0, 0.9)),
    "wi_roll_layer": Field(6, url_state.integer(1, 64)),
    "wi_flow": Field(False, url_state.flag, url_state.dump_flag),
    "wi_hypothesis": Field(0, url_state.integer(0, 64)),
    "wi_given": Field("", url_state.text(2000)),
    "wi_mode": Field(MODES[0], url_state.choice(MODES)),
    "wi_other": Field(None),
    "wi_other_path": Field("", url_state.text(1000)),
    "wi_other_text": Field("The Law will never be perfect, but its application should be just.", url_state.text(2000)),
}


# ------------------------------------------------------------------------------------------------ cached work
@st.cache_data(max_entries=32, show_spinner=False)
def cached_ablation(checkpoint: str, text: str, off: tuple, options: DecodingOptions, _loaded) -> Translation:
    with scratch_model(_loaded) as model:  # switching heads off changes a model: never the one all sessions share
        return ablation.translate_ablated(model, _loaded.tokenizer, text, list(off), options, MAX_SOURCE_TOKENS)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_beam(checkpoint: str, text: str, options: DecodingOptions, _loaded) -> BeamTree:
    return explore_beam(_loaded.model, _loaded.tokenizer, text, options, MAX_SOURCE_TOKENS)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_score(checkpoint: str, source_ids: tuple, output_ids: tuple, _loaded) -> Scored:
    """One hypothesis's attention and per-token probabilities, from one teacher-forced pass."""
    return score_output(_loaded.model, _loaded.tokenizer, list(source_ids), list(output_ids), "")


@st.cache_data(max_entries=16, show_spinner=False)
def cached_force(checkpoint: str, text: str, given: str, options: DecodingOptions, _translation, _loaded):
    return force(_loaded.model, _loaded.tokenizer, _translation, given)


# Minutes of model work: outside the page slots, so that other pages and translation batches never wait for it.
@called_outside_the_slot
@st.cache_data(max_entries=8, show_spinner=False)
def cached_importance(checkpoint: str, sample: int, with_ablation: bool, _loaded) -> dict:
    pairs = read_parallel(f"{DEV}.en", f"{DEV}.de")[:sample]
    with scratch_model(_loaded) as model:
        result = ablation.measure_importance(model, _loaded.tokenizer, pairs, ablation=with_ablation)
    return {**result, "source": f"{DEV.name}, first {sample} pairs"}


@st.cache_data(max_entries=16, show_spinner=False)
def cached_flow(checkpoint: str, text: str, residual: float, layer: int, _weights: np.ndarray) -> np.ndarray:
    return rollout.attention_flow(_weights, residual, layer)


# ------------------------------------------------------------------------------------------------ helpers
def kind_names() -> dict[str, str]:
    return {kind: t(f"kind.{kind}") for kind in KINDS}


def layers_of(loaded: LoadedCheckpoint, kind: str) -> int:
    return loaded.config.encoder_layers if kind == "encoder" else loaded.config.decoder_layers


def heads_off(loaded: LoadedCheckpoint) -> list[ablation.Head]:
    """The heads chosen on the ablation tab, as (kind, layer, head), 0-based."""
    heads = loaded.config.num_heads
    return [(kind, index // heads, index % heads) for kind in KINDS for index in st.session_state[f"wi_off_{kind}"]]


def set_heads_off(heads: list[ablation.Head], num_heads: int) -> None:
    for kind in KINDS:
        st.session_state[f"wi_off_{kind}"] = sorted(layer * num_heads + head for k, layer, head in heads if k == kind)
    st.session_state["wi_tab"] = "ablate"


def translation_line(label: str, text: str) -> None:
    st.markdown(f"**{html.escape(label)}**", unsafe_allow_html=True)
    st.markdown(f'<div style="font-size:1.25rem;font-weight:600">{html.escape(text) or "∅"}</div>',
                unsafe_allow_html=True)  # fmt: skip


def opening_head(loaded: LoadedCheckpoint) -> tuple[str, int, int]:
    """The loaded model's clearest head (as the main page opens on), else cross-attention layer 1, head 1."""
    stored = stored_heads(loaded)
    return ("cross", 0, 0) if stored is None else precompute.default_head(stored.tables)


def head_pickers(loaded: LoadedCheckpoint, prefix: str = "wi_") -> tuple[str, int, int]:
    """Kind, layer and head of the view shown on both sides (0-based layer and head); they open on the model's
    clearest head."""
    if f"{prefix}kind" not in st.session_state:
        kind, layer, head = opening_head(loaded)
        st.session_state[f"{prefix}kind"] = kind
        st.session_state.setdefault(f"{prefix}layer", layer + 1)
        st.session_state.setdefault(f"{prefix}head", head + 1)
    kind_column, layer_column, head_column = st.columns([3, 1, 1], vertical_alignment="bottom")
    kind = kind_column.radio(t("whatif.attention"), KINDS, key=f"{prefix}kind", format_func=kind_names().get,
                             horizontal=True)  # fmt: skip
    layers, heads = layers_of(loaded, kind), loaded.config.num_heads
    url_state.ensure(f"{prefix}layer", 1, lambda value: 1 <= int(value) <= layers)
    url_state.ensure(f"{prefix}head", 1, lambda value: 1 <= int(value) <= heads)
    layer = layer_column.selectbox(t("whatif.layer"), range(1, layers + 1), key=f"{prefix}layer")
    head = head_column.selectbox(t("whatif.head"), range(1, heads + 1), key=f"{prefix}head")
    return kind, layer - 1, head - 1


def heatmap(maps: AttentionMaps, kind: str, layer: int | None, head: int | None, title: str, key: str) -> None:
    queries, keys = maps.tokens(kind)
    show_figure(plot_attention.attention_heatmap(maps.matrix(kind, layer, head), queries, keys, title,
                                                 causal=kind == "decoder", language=language()), key=key)  # fmt: skip


def download_json(name: str, value: dict) -> None:
    """The tab's numbers as a JSON download (the figures download with their camera button)."""

    def document() -> str:  # made when the button is pressed, not at every run of the page
        return json.dumps(value, ensure_ascii=False, indent=1, default=float)

    st.download_button(t("whatif.download_json"), document, file_name=file_name(name.removeprefix("wi_"), "json"),
                       mime="application/json", key=f"{name}_download")  # fmt: skip


def file_name(what: str, extension: str) -> str:
    """A download's name after the page's sentence and what the file holds ("the-children-are-…-rollout.npz")."""
    return f"{sentence_slug(st.session_state.get('wi_text') or '')}-{what}.{extension}"


def describe(kind: str, layer: int, head: int) -> str:
    """A chart's title: the kind's short name (no English gloss), so that it fits a half-width chart in Korean."""
    return t("whatif.view", kind=t(f"kind_title.{kind}"), layer=layer + 1, head=head + 1)


def comparison_checkpoints(loaded: LoadedCheckpoint) -> list[str]:
    """What the side-by-side tab offers beside the loaded checkpoint: the app's checkpoints (the loaded one last)
    and, when the loaded checkpoint lies in a training run's folder, that run's kept checkpoints and snapshots."""
    names = [name for name in available_checkpoints() if name not in (loaded.path.name, str(loaded.path))]
    if loaded.path.parent.name in ("checkpoints", "snapshots"):
        run = loaded.path.parent.parent
        steps = [*sorted((run / "snapshots").glob("step-*")), *sorted((run / "checkpoints").glob("step-*"))]
        names += [shown_path(path) for path in steps if path != loaded.path and (path / "config.json").is_file()]
    return [*names, shown_path(loaded.path)]


def shown_path(path: Path) -> str:
    """How a checkpoint folder is named in the choice and the page's link: by name when it is one of the app's
    checkpoints, else relative to the server's folder where it lies below it; never the server's absolute folders
    when it can be helped (a shared link would carry them)."""
    path = Path(path)
    if path.parent.resolve() == REPOSITORY_CHECKPOINTS.resolve():
        return path.name
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------------------------ tabs
def ablate_tab(loaded: LoadedCheckpoint, text: str, translation: Translation, options: DecodingOptions) -> None:
    st.caption(t("whatif.ablate_intro"))
    config = loaded.config
    names = {}
    for kind in KINDS:
        for layer in range(layers_of(loaded, kind)):
            for head in range(config.num_heads):
                names[(kind, layer * config.num_heads + head)] = t("whatif.head_name", layer=layer + 1, head=head + 1)
    columns = st.columns(3)
    for column, kind in zip(columns, KINDS, strict=True):
        count = layers_of(loaded, kind) * config.num_heads
        url_state.ensure(f"wi_off_{kind}", [], url_state.indices_below(count))
        column.multiselect(t("whatif.off", kind=t(f"kind.{kind}")), list(range(count)), key=f"wi_off_{kind}",
                           format_func=lambda i, kind=kind: names[(kind, i)],
                           placeholder=t("whatif.none_off"))  # fmt: skip
        every = [(kind, layer, head) for layer in range(layers_of(loaded, kind)) for head in range(config.num_heads)]
        column.button(t("whatif.all_off", kind=t(f"kind.{kind}")), key=f"wi_all_{kind}",
                      on_click=set_heads_off, args=([*[h for h in heads_off(loaded) if h[0] != kind], *every],
                                                    config.num_heads))  # fmt: skip
    off = heads_off(loaded)
    st.button(t("whatif.clear"), on_click=set_heads_off, args=([], config.num_heads), disabled=not off)
    with st.spinner(t("whatif.translating")):
        ablated = cached_ablation(str(loaded.path), text, tuple(off), options, loaded)
    left, right = st.columns(2)
    with left:
        translation_line(t("whatif.original"), translation.translation)
    with right:
        st.markdown(f"**{html.escape(t('whatif.ablated', count=len(off)))}**")
        titles = {"removed": t("whatif.diff_removed"), "added": t("whatif.diff_added")}
        segments = ablation.word_diff(translation.translation, ablated.translation)
        st.markdown(plot_whatif.diff_html(segments, titles), unsafe_allow_html=True)
    if off and ablated.translation == translation.translation:
        st.caption(t("whatif.unchanged"))
    kind, layer, head = head_pickers(loaded)
    state = t("whatif.this_head_off") if (kind, layer, head) in off else ""
    left, right = st.columns(2)
    with left:
        heatmap(translation.maps, kind, layer, head, describe(kind, layer, head), "wi_ablate_before")
    with right:
        heatmap(ablated.maps, kind, layer, head, f"{describe(kind, layer, head)} {state}".strip(), "wi_ablate_after")
    st.caption(t("whatif.ablate_note"))
    download_json("wi_ablation", {
        "sentence": text, "heads_off": [[kind, layer + 1, head + 1] for kind, layer, head in off],
        "translation": translation.translation, "ablated": ablated.translation,
        "diff": ablation.word_diff(translation.translation, ablated.translation)})  # fmt: skip


def importance_tab(loaded: LoadedCheckpoint) -> None:
    st.caption(t("whatif.importance_intro"))
    stored = ablation.read_importance(loaded)
    if stored is None:
        st.info(t("whatif.no_stored_importance", folder=loaded.path.name))
        left, right = st.columns([2, 1], vertical_alignment="bottom")
        sample = left.slider(t("whatif.sample"), *IMPORTANCE_SAMPLE, key="wi_sample")
        measure_all = right.button(t("whatif.measure"), help=t("whatif.measure_help"))
        if not DEV.with_suffix(".en").is_file():
            st.warning(t("whatif.no_dev", path=str(DEV)))
            return
        with_ablation = measure_all or st.session_state.get(f"_wi_measured_{sample}", False)
        if measure_all:
            st.session_state[f"_wi_measured_{sample}"] = True
            st.session_state["wi_measure"] = "bleu_drop"  # what was just measured
        with st.spinner(t("whatif.measuring")):
            result = cached_importance(str(loaded.path), sample, with_ablation, loaded)
    else:
        result = stored
    source = sample_label(result.get("source", ""))
    st.caption(t("whatif.importance_measured", sentences=result["sentences"], source=source, bleu=result["bleu"],
                 chrf=result["chrf"], decoding=decoding_label(result.get("decoding", ""))))  # fmt: skip
    has_ablation = result.get("ranked_by") == "bleu_drop"
    measures = [m for m in MEASURES if has_ablation or m == "gradient"]
    url_state.ensure("wi_measure", measures[0], measures.__contains__)
    measure_names = {m: t(f"whatif.measure_{m}") for m in measures}
    measure = st.radio(t("whatif.measure_by"), measures, key="wi_measure", format_func=measure_names.get,
                       horizontal=True)  # fmt: skip
    for kind in KINDS:  # one under another: three across left each head's number unreadably small at 1280 px
        show_figure(plot_attention.score_heatmap(np.asarray(result[measure][kind], dtype=float),
                                                 f"{t(f'kind.{kind}')}: {measure_names[measure]}",
                                                 fmt=".2f" if measure != "gradient" else ".1f", language=language()),
                    key=f"wi_importance_{kind}")  # fmt: skip
    rows = sorted(
        ({"kind": t(f"kind.{kind}"), "layer": layer + 1, "head": head + 1,
          **{measure_names.get(m, m): result[m][kind][layer][head] for m in measures}}
         for kind in KINDS for layer in range(len(result[measure][kind]))
         for head in range(len(result[measure][kind][layer]))),
        key=lambda row: -row[measure_names[measure]],
    )  # fmt: skip
    with st.expander(t("whatif.table"), expanded=False):
        labels = {"kind": t("whatif.attention"), "layer": t("whatif.layer"), "head": t("whatif.head")}
        st.dataframe(rows, hide_index=True, width="stretch", column_config=labels)
    total = len(result["ranked"])
    show_figure(plot_whatif.prune_curve(result["prune"], result["bleu"], total, language()), key="wi_prune")
    # From the curve itself (stored files written before this rule hold the largest count within 1 BLEU instead).
    st.caption(t("whatif.within", count=ablation.heads_off_within(result["prune"], result["bleu"]), total=total))
    k = st.slider(t("whatif.k"), 0, total, key="wi_k")
    chosen = [tuple(head) for head in result["ranked"][:k]]
    st.button(t("whatif.switch_k", k=k), on_click=set_heads_off, args=(chosen, loaded.config.num_heads),
              disabled=k == 0, help=t("whatif.switch_k_help"))  # fmt: skip
    download_json("wi_importance", {key: value for key, value in result.items() if key != "fingerprint"})


def rollout_tab(loaded: LoadedCheckpoint, text: str, translation: Translation) -> None:
    st.caption(t("whatif.rollout_intro"))
    maps = translation.maps
    layers = maps.num_layers
    left, middle, right = st.columns([2, 2, 1], vertical_alignment="bottom")
    url_state.ensure("wi_roll_layer", layers, lambda value: 1 <= int(value) <= layers)
    layer = left.slider(t("whatif.up_to_layer"), 1, layers, key="wi_roll_layer") - 1
    residual = middle.slider(t("whatif.residual"), 0.0, 0.9, step=0.1, key="wi_residual",
                             help=t("whatif.residual_help"))  # fmt: skip
    short = len(maps.source_tokens) <= rollout.MAX_FLOW_TOKENS
    flow = right.toggle(t("whatif.flow"), key="wi_flow", disabled=not short,
                        help=t("whatif.flow_help", most=rollout.MAX_FLOW_TOKENS))  # fmt: skip
    tokens = maps.source_tokens
    st.subheader(t("whatif.encoder_rollout"))
    columns = st.columns(2)  # two across, flow below: three across left each map too narrow to read at 1280 px
    with columns[0]:
        heatmap(maps, "encoder", layer, None, t("whatif.raw", layer=layer + 1), "wi_raw_encoder")
    rolled = rollout.attention_rollout(maps.encoder, residual)[layer]
    with columns[1]:
        show_figure(plot_attention.attention_heatmap(rolled, tokens, tokens, t("whatif.rollout", layer=layer + 1),
                                                     language=language()), key="wi_rollout")  # fmt: skip
    if flow and short:
        with st.spinner(t("whatif.flowing")):
            flowed = cached_flow(str(loaded.path), text, residual, layer, maps.encoder)
        with st.columns(2)[0]:
            title = t("whatif.flow_title", layer=layer + 1)
            show_figure(
                plot_attention.attention_heatmap(flowed, tokens, tokens, title, language=language()), key="wi_flow_map"
            )
    st.subheader(t("whatif.cross_rollout"))
    through = rollout.cross_rollout(maps.encoder, maps.decoder, maps.cross, residual)
    share = through["source_share"]
    normalised = through["source"] / np.where(share > 0, share, 1.0)[:, None]
    left, right = st.columns(2)
    with left:
        heatmap(maps, "cross", None, None, t("whatif.raw_cross"), "wi_raw_cross")
    with right:
        show_figure(plot_attention.attention_heatmap(normalised, maps.target_tokens, tokens,
                                                     t("whatif.cross_rollout_title"), language=language()),
                    key="wi_cross_rollout")  # fmt: skip
    st.caption(t("whatif.source_share", low=float(share.min()), high=float(share.max())))
    arrays = {"source_tokens": np.array(tokens), "target_tokens": np.array(maps.target_tokens),
              "encoder_rollout": rollout.attention_rollout(maps.encoder, residual), "cross_rollout": through["source"],
              "source_share": share, "residual": np.array(residual)}  # fmt: skip
    if flow and short:
        arrays["encoder_flow"] = flowed

    def archive() -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        return buffer.getvalue()

    st.download_button(t("whatif.download_npz"), archive, file_name=file_name("rollout", "npz"),
                       mime="application/octet-stream", key="wi_rollout_download")  # fmt: skip


def beam_tab(loaded: LoadedCheckpoint, text: str, options: DecodingOptions) -> None:
    st.caption(t("whatif.beam_intro", decoding=decoding_label(options)))
    with st.spinner(t("whatif.searching")):
        tree = cached_beam(str(loaded.path), text, options, loaded)
    finished = tree.finished()
    if not finished:
        st.warning(t("whatif.no_hypothesis"))
        return
    tokenizer = loaded.tokenizer
    labels = [tokenizer.decode(tree.tokens(node.id)) or "∅" for node in finished]
    url_state.ensure("wi_hypothesis", 0, lambda value: 0 <= int(value) < len(finished))
    rows = [{"#": i + 1, t("whatif.hypothesis"): label, t("whatif.log_prob"): round(node.log_prob, 3),
             t("whatif.score"): round(node.score, 3), t("whatif.length"): node.step}
            for i, (node, label) in enumerate(zip(finished, labels, strict=True))]  # fmt: skip
    st.dataframe(rows, hide_index=True, width="stretch")
    chosen = st.selectbox(t("whatif.choose_hypothesis"), range(len(finished)), key="wi_hypothesis",
                          format_func=lambda i: f"{i + 1}. {labels[i]}")  # fmt: skip
    node = finished[chosen]
    pieces = tokenizer.pieces(each.token for each in tree.nodes)
    show_figure(plot_whatif.beam_tree(tree, pieces, node.id, language()), key="wi_tree")
    st.caption(t("whatif.tree_caption", hypotheses=len(tree.nodes) - 1,
                 pruned=sum(n.status == "pruned" for n in tree.nodes), steps=tree.steps()))  # fmt: skip
    output = tree.tokens(node.id)
    scored = cached_score(str(loaded.path), tuple(tree.source_ids), tuple(output), loaded)
    probabilities, maps = scored.tokens, scored.maps
    show_figure(plot_whatif.token_probabilities({labels[chosen]: probabilities}, t("whatif.per_token"), language()),
                key="wi_token_probabilities")  # fmt: skip
    table = [{t("whatif.position"): p.position + 1, t("whatif.piece"): p.piece,
              t("whatif.probability"): round(p.probability, 4), t("whatif.rank"): p.rank,
              t("whatif.alternatives"): ", ".join(f"{piece} {prob:.3f}" for piece, prob in p.top)}
             for p in probabilities]  # fmt: skip
    with st.expander(t("whatif.alternatives_table")):
        st.dataframe(table, hide_index=True, width="stretch")
    download_json("wi_beam", {
        "sentence": text, "decoding": options.describe(),
        "nodes": [{"id": n.id, "parent": n.parent, "step": n.step, "piece": pieces[n.id], "log_prob": n.log_prob,
                   "score": n.score, "status": n.status} for n in tree.nodes]})  # fmt: skip
    kind, layer, head = head_pickers(loaded, "wi_beam_")
    heatmap(maps, kind, layer, head, f"{describe(kind, layer, head)} — {chosen + 1}. {labels[chosen]}", "wi_beam_map")


def forced_tab(loaded: LoadedCheckpoint, text: str, translation: Translation, options: DecodingOptions) -> None:
    st.caption(t("whatif.forced_intro"))
    reference = reference_for(text)
    if reference is not None:
        st.button(t("whatif.use_reference", name=reference[0]), on_click=st.session_state.__setitem__,
                  args=("wi_given", reference[1]))  # fmt: skip
    given = st.text_area(t("whatif.given"), key="wi_given", height=68, max_chars=2000).strip()
    if not given:
        st.info(t("whatif.type_given"))
        return
    with st.spinner(t("whatif.scoring")):
        forced: ForcedDecoding = cached_force(str(loaded.path), text, given, options, translation, loaded)
    if forced.given.truncated:
        st.warning(t("whatif.given_truncated", tokens=len(forced.given.output_ids)))
    a, b, c, d = st.columns(4)
    a.metric(t("whatif.bleu_against"), f"{forced.bleu:.1f}")
    b.metric(t("whatif.chrf_against"), f"{forced.chrf:.1f}")
    c.metric(t("whatif.given_log_prob"), f"{forced.given.log_prob:.2f}",
             help=t("whatif.mean_per_token", mean=forced.given.mean_log_prob))  # fmt: skip
    d.metric(t("whatif.model_log_prob"), f"{forced.model.log_prob:.2f}",
             help=t("whatif.mean_per_token", mean=forced.model.mean_log_prob))  # fmt: skip
    series = {t("whatif.given_series"): forced.given.tokens, t("whatif.model_series"): forced.model.tokens}
    left, right = st.columns(2)
    for column, (name, tokens) in zip((left, right), series.items(), strict=True):
        with column:
            show_figure(plot_whatif.token_probabilities({name: tokens}, name, language()), key=f"wi_forced_{name}")
    download_json("wi_forced", {
        "sentence": text, "given": given, "translation": translation.translation, "bleu": forced.bleu,
        "chrf": forced.chrf, **{name: [{"piece": p.piece, "probability": p.probability, "rank": p.rank,
                                        "top": p.top} for p in scored.tokens]
                                for name, scored in (("given", forced.given), ("model", forced.model))}})  # fmt: skip
    kind, layer, head = head_pickers(loaded, "wi_forced_")
    left, right = st.columns(2)
    with left:
        heatmap(forced.given.maps, kind, layer, head, f"{describe(kind, layer, head)} — {t('whatif.given_series')}",
                "wi_forced_given_map")  # fmt: skip
    with right:
        heatmap(forced.model.maps, kind, layer, head, f"{describe(kind, layer, head)} — {t('whatif.model_series')}",
                "wi_forced_model_map")  # fmt: skip


def compare_tab(loaded: LoadedCheckpoint, text: str, translation: Translation, options: DecodingOptions) -> None:
    st.caption(t("whatif.compare_intro"))
    mode_names = {mode: t(f"whatif.mode_{mode}") for mode in MODES}
    mode = st.radio(t("whatif.compare"), MODES, key="wi_mode", format_func=mode_names.get, horizontal=True)
    if mode == "checkpoints":
        choices = comparison_checkpoints(loaded)
        url_state.ensure("wi_other", choices[0], choices.__contains__)
        left, right = st.columns(2)
        chosen = left.selectbox(t("whatif.other_checkpoint"), choices, key="wi_other",
                                help=t("whatif.other_help"))  # fmt: skip
        typed = right.text_input(t("whatif.other_folder"), key="wi_other_path", max_chars=1000,
                                 help=t("whatif.other_folder_help")).strip()  # fmt: skip
        other_name = typed or chosen
        try:
            other = get_checkpoint(other_name)
        except CheckpointError as error:
            st.error(t("whatif.other_failed", name=other_name, message=str(error).splitlines()[0]))
            return
        second = cached_translation(str(other.path), text, options, other)
        sides = ((loaded.path.name, translation), (other.path.name, second))
        compared = other
    else:
        other_text = st.text_input(t("whatif.other_sentence"), key="wi_other_text", max_chars=2000).strip()
        if not other_text:
            st.info(t("whatif.type_other"))
            return
        second = cached_translation(str(loaded.path), other_text, options, loaded)
        sides = ((text, translation), (other_text, second))
        compared = loaded
    kind, layer, head = head_pickers(loaded, "wi_compare_")
    if layer >= layers_of(compared, kind) or head >= compared.config.num_heads:
        st.warning(t("whatif.no_such_head"))
        return
    columns = st.columns(2)
    for index, (column, (name, side)) in enumerate(zip(columns, sides, strict=True)):
        with column:
            translation_line(name, side.translation)
            heatmap(side.maps, kind, layer, head, describe(kind, layer, head), f"wi_compare_{index}")
    delta = difference(translation.maps, second.maps, kind, layer, head)
    if delta is None:
        st.info(t("whatif.shapes_differ"))
        return
    queries, keys = translation.maps.tokens(kind)
    if not same_tokens(translation.maps, second.maps, kind):
        queries, keys = [str(i) for i in range(delta.shape[0])], [str(i) for i in range(delta.shape[1])]
        st.caption(t("whatif.positions_only"))
    show_figure(plot_whatif.difference_heatmap(delta, queries, keys, t("whatif.difference_title"), language()),
                key="wi_difference")  # fmt: skip
    st.caption(t("whatif.largest_difference", value=float(np.abs(delta).max())))
    st.download_button(t("whatif.download_csv"), lambda: matrix_csv(delta, queries, keys),
                       file_name=file_name("difference", "csv"), mime="text/csv",
                       key="wi_difference_download")  # fmt: skip


# ------------------------------------------------------------------------------------------------ page
loaded = page_checkpoint("what_if", FIELDS)
url_state.ensure("wi_text", st.session_state.get("text") or DEFAULT_SENTENCE)
st.title(t("whatif.page_title"))
st.caption(t("whatif.intro"))
text = st.text_input(t("whatif.sentence"), key="wi_text", max_chars=2000).strip()
if not text:
    st.info(t("whatif.type_sentence"))
    save_page(FIELDS)
    st.stop()
options = current_options()
translation = cached_translation(str(loaded.path), text, options, loaded)
st.markdown(t("whatif.translation", translation=translation.translation or "∅", decoding=decoding_label(options)))

renders = {
    "ablate": lambda: ablate_tab(loaded, text, translation, options),
    "importance": lambda: importance_tab(loaded),
    "rollout": lambda: rollout_tab(loaded, text, translation),
    "beam": lambda: beam_tab(loaded, text, options),
    "forced": lambda: forced_tab(loaded, text, translation, options),
    "compare": lambda: compare_tab(loaded, text, translation, options),
}
for name, tab in url_state.tabs("wi_tab", {tab: t(f"whatif.tab_{tab}") for tab in TABS}, TAB_KEY).items():
    if tab.open:
        with tab:
            renders[name]()
save_page(FIELDS)
