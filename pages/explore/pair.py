"""The *Word pair* tab of Translate and explore: which heads link two words of the visitor's own sentence? Every head
of every layer and attention kind that can attend between them, ranked by the weight between them
(:mod:`transformer.analysis.linking`), the strongest drawn, each with the way to its atlas card."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.explore.shared import Shown, show_head
from pages.figures import show_figure
from pages.i18n import escaped, language, t
from pages.links import atlas_button
from pages.tabs import Tab
from pages.url_state import Field
from transformer.analysis.linking import OUTPUT, SOURCE, Word, linking_heads, ordinary, words
from transformer.plots import head_scores as plot_head_scores

SHOWN = 12  # bars in the ranking
PRONOUNS = {"it", "its", "he", "his", "him", "she", "her", "they", "their", "them", "this", "that", "which", "who"}


def name(word: Word) -> str:
    """How a word is kept in the URL: ``source-3`` (1-based, as the app counts)."""
    return f"{word.side}-{word.index + 1}"


def parse(text: str) -> Word:
    side, _, number = text.partition("-")
    if side not in (SOURCE, OUTPUT) or not number.isdigit() or int(number) < 1:
        raise ValueError(text)
    return Word(side, int(number) - 1)


def opening_pair(maps, offered: list[Word], found: dict[str, list[str]]) -> tuple[Word, Word]:
    """A pronoun of the sentence (or its first word), and the word of the translation that attends to it most."""
    sources = [word for word in offered if word.side == SOURCE]
    pronouns = [word for word in sources if found[SOURCE][word.index].strip(".,;:!?").lower() in PRONOUNS]
    first = (pronouns or sources or offered)[0]
    outputs = [word for word in offered if word.side == OUTPUT]
    if first.side != SOURCE or not outputs:
        return first, next(word for word in offered if word != first)
    strongest = max(outputs, key=lambda word: np.mean([link.weight for link in linking_heads(maps, first, word)]))
    return first, strongest


def render(shown: Shown) -> None:
    maps = shown.translation.maps  # pieces and special tokens as the model saw them: merged into words here
    found = words(maps)
    offered = ordinary(maps)
    if len(offered) < 2:
        st.info(t("explore.pair_same"))
        return
    st.caption(t("explore.pair_intro"))
    options = [name(word) for word in offered]
    first, second = opening_pair(maps, offered, found)
    url_state.ensure("pair_first", name(first), options.__contains__)
    url_state.ensure("pair_second", name(second), options.__contains__)
    labels = {  # numbered: a word may come twice ("the … the")
        name(word): t(f"explore.pair_{word.side}", number=word.index + 1, word=found[word.side][word.index])
        for word in offered
    }
    left, right = st.columns(2)
    chosen = keyed(left.selectbox, t("explore.pair_from"), options, key="pair_first", format_func=labels.get)
    other = keyed(right.selectbox, t("explore.pair_to"), options, key="pair_second", format_func=labels.get)
    first, second = parse(chosen), parse(other)
    if first == second:
        st.info(t("explore.pair_same"))
        return
    links = linking_heads(maps, first, second)
    top = links[:SHOWN]
    head_labels = [
        t("explore.pair_label", kind=t(f"kind_short.{link.kind}"), layer=link.layer + 1, head=link.head + 1)
        for link in top
    ]
    title = t("explore.pair_title", first=found[first.side][first.index], second=found[second.side][second.index])
    show_figure(plot_head_scores.linking_heads(top, head_labels, title, language()), key="pair")
    best = top[0]
    st.caption(
        t("explore.pair_kind", kind=t(f"kind.{best.kind}"), shown=len(top), count=len(links))
        + " "
        + t(
            "explore.pair_top",
            head=escaped(head_labels[0]),
            weight=best.weight,
            attending=escaped(found[best.query.side][best.query.index]),
            attended=escaped(found[best.key.side][best.key.index]),
        )
    )
    show_head(shown.maps, best.kind, best.layer, best.head, key="pair_head")
    columns = st.columns(3)
    for column, link, label in zip(columns, top[1:4], head_labels[1:4], strict=False):
        atlas_button(link.kind, link.layer, link.head, key=f"pair_atlas_{name_of(link)}", label=label, where=column)


def name_of(link) -> str:
    return f"{link.kind}-{link.layer}-{link.head}"


TAB = Tab(
    "Word pair",
    "explore.view_pair",
    render,
    {
        "pair_first": Field(None, url_state.text(20)),
        "pair_second": Field(None, url_state.text(20)),
    },
)
