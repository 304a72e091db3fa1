"""The lesson player: while a lesson (:mod:`transformer.features.lessons`) is on, a bar above every page shows the
step's text, its question, and the way to the previous and next step.

A step opens its page as its link would (:func:`pages.url_state.open_link`): the controls the step names take its
values, the others their defaults, and the lesson and step stay in the URL of every page (``lesson=paper_tour&
lesson_step=3``), so every step is a link. A step with a question runs its page only once the class has answered
and revealed it. After the page has run, the bar checks the step against the controls the page declared, and names
the step of a lesson whose page has no such control or cannot read its value.
"""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.choices import keyed
from pages.i18n import escaped, language, t
from pages.navigation import app_pages, page_name
from transformer.features.lessons import Lesson, LessonError, available_lessons, read_lesson, unknown_controls

LESSON_PARAM = "lesson"  # in the URL
STEP_PARAM = "lesson_step"
ANSWER_PARAM = "lesson_answer"  # the choice picked for the step's question, 1-based (kept by a reload and a link)
PLAYING = "_lesson_playing"  # session: (lesson name, step number) or absent
REVEALED = "_lesson_revealed"  # session: the (lesson, step) pairs whose question was answered
BEFORE = "_lesson_before"  # session: every control's value as the visitor had it when the lesson started
LEFT = "_lesson_left"  # session: those values, from the moment the visitor leaves the lesson until they are back


@st.cache_data(show_spinner=False, ttl=5)
def load(name: str) -> Lesson:
    """A lesson of the lessons folder (re-read every few seconds, so that a teacher editing a file sees the change)."""
    return read_lesson(name)


def load_or_say(name: str) -> Lesson | None:
    """The lesson, or None after saying what is wrong with its file."""
    try:
        return load(name)
    except LessonError as error:
        st.error(t("lesson.broken", error=escaped(error)))
        return None


def step_link(name: str, number: int) -> str:
    """A link that opens step ``number`` of lesson ``name`` from any page, in a fresh browser too."""
    return f"?{LESSON_PARAM}={name}&{STEP_PARAM}={number}"


def from_url() -> tuple[str, int] | None:
    name, number = st.query_params.get(LESSON_PARAM), st.query_params.get(STEP_PARAM, "1")
    if name is None:
        return None
    try:
        return name, max(1, int(number))
    except ValueError:
        return name, 1


def open_step(lesson: Lesson, number: int) -> None:
    """Go to step ``number`` (1-based) of ``lesson``: its page with its controls, keeping the interface language,
    presenter mode and checkpoint."""
    number = min(max(number, 1), len(lesson.steps))
    step = lesson.steps[number - 1]
    remember_before()
    st.session_state[PLAYING] = (lesson.name, number)
    carried = {LESSON_PARAM: lesson.name, STEP_PARAM: str(number)}
    from pages.common import COMMON_FIELDS  # here: app.py draws the bar before torch is imported

    kept = url_state.kept()
    common = {key: field.dump(kept[key]) for key, field in COMMON_FIELDS.items() if kept.get(key) is not None}
    url_state.open_link(carried)
    pages = app_pages()
    target = next(page for page in pages if page_name(page) == step.page)
    st.switch_page(target, query_params={**common, **step.state, **carried})


def remember_before() -> None:
    """As a lesson starts: the visitor's own choices on every page, given back when they leave it (:func:`stop`)."""
    if PLAYING not in st.session_state and BEFORE not in st.session_state:
        from pages.sentence import VISITOR_SENTENCE

        st.session_state[BEFORE] = {**url_state.kept(), VISITOR_SENTENCE: st.session_state.get(VISITOR_SENTENCE)}


