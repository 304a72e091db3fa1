"""Head atlas: every attention head of the model on one map, each measured against gold data beside a baseline that
needs no model (:mod:`transformer.analysis.atlas`), and a card per head: what it does, how much the translation needs
it, and the heads that behave like it. Reads the measurements stored beside the checkpoint (``atlas.json``, written
by ``python -m transformer atlas --save``); a checkpoint without them can be measured here on fewer sentences."""

from __future__ import annotations

import contextlib
import html

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.choices import keyed
from pages.common import leave_page, page
from pages.figures import show_figure
from pages.i18n import escaped, language, t
from pages.links import open_page
from pages.models import (
    CHECKPOINT_KEY,
    available_checkpoints,
    error_line,
    model_name,
    model_summary,
    open_checkpoint,
    stored_beside,
)
from pages.page_slots import called_outside_the_slot
from pages.url_state import Field
from transformer.analysis import atlas, atlas_index
from transformer.analysis.atlas_scores import AlignmentScore, RelationScore, choices_of, score_of, scores_of
from transformer.analysis.intervals import Interval
from transformer.formats.checkpoint import REPOSITORY_CHECKPOINTS, CheckpointError, LoadedCheckpoint
from transformer.formats.runs import portable_path
from transformer.plots import atlas as plot_atlas

st.set_page_config(page_title=t("atlas.title"), page_icon="🗺️", layout="wide")

HEAD_KEY = "atlas_head"
OTHER_KEY = "atlas_other"  # a second model whose atlas is drawn beside this one
FIELDS = {
    HEAD_KEY: Field(None, url_state.text(40)),
    "atlas_from": Field("it", url_state.text(60)),
    "atlas_to": Field("", url_state.text(60)),
    OTHER_KEY: Field("", url_state.text(300)),
}
SAMPLE = 150  # treebank pairs measured here when nothing is stored (the stored atlas uses all 1,000)


def head_id(record: dict) -> str:
    return f"{record['kind']}-{record['layer']}-{record['head']}"


# A minute or more of model work each: outside the page slots, so that other visitors' pages never wait for it.
@called_outside_the_slot
@per_model(max_entries=4)
def measured_here(loaded: LoadedCheckpoint) -> dict:
    return atlas.build(loaded, SAMPLE)


def load_atlas(loaded: LoadedCheckpoint, key: str = "atlas_measure") -> tuple[dict | None, bool]:
    """The stored atlas (and True); else, once the visitor asks, one measured here on :data:`SAMPLE` pairs
    (``key``: the button's, one per model on the page)."""
    found = stored_beside(loaded, atlas.ATLAS_FILE)
    if found is not None and found.get("version") == atlas.ATLAS_VERSION:
        return found, True
    asked = f"atlas_measure_{loaded.path}"
    name = loaded.path.name if loaded.path.parent == REPOSITORY_CHECKPOINTS else str(loaded.path)
    st.info(
        t("atlas.not_stored", command=escaped(f"python -m transformer atlas --checkpoint {name} --save", code=True))
    )
    if not atlas.ENGLISH_TREES.is_file() or not atlas.GERMAN_TREES.is_file():
        st.warning(t("atlas.no_data", folder=escaped(portable_path(str(atlas.SYNTAX_ROOT)))))
        return None, False
    if st.button(t("atlas.measure_here", sentences=SAMPLE), key=key) or st.session_state.get(asked):
        st.session_state[asked] = True
        with st.spinner(t("atlas.measuring", sentences=SAMPLE)):
            try:
                return measured_here(loaded), False
            except atlas.AtlasError as error:
                st.error(str(error))
                return None, False
    return None, False


@per_model(max_entries=4, resource=True)
def stored_index(loaded: LoadedCheckpoint, modified: float) -> atlas_index.Index | None:
    return atlas_index.load(loaded)


@called_outside_the_slot
@per_model(max_entries=4, resource=True)
def built_index(loaded: LoadedCheckpoint) -> atlas_index.Index:
    """Build the index once per server and checkpoint, and store it beside the checkpoint when the folder allows."""
    pairs, names = atlas_index.default_pairs(loaded.config.languages)
    index = atlas_index.build(loaded, pairs, names)
    with contextlib.suppress(OSError):  # a read-only folder: the index lives as long as the server
        atlas_index.save(loaded, index)
    return index


def sentence_index(loaded: LoadedCheckpoint, build: bool = False) -> atlas_index.Index | None:
    """The index of dev and test sentences: stored, built in this server, or (``build``) built now."""
    path = loaded.store / atlas_index.INDEX_FILE
    modified = path.stat().st_mtime if path.is_file() else 0.0
    found = stored_index(loaded, modified)
    if found is not None:
        return found
    if build or st.session_state.get(f"atlas_index_{loaded.path}"):
        st.session_state[f"atlas_index_{loaded.path}"] = True
        with st.spinner(t("atlas.building_index")):
            return built_index(loaded)
    return None


