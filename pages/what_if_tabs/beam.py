"""*Beam search*: the search's tree, its n-best list, and each token's probability with the alternatives
(:mod:`transformer.analysis.beam`)."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.figures import show_figure
from pages.i18n import decoding_label, language, t
from pages.models import MAX_SOURCE_TOKENS
from pages.tabs import Tab
from pages.url_state import Field
from pages.what_if_tabs.shared import Case, cached_score, describe, download_json, head_pickers, heatmap, view_fields
from transformer.analysis.beam import BeamTree, explore_beam
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import readable_piece, readable_pieces
from transformer.plots import whatif as plot_whatif
from transformer.search.decode import DecodingOptions


@per_model(max_entries=16)
def cached_beam(loaded: LoadedCheckpoint, text: str, options: DecodingOptions) -> BeamTree:
    return explore_beam(loaded.model, loaded.tokenizer, text, options, MAX_SOURCE_TOKENS)


def render(case: Case) -> None:
    loaded, text, options = case.loaded, case.text, case.options
    st.caption(t("whatif.beam_intro", decoding=decoding_label(options)))
    with st.spinner(t("whatif.searching")):
        tree = cached_beam(loaded, text, options)
    finished = tree.finished()
    if not finished:
        st.warning(t("whatif.no_hypothesis"))
        return
    tokenizer = loaded.tokenizer
    labels = [tokenizer.decode(tree.tokens(node.id)) or "∅" for node in finished]
    url_state.ensure("wi_hypothesis", 0, lambda value: 0 <= int(value) < len(finished))
    rows = [
        {
            "#": i + 1,
            t("whatif.hypothesis"): label,
            t("whatif.log_prob"): round(node.log_prob, 3),
            t("whatif.score"): round(node.score, 3),
            t("whatif.length"): node.step,
        }
        for i, (node, label) in enumerate(zip(finished, labels, strict=True))
    ]
    st.dataframe(rows, hide_index=True, width="stretch")
    chosen = st.selectbox(
        t("whatif.choose_hypothesis"),
        range(len(finished)),
        key="wi_hypothesis",
        format_func=lambda i: f"{i + 1}. {labels[i]}",
    )
    node = finished[chosen]
    pieces = tokenizer.pieces(each.token for each in tree.nodes)
    show_figure(plot_whatif.beam_tree(tree, readable_pieces(pieces), node.id, language()), key="wi_tree")
    st.caption(
        t(
            "whatif.tree_caption",
            hypotheses=len(tree.nodes) - 1,
            pruned=sum(n.status == "pruned" for n in tree.nodes),
            steps=tree.steps(),
        )
    )
    output = tree.tokens(node.id)
    scored = cached_score(loaded, tuple(tree.source_ids), tuple(output))
    probabilities, maps = scored.tokens, scored.maps
    show_figure(
        plot_whatif.token_probabilities({labels[chosen]: probabilities}, t("whatif.per_token"), language()),
        key="wi_token_probabilities",
    )
    table = [
        {
            t("whatif.position"): p.position + 1,
            t("whatif.piece"): readable_piece(p.piece),
            t("whatif.probability"): round(p.probability, 4),
            t("whatif.rank"): p.rank,
            t("whatif.alternatives"): ", ".join(f"{readable_piece(piece)} {prob:.3f}" for piece, prob in p.top),
        }
        for p in probabilities
    ]
    with st.expander(t("whatif.alternatives_table")):
        st.dataframe(table, hide_index=True, width="stretch")
    download_json(
        "wi_beam",
        {
            "sentence": text,
            "decoding": options.describe(),
            "nodes": [
                {
                    "id": n.id,
                    "parent": n.parent,
                    "step": n.step,
                    "piece": pieces[n.id],
                    "log_prob": n.log_prob,
                    "score": n.score,
                    "status": n.status,
                }
                for n in tree.nodes
            ],
        },
    )
    kind, layer, head = head_pickers(loaded, "wi_beam_")
    heatmap(
        maps,
        kind,
        layer,
        head,
        f"{describe(kind, layer, head)} — {chosen + 1}. {labels[chosen]}",
        "wi_beam_map",
        atlas=True,
    )


TAB = Tab(
    "beam",
    "whatif.tab_beam",
    render,
    {**view_fields("beam_"), "wi_hypothesis": Field(0, url_state.integer(0, 64))},
)
