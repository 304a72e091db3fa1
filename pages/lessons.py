"""Lessons: the lessons in ``lessons/``, each with its steps as links, a button that starts it, and the message of a
lesson file that cannot be played. The lesson itself plays above every page (:mod:`pages.lesson_bar`)."""

from __future__ import annotations

import streamlit as st

from pages.common import page
from pages.i18n import language, t
from pages.lesson_bar import load_or_say, open_step, step_link
from transformer.features.lessons import available_lessons

st.set_page_config(page_title=t("lessons.title"), page_icon="🧑‍🏫", layout="wide")
with page("lessons"):
    st.title(t("lessons.title"))
    st.markdown(t("lessons.intro"))

    words = language()
    names = available_lessons()
    if not names:
        st.info(t("lessons.none"))
    for name in names:
        lesson = load_or_say(name)
        if lesson is None:
            continue
        with st.container(border=True):
            st.header(lesson.words("title", words))
            st.markdown(lesson.words("summary", words))
            if st.button(t("lessons.start"), key=f"lessons_start_{name}", type="primary", icon=":material/play_arrow:"):
                open_step(lesson, 1)
            with st.expander(t("lessons.steps", count=len(lesson.steps))):
                st.markdown(
                    "\n".join(
                        f"{number}. [{step.words('title', words)}]({step_link(name, number)})"
                        + (" ❓" if step.question else "")
                        for number, step in enumerate(lesson.steps, 1)
                    )
                )
    st.caption(t("lessons.write_your_own"))