def marked(words: list[str], *positions: int) -> str:
    """The sentence as HTML with the words at ``positions`` in bold (every word escaped: it is user-visible data)."""
    return " ".join(f"<b>{html.escape(w)}</b>" if i in positions else html.escape(w) for i, w in enumerate(words))


def example_item(kind: str, words: list[str], key_words: list[str], query: int, key: int, weight: float) -> str:
    """One example as an HTML list item: the link, then its sentence(s) with both words in bold."""
    pair = f"{html.escape(words[query])} → {html.escape(key_words[key])} ({weight:.2f})"
    if kind == "cross":
        return f"<li>{pair}: {marked(words, query)} — {marked(key_words, key)}</li>"
    return f"<li>{pair}: {marked(words, query, key)}</li>"


def show_examples(items: list[str]) -> None:
    """Sentences are data, not the page's prose: shown as the translation is, in a ``translation`` block."""
    st.markdown(f'<ul class="translation">{"".join(items)}</ul>', unsafe_allow_html=True)


def where_else(loaded: LoadedCheckpoint, record: dict) -> None:
    """The sentences where this head's strongest link is strongest: from the index when there is one, else the
    examples stored with the atlas, and a way to build the index."""
    st.markdown(f"**{t('atlas.where_else')}**")
    kind = record["kind"]
    index = sentence_index(loaded)
    if index is None:
        stored_examples = record.get("examples") or []
        if stored_examples:
            show_examples(
                [
                    example_item(kind, e["words"], e.get("key_words", e["words"]), e["query"], e["key"], e["weight"])
                    for e in stored_examples
                ]
            )
        pairs, _ = atlas_index.default_pairs(loaded.config.languages)
        if not pairs:
            st.caption(t("atlas.no_index_data"))
            return
        st.caption(t("atlas.index_missing", sentences=len(pairs)))
        if st.button(t("atlas.build_index", sentences=len(pairs)), key="atlas_build_index"):
            index = sentence_index(loaded, build=True)
        if index is None:
            return
    items = []
    for found in atlas_index.strongest(index, kind, record["layer"] - 1, record["head"] - 1, top=5):
        words, key_words = index.words(kind, found["sentence"])
        items.append(example_item(kind, words, key_words, found["query"], found["key"], found["weight"]))
    show_examples(items)
    st.caption(t("atlas.index_caption", sentences=len(index.english), sources=escaped(", ".join(index.names))))


def linking_heads(loaded: LoadedCheckpoint, records: list[dict]) -> None:
    """Which heads link two words most often, over the index."""
    st.header(t("atlas.linking_title"))
    left, right = st.columns(2)
    first = left.text_input(t("atlas.from_word"), key="atlas_from", max_chars=60).strip()
    second = right.text_input(t("atlas.to_word"), key="atlas_to", max_chars=60, placeholder="animal").strip()
    if not first or not second:
        st.caption(t("atlas.linking_how"))
        return
    index = sentence_index(loaded)
    if index is None:
        st.info(t("atlas.linking_needs_index"))
        return
    found = atlas_index.heads_linking(index, first, second)
    if not found:
        st.info(t("atlas.linking_none", first=first, second=second))
        return
    by_id = {head_id(record): record for record in records}
    st.dataframe(
        {
            t("atlas.head"): [
                plot_atlas.head_name(by_id[f"{f['kind']}-{f['layer']}-{f['head']}"], language()) for f in found
            ],
            t("atlas.group_column"): [
                plot_atlas.group_name(by_id[f"{f['kind']}-{f['layer']}-{f['head']}"]["cluster"], language())
                for f in found
            ],
            t("atlas.links"): [f"{f['hits']} / {f['chances']}" for f in found],
            t("atlas.share"): [round(f["hits"] / f["chances"], 2) for f in found],
        },
        hide_index=True,
        width="stretch",
    )
    st.caption(t("atlas.linking_caption", first=first, second=second))


def select_clicked(records: list[dict]) -> None:
    """The map's click handler: the clicked point's record becomes the selected head."""
    points = st.session_state["atlas_map"].selection.points
    if points and isinstance(points[0].get("customdata"), int):
        st.session_state[HEAD_KEY] = head_id(records[points[0]["customdata"]])


def select(identifier: str) -> None:
    st.session_state[HEAD_KEY] = identifier