def give_back(declared: dict, here: str) -> None:
    """After the first run past a lesson's end: every control but the page's own (``declared``, which stays as the
    lesson left it) takes back the value the visitor had before the lesson, or its default, so that the other
    pages open as the visitor left them (a step page no longer opens on the lesson's last tab and sentence).

    The visitor's own sentence comes back on every other page. The page left on (``here``) keeps the lesson's
    sentence while the visitor stays on it, and its choices come back with the visitor's sentence when they go
    (:func:`let_go`)."""
    before = st.session_state.pop(LEFT, None)
    if before is None:
        return
    from pages.common import COMMON_FIELDS
    from pages.sentence import BOX, HELD, VISITOR_SENTENCE

    sentence = before.pop(VISITOR_SENTENCE, None)
    kept = url_state.kept()
    box = st.session_state.get(BOX)
    if sentence and box in declared and kept.get(box) not in (None, sentence):
        own = [key for key in declared if key not in COMMON_FIELDS]
        st.session_state[HELD] = {
            "page": here,
            "key": box,
            "sentence": kept[box],
            "shown": {key: kept.get(key) for key in own},
            "before": {key: before[key] for key in own if key in before},
        }
    if sentence:  # the visitor's own sentence, on every page again
        st.session_state[VISITOR_SENTENCE] = sentence
    for key in set(kept) | set(before):
        if key in declared:
            continue
        st.session_state.pop(key, None)
        if key in before:
            kept[key] = before[key]
        else:
            kept.pop(key, None)


def let_go(here: str) -> None:
    """Before a run of page ``here``: once the visitor has gone from the page a lesson was left on (which kept the
    lesson's sentence, :func:`give_back`), that page is theirs again. Left as the lesson left it, its own controls
    take back the values they had with the visitor's sentence; worked on (any of its choices changed), the lesson's
    sentence becomes the visitor's, on every page, with the choices they made for it."""
    from pages.sentence import HELD, VISITOR_SENTENCE

    held = st.session_state.get(HELD)
    if held is None or held["page"] == here:
        return
    del st.session_state[HELD]
    kept = url_state.kept()
    if any(kept.get(key) != value for key, value in held["shown"].items()):
        st.session_state[VISITOR_SENTENCE] = held["sentence"]
        return
    for key in held["shown"]:
        st.session_state.pop(key, None)
        if key in held["before"]:
            kept[key] = held["before"][key]
        else:
            kept.pop(key, None)


def stop() -> None:
    """Leave the lesson: the page stays as it is; every other page gets the visitor's own choices back
    (:func:`give_back`, after the next run)."""
    st.session_state[LEFT] = st.session_state.pop(BEFORE, dict(url_state.kept()))
    st.session_state.pop(PLAYING, None)
    url_state.carry({})
    for param in (LESSON_PARAM, STEP_PARAM, ANSWER_PARAM):
        st.query_params.pop(param, None)


def play(page) -> None:
    """Run ``page`` (the navigation's chosen page) under the lesson bar when a lesson is on."""
    from pages.sentence import BOX

    st.session_state[url_state.DECLARED] = {}
    st.session_state.pop(BOX, None)
    let_go(page_name(page))
    linked = from_url()
    if linked is not None and linked != st.session_state.get(PLAYING):
        # A link to a step (a fresh browser, or a step's link clicked): start there.
        name, number = linked
        if name not in available_lessons():
            st.error(t("lesson.unknown", name=escaped(name)))
            page.run()
            return
        lesson = load_or_say(name)
        if lesson is None:
            page.run()
            return
        number = min(number, len(lesson.steps))
        remember_before()
        if set(st.query_params) <= {LESSON_PARAM, STEP_PARAM}:
            open_step(lesson, number)  # a step's own link: its page with its controls
        # else a page's link copied or reloaded during the lesson (controls as the visitor left them): as it is
        st.session_state[PLAYING] = (name, number)
        url_state.carry({LESSON_PARAM: name, STEP_PARAM: str(number)})
    playing = st.session_state.get(PLAYING)
    if playing is None:
        page.run()
        give_back(st.session_state.get(url_state.DECLARED, {}), page_name(page))
        return
    name, number = playing
    lesson = load_or_say(name)
    if lesson is None:
        stop()
        page.run()
        return
    number = min(number, len(lesson.steps))
    step = lesson.steps[number - 1]
    problems = st.container()
    revealed = bar(lesson, number, on_its_page=step.page == page_name(page))
    if not revealed:
        return
    page.run()
    if step.page == page_name(page):
        declared = st.session_state.get(url_state.DECLARED, {})
        if declared:
            controls = {key: field.parse for key, field in declared.items()}
            for problem in unknown_controls(number, step, controls):
                problems.error(t("lesson.bad_step", lesson=escaped(name), problem=escaped(problem)))


