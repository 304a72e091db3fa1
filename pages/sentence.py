"""The visitor's sentence: the one every sentence page opens on, which follows them from page to page (typed on
one page, it is there on the next; a link or a lesson's step that brings another says so), and the box it is typed
in. Light to import: the main page draws its sentence box with it while the model code still loads."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.i18n import escaped, t
from transformer.features.lessons import DEFAULT_SENTENCE

VISITOR_SENTENCE = "_visitor_sentence"  # the sentence the visitor last typed or opened, on any page
BOX = "_sentence_box"  # the key of the sentence box the page of this run follows with (the lesson bar reads it)
# The page a lesson was left on keeps the lesson's sentence while the visitor stays there (pages.lesson_bar):
# {"page", "key", "sentence", "shown": its own controls as left, "before": their values before the lesson}.
HELD = "_sentence_held"


def follow_sentence(key: str) -> None:
    """Before a page draws its sentence box (control ``key``): the sentence follows the visitor from page to page.
    The box shows the sentence they last typed on any page (or opened by a link or a lesson's step), unless they
    have just typed into this box or this visit's link names the page's own, which then becomes theirs. Where the
    link's sentence replaces the visitor's, the page says so and offers theirs back (:func:`linked_sentence_note`)."""
    shown = f"_sentence_shown_{key}"
    current = st.session_state.get(key)
    st.session_state[BOX] = key
    held = st.session_state.get(HELD)
    if held is not None and held["key"] == key:
        if current == held["sentence"]:  # a lesson was left here: its sentence stays while the visitor does
            st.session_state[shown] = current
            return
        del st.session_state[HELD]  # typed over (or linked): the sentence in the box is theirs, as ever
    latest = st.session_state.get(VISITOR_SENTENCE)
    typed = shown in st.session_state and current is not None and current != st.session_state[shown]
    if url_state.linked(key) and current is not None:
        if latest and latest != current:
            st.session_state[f"_sentence_replaced_{key}"] = latest
        latest = current
    elif typed or (latest is None and current is not None):
        latest = current  # an emptied box stays empty: the page asks for a sentence
    if latest is None:
        latest = DEFAULT_SENTENCE
    if current != latest:
        url_state.assign({key: latest})
    st.session_state[VISITOR_SENTENCE] = st.session_state[shown] = latest


def linked_sentence_note(key: str) -> None:
    """Under a sentence box whose link (or lesson step) replaced the visitor's own sentence: say so, with a button
    that brings theirs back (on this page and every other)."""
    replaced = st.session_state.get(f"_sentence_replaced_{key}")
    if not replaced or st.session_state.get(key) == replaced:
        st.session_state.pop(f"_sentence_replaced_{key}", None)
        return
    left, right = st.columns([5, 1], vertical_alignment="center")
    left.caption(t("common.linked_sentence", yours=escaped(replaced)))

    def use_mine() -> None:
        st.session_state[key] = replaced
        st.session_state.pop(f"_sentence_replaced_{key}", None)

    right.button(t("common.use_my_sentence"), key=f"_use_mine_{key}", on_click=use_mine, type="tertiary")


def sentence_input(label: str, key: str, when_empty: str) -> str | None:
    """A one-line sentence box (at most 2,000 characters) and its text, stripped; when there is none, ``when_empty``
    says what to type and None comes back (``sentence_input(…) or leave_page()`` ends the page there)."""
    text = st.text_input(label, key=key, max_chars=2000).strip()
    if not text:
        st.info(when_empty)
        return None
    return text