def best_line(record: dict, found: dict) -> str:
    """What the head does best against its baseline, in a sentence: on held-out sentences where measured."""
    if not record["scores"]:
        return t("atlas.no_score")
    best = score_of(record["scores"][0])
    if isinstance(best, AlignmentScore):
        difference = best.difference
        return t(
            "atlas.best_alignment",
            reading=best.reading,
            aer=best.aer,
            baseline=best.baseline,
            pairs=difference.items,
            low=difference.low,
            high=difference.high,
        )
    figures = {
        "relation": best.relation,
        "direction": t(f"atlas.{best.direction}"),
        "offset": offset_text(best.baseline_offset),
    }
    held = best.held_out
    if held is None:
        return t("atlas.best_syntax", accuracy=best.accuracy, baseline=best.baseline, **figures)
    margin = held.margin
    return t(
        "atlas.best_syntax_held_out",
        set=(found.get("held_out_treebanks") or {}).get(record["kind"], {}).get("name", ""),
        accuracy=held.accuracy,
        baseline=held.baseline,
        low=margin.low,
        high=margin.high,
        verdict=t("atlas.clears") if margin.above() else t("atlas.not_clear"),
        **figures,
    )


def interval_text(margin: Interval | None) -> str:
    return "" if margin is None else f"{margin.value:+.2f} [{margin.low:+.2f}, {margin.high:+.2f}]"


def offset_text(offset: int) -> str:
    """ "the word before", "3 words after"… in the reader's words."""
    side = "before" if offset < 0 else "after"
    return t(f"atlas.offset_{side}_one") if abs(offset) == 1 else t(f"atlas.offset_{side}", count=abs(offset))


def card(loaded: LoadedCheckpoint, found: dict, index: int, stored: bool) -> None:
    records = found["heads"]
    record = records[index]
    name = plot_atlas.head_name(record, language())
    st.header(f"{name} · {plot_atlas.group_name(record['cluster'], language())}")
    st.markdown(best_line(record, found))
    drop = record["importance_bleu_drop"]
    if drop is None:
        st.caption(t("atlas.importance_unmeasured"))
    else:
        st.markdown(t("atlas.importance", change=-drop))
    features = record["features"]
    columns = st.columns(len(atlas.FEATURES))
    for column, feature in zip(columns, atlas.FEATURES, strict=True):
        column.metric(
            t(f"atlas.feature_{feature}"), f"{features[feature]:.2f}", help=t(f"atlas.feature_{feature}_help")
        )
    if record["kind"] != "cross":
        rows = [score for score in scores_of(record)[:8] if isinstance(score, RelationScore)]
        held = [row.held_out for row in rows]
        st.dataframe(
            {
                t("atlas.relation"): [row.relation for row in rows],
                t("atlas.direction"): [t(f"atlas.{row.direction}") for row in rows],
                t("atlas.held_out_accuracy"): [h and h.accuracy for h in held],
                t("atlas.held_out_baseline"): [h and h.baseline for h in held],
                t("atlas.margin_interval"): [interval_text(h and h.margin) for h in held],
                t("atlas.accuracy"): [row.accuracy for row in rows],
                t("atlas.baseline"): [row.baseline for row in rows],
                t("atlas.offset"): [row.baseline_offset for row in rows],
                t("atlas.arcs"): [row.arcs for row in rows],
            },
            hide_index=True,
            width="stretch",
        )
    st.markdown(f"**{t('atlas.related')}**")
    by_id = {head_id(other): other for other in records}
    buttons = st.columns(len(record["related"]) or 1)
    for column, (kind, layer, head) in zip(buttons, record["related"], strict=False):
        other = by_id[f"{kind}-{layer}-{head}"]
        column.button(
            plot_atlas.head_name(other, language()),
            key=f"atlas_related_{kind}_{layer}_{head}",
            help=plot_atlas.group_name(other["cluster"], language()),
            on_click=select,
            args=(head_id(other),),
        )
    if st.button(t("atlas.open_in_explore"), icon=":material/translate:", key="atlas_to_explore"):
        open_page(
            None, {"view": "Heads", "kind": record["kind"], "layer": str(record["layer"]), "head": str(record["head"])}
        )
    if not stored:
        st.caption(t("atlas.measured_here_note", sentences=SAMPLE))
    where_else(loaded, record)


def other_model(loaded: LoadedCheckpoint) -> tuple[LoadedCheckpoint, dict] | None:
    """A second model chosen to compare (``atlas_other``), and its atlas when there is one (stored, or measured here
    on request); None when none is chosen or it cannot open (said on the page)."""
    current = st.session_state.get(CHECKPOINT_KEY) or available_checkpoints()[0]
    options = ["", *(name for name in available_checkpoints() if name != current)]
    if st.session_state.get(OTHER_KEY) not in options:
        st.session_state[OTHER_KEY] = ""
    choice = keyed(
        st.selectbox,
        t("atlas.compare_with"),
        options,
        key=OTHER_KEY,
        format_func=lambda name: name or t("atlas.compare_none"),
        help=t("atlas.compare_help"),
    )
    if not choice:
        return None
    try:
        other = open_checkpoint(choice)
    except CheckpointError as error:
        st.error(t("common.cannot_load", name=escaped(choice), message=error_line(error)))
        return None
    st.caption(model_summary(other))
    found, _ = load_atlas(other, key="atlas_measure_other")
    return None if found is None else (other, found)