def answer(lesson: Lesson, number: int, choices: list[str]) -> None:
    """The question's choices as a radio, the pick kept by its position (0-based in the session, 1-based in the URL,
    so that a reload, a link or another interface language shows the same pick); a new step starts with none."""
    key = f"lesson_answer_{lesson.name}_{number}"
    positions = list(range(len(choices)))
    if st.session_state.get(key) not in positions:  # a new session, or a link's pick
        picked = st.query_params.get(ANSWER_PARAM, "")
        st.session_state.pop(key, None)
        if picked.isdigit() and 1 <= int(picked) <= len(choices):
            st.session_state[key] = int(picked) - 1
    # index=None only for a radio that has no pick yet (Streamlit warns about a default beside a set value).
    keyed(st.radio, t("lesson.your_answer"), positions, key=key, format_func=choices.__getitem__, index=None)
    entries = {LESSON_PARAM: lesson.name, STEP_PARAM: str(number)}
    if st.session_state.get(key) in positions:
        entries[ANSWER_PARAM] = st.query_params[ANSWER_PARAM] = str(st.session_state[key] + 1)
    url_state.carry(entries)  # in the URL of every page from now on, as the lesson and its step are


def bar(lesson: Lesson, number: int, on_its_page: bool) -> bool:
    """The lesson's bar above the page; whether the page's view is to be shown (False while a question waits)."""
    words = language()
    step = lesson.steps[number - 1]
    total = len(lesson.steps)
    key = (lesson.name, number)
    revealed = key in st.session_state.setdefault(REVEALED, set()) or step.question is None
    with st.container(border=True, key="lesson_bar"):
        st.markdown(
            f"**{lesson.words('title', words)}** · {t('lesson.step_of', number=number, total=total)} — "
            f"**{step.words('title', words)}**"
        )
        st.markdown(step.words("text", words))
        if step.question is not None:
            st.markdown(f"**{t('lesson.question')}** {step.words('question', words)}")
            choices = step.words("choices", words)
            if choices:
                answer(lesson, number, choices)
            if not revealed:
                if st.button(t("lesson.reveal"), key="lesson_reveal", type="primary", icon=":material/visibility:"):
                    st.session_state[REVEALED].add(key)
                    st.rerun()
            elif step.answer is not None:
                st.info(step.words("answer", words))
        row = st.container(horizontal=True, vertical_alignment="center")
        if row.button(
            t("lesson.previous"),
            key="lesson_previous",
            disabled=number == 1,
            icon=":material/arrow_back:",
            shortcut="PageUp",
        ):
            open_step(lesson, number - 1)
        if row.button(
            t("lesson.next"),
            key="lesson_next",
            disabled=number == total,
            icon=":material/arrow_forward:",
            type="primary" if revealed else "secondary",
            shortcut="PageDown",
        ):
            open_step(lesson, number + 1)
        if not on_its_page and row.button(t("lesson.back_to_step"), key="lesson_back", icon=":material/undo:"):
            open_step(lesson, number)
        if on_its_page:
            row.markdown(f"[{t('lesson.link')}]({step_link(lesson.name, number)})")
        if row.button(t("lesson.leave"), key="lesson_leave", icon=":material/close:", type="tertiary"):
            stop()
            st.rerun()
    if not revealed:
        st.caption(t("lesson.hidden"))
    return revealed