def held_out_table(found: dict) -> None:
    """Each relation's best head and the fixed offset beside it, chosen on PUD (seen in training) and scored on
    held-out sentences with the 95% interval of the head's margin: the figure to trust."""
    treebanks = found.get("held_out_treebanks")
    if not treebanks:
        st.caption(t("atlas.no_held_out", folder=escaped(portable_path(str(atlas.SYNTAX_ROOT)))))
    for kind in ("encoder", "decoder"):
        rows = choices_of(found, kind)
        if not rows:
            continue
        table: dict[str, list] = {
            key: []
            for key in (
                t("atlas.relation"),
                t("atlas.best_head"),
                t("atlas.held_out_accuracy"),
                t("atlas.held_out_baseline"),
                t("atlas.margin_interval"),
                t("atlas.accuracy"),
                t("atlas.baseline"),
            )
        }
        scored = []
        for chosen in rows:
            held = chosen.held_out
            table[t("atlas.relation")].append(chosen.relation)
            table[t("atlas.best_head")].append(f"L{chosen.layer}H{chosen.head}")
            table[t("atlas.held_out_accuracy")].append(held and held.accuracy)
            table[t("atlas.held_out_baseline")].append(held and held.baseline)
            table[t("atlas.margin_interval")].append(interval_text(held and held.margin))
            table[t("atlas.accuracy")].append(chosen.accuracy)
            table[t("atlas.baseline")].append(chosen.baseline)
            if held:
                scored.append(held)
        if treebanks and scored:
            st.markdown(
                t(
                    f"atlas.held_out_{kind}",
                    set=escaped(treebanks[kind]["name"]),
                    sentences=treebanks[kind]["sentences"] - treebanks[kind]["skipped"],
                    relations=len(scored),
                    accuracy=sum(h.accuracy for h in scored) / len(scored),
                    baseline=sum(h.baseline for h in scored) / len(scored),
                    beaten=sum(h.margin.above() for h in scored),
                )
            )
        st.dataframe(table, hide_index=True, width="stretch")


with page("atlas", FIELDS) as loaded:
    st.title(t("atlas.title"))
    st.markdown(t("atlas.intro"))
    found, stored = load_atlas(loaded)
    if found is None:
        leave_page()
    records = found["heads"]
    ids = [head_id(record) for record in records]
    most_needed = max(range(len(records)), key=lambda i: records[i]["importance_bleu_drop"] or 0.0)
    url_state.ensure(HEAD_KEY, ids[most_needed], ids.__contains__)
    treebank = found["treebank"]
    st.caption(
        t(
            "atlas.measured_on",
            pairs=treebank["pairs"] - treebank["skipped"],
            english=escaped(treebank["english"]),
            german=escaped(treebank["german"]),
            gold=escaped(found["alignment_gold"]["name"]),
            aligned=found["alignment_gold"]["pairs"],
        )
    )
    selected = ids.index(st.session_state[HEAD_KEY])
    compared = other_model(loaded)
    beside = st.columns(2) if compared is not None else [st.container()]
    with beside[0]:
        show_figure(
            plot_atlas.atlas_map(records, selected, t("atlas.map_title"), language()),
            key="atlas_map",
            filename=f"head-atlas-{loaded.path.name}",
            on_select=lambda: select_clicked(records),
        )
    if compared is not None:
        other, other_found = compared
        other_records = other_found["heads"]
        other_ids = [head_id(record) for record in other_records]
        same_head = other_ids.index(ids[selected]) if ids[selected] in other_ids else None
        with beside[1]:
            show_figure(
                plot_atlas.atlas_map(
                    other_records, same_head, t("atlas.map_title_of", model=model_name(other)), language()
                ),
                key="atlas_map_other",
                filename=f"head-atlas-{model_name(other).replace('/', '-')}",
            )
    st.caption(t("atlas.map_caption"))
    names = {
        identifier: plot_atlas.head_name(record, language()) for identifier, record in zip(ids, records, strict=True)
    }
    keyed(st.selectbox, t("atlas.head"), ids, key=HEAD_KEY, format_func=names.get)
    card(loaded, found, ids.index(st.session_state[HEAD_KEY]), stored)
    linking_heads(loaded, records)
    with st.expander(t("atlas.held_out_title")):
        held_out_table(found)
