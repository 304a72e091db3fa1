"""Lessons: the file format and the message a broken file gets, every shipped lesson played step by step in
Chromium as a class would (each step's page showing its URL state), a lesson whose step names a control its page
does not have, and the exported lesson opened from disk with every non-file request refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.robot_visitor import settle
from pages.navigation import PAGE_SCRIPTS
from tests import test_browser
from tests.conftest import needs_browser, plain
from tests.test_browser import FIRST_RENDER_MS, offline_context
from transformer.cli.lesson import export
from transformer.cli.lesson import main as lesson_command
from transformer.features.lessons import (
    FOLDER_VARIABLE,
    PAGES,
    LessonError,
    Step,
    available_lessons,
    parse_lesson,
    read_lesson,
    unknown_controls,
    url_value,
)
from transformer.formats.checkpoint import load_checkpoint

APP = str(Path(__file__).resolve().parent.parent / "app.py")
WHY_TOKENS = ("why_first", "why_second")  # the two tokens Why self-attention draws the path between
# The browser tests' model (the app's server and its log are conftest's fixtures).
checkpoint = test_browser.checkpoint
STEP = """
[[steps]]
page = "positional_encoding"
title = { en = "Positions" }
text = { en = "The table." }
"""
HEADER = 'title = { en = "A lesson", ko = "수업" }\n'


# ------------------------------------------------------------------------------------------------ the file
def test_the_shipped_lessons_read_and_name_only_pages_the_app_has():
    assert set(PAGES) == {"explore", *(Path(name).stem for name in PAGE_SCRIPTS)}
    assert "paper_tour" in available_lessons()
    for name in available_lessons():
        lesson = read_lesson(name)
        assert lesson.steps and all(step.words("text", "ko") for step in lesson.steps)
        assert all(step.text.get("ko") for step in lesson.steps), f"{name}: a step without its Korean text"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + STEP + STEP.replace("positional_encoding", "nowhere"), "step 2 names page 'nowhere'"),
        (HEADER + STEP.replace('{ en = "The table." }', '{ ko = "표" }'), "step 1: text has no English text"),
        (HEADER + STEP + 'choices = { en = ["a", "b"] }\n', "step 1: choices without a question"),
        (HEADER + STEP + "colour = 'red'\n", "step 1 has unknown keys ['colour']"),
        (HEADER + STEP + 'text = "twice"\n', "not valid TOML"),
        (HEADER, "has no steps"),
        (STEP, "title must be a table of texts"),
        (HEADER + STEP + 'question = { en = "?", fr = "?" }\n', "step 1: question has unknown languages ['fr']"),
    ],
)
def test_a_broken_lesson_file_is_refused_with_a_message_naming_the_step(text: str, message: str):
    with pytest.raises(LessonError, match="lesson 'broken'") as refused:
        parse_lesson("broken", text)
    assert message in str(refused.value)


def test_state_values_are_written_as_a_link_writes_them():
    lesson = parse_lesson("ok", HEADER + STEP + "state = { pe_positions = 50, flag = true, heads = [1, 3] }\n")
    assert lesson.steps[0].state == {"pe_positions": "50", "flag": "1", "heads": "1,3"}
    assert [url_value(value) for value in (False, 2.5, "x")] == ["0", "2.5", "x"]


def test_controls_a_page_lacks_or_cannot_read_are_named_with_their_step():
    step = Step("explore", {"en": "t"}, {"en": "x"}, {"layer": "5", "lyaer": "5", "kind": "sideways"})

    def kind(text: str) -> str:
        if text not in ("encoder", "decoder", "cross"):
            raise ValueError(text)
        return text

    problems = unknown_controls(4, step, {"layer": int, "kind": kind})
    assert len(problems) == 2
    assert problems[0].startswith("step 4: page 'explore' has no control 'lyaer'")
    assert problems[1] == "step 4: 'sideways' is not a value control 'kind' of 'explore' accepts"


def test_the_check_command_names_the_broken_step(tmp_path: Path, capsys: pytest.CaptureFixture):
    broken = tmp_path / "broken.toml"
    broken.write_text(HEADER + STEP + STEP.replace("positional_encoding", "nowhere"), encoding="utf-8")
    assert lesson_command(["check", str(broken)]) == 1
    assert "step 2 names page 'nowhere'" in capsys.readouterr().err
    assert lesson_command(["check", "paper_tour"]) == 0
    assert "steps" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ the app
def test_a_step_naming_a_control_its_page_lacks_gets_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "typo.toml").write_text(
        HEADER + STEP + "state = { pe_positions = 50, pe_ofset = 3 }\n", encoding="utf-8"
    )
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))
    app = AppTest.from_file(APP, default_timeout=120)
    app.query_params.update({"lesson": "typo", "lesson_step": "1"})
    app.run()
    errors = [plain(error.value) for error in app.error]
    assert any("Lesson “typo”, step 1: page 'positional_encoding' has no control 'pe_ofset'" in e for e in errors)
    assert app.query_params.get("pe_positions") == "50"  # the rest of the step still applies


def test_the_lessons_page_lists_each_lesson_and_names_the_broken_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "good.toml").write_text(HEADER + STEP, encoding="utf-8")
    (tmp_path / "bad.toml").write_text(HEADER + STEP + STEP.replace("positional_encoding", "nowhere"), encoding="utf-8")
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))
    app = AppTest.from_file(str(Path(APP).parent / "pages" / "lessons.py"), default_timeout=120).run()
    assert [header.value for header in app.main.header] == ["A lesson"]
    assert len(app.error) == 1 and "lesson 'bad', step 2 names page 'nowhere'" in plain(app.error[0].value)
    assert "?lesson=good&lesson_step=1" in " ".join(markdown.value for markdown in app.markdown)


# ------------------------------------------------------------------------------------------------ in Chromium
def step_path(step: Step) -> str:
    return "" if step.page == "explore" else step.page


@needs_browser
@pytest.mark.parametrize("name", available_lessons())
def test_every_shipped_lesson_plays_to_the_end_in_chromium(browser, server: str, name: str, server_log: Path):
    """From the lesson's first link to its last step with the Next button, each question answered and revealed:
    every step opens its page with its controls in the URL, and nothing fails."""
    lesson = read_lesson(name)
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/?lesson={name}&lesson_step=1")
    settle(page, FIRST_RENDER_MS)
    for number, step in enumerate(lesson.steps, 1):
        reveal = page.locator(".st-key-lesson_reveal button")
        assert (reveal.count() == 1) == (step.question is not None), f"step {number}"
        if reveal.count():
            reveal.click()
            settle(page, FIRST_RENDER_MS)
        url = urlsplit(page.url)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        assert url.path.strip("/") == step_path(step), f"step {number}"
        assert query["lesson"] == name and query["lesson_step"] == str(number)
        assert {key: query.get(key) for key in step.state} == step.state, f"step {number}"
        assert page.locator("[data-testid='stException']").count() == 0, f"step {number}"
        alerts = page.locator("[data-testid='stAlert']").all_inner_texts()
        assert not [alert for alert in alerts if "Lesson `" in alert], alerts
        assert page.locator(".st-key-lesson_bar").inner_text().count(step.words("title", "en")) == 1
        if number < len(lesson.steps):
            page.locator(".st-key-lesson_next button").click()
            settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lesson_previous button").click()
    settle(page, FIRST_RENDER_MS)
    assert parse_qs(urlsplit(page.url).query)["lesson_step"] == [str(len(lesson.steps) - 1)]
    assert blocked == [] and errors == []
    assert "Traceback" not in server_log.read_text(encoding="utf-8", errors="replace")
    context.close()


@needs_browser
def test_a_picked_answer_survives_a_reload_a_link_and_another_language(browser, server: str):
    """The class picks an answer to a step's question: a reload, the page's link in a fresh browser and the other
    interface language show the same pick; the next step starts with none."""
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    page.goto(f"{server}/?lesson=paper_tour&lesson_step=1")
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lesson_answer_paper_tour_1__en").get_by_text("about log₂ 20 ≈ 4", exact=True).click()
    settle(page, FIRST_RENDER_MS)

    def picked(visit, language: str = "en") -> list[str]:
        answer = f".st-key-lesson_answer_paper_tour_1__{language}"  # the radio of each language: pages.choices
        return visit.locator(f"{answer} [role='radio'][aria-checked='true'], {answer} input:checked").evaluate_all(
            "inputs => inputs.map(input => input.closest('label')?.innerText.trim())"
        )

    assert picked(page) == ["about log₂ 20 ≈ 4"]
    page.reload()
    settle(page, FIRST_RENDER_MS)
    assert picked(page) == ["about log₂ 20 ≈ 4"]
    fresh = offline_context(browser, server, blocked)
    other = fresh.new_page()
    other.goto(page.url)
    settle(other, FIRST_RENDER_MS)
    assert picked(other) == ["about log₂ 20 ≈ 4"]
    fresh.close()
    page.goto(page.url.replace("lang=en", "lang=ko") if "lang=en" in page.url else f"{page.url}&lang=ko")
    settle(page, FIRST_RENDER_MS)
    assert picked(page, "ko") == ["약 log₂ 20 ≈ 4"]  # the same choice, by its place among the choices
    page.locator(".st-key-lesson_next button").click()
    settle(page, FIRST_RENDER_MS)
    assert "lesson_answer" not in parse_qs(urlsplit(page.url).query)
    assert page.locator(".st-key-lesson_answer_paper_tour_2__ko input:checked").count() == 0
    assert blocked == []
    context.close()


@needs_browser
def test_leaving_a_lesson_gives_the_other_pages_back_the_visitors_choices(browser, server: str):
    """A visitor starts the tour from the Lessons page, follows it past the step page's *multi-head* step, leaves on
    a later step and opens the step page: it opens as the visitor had it before the lesson (its first tab), not on
    the lesson's last state of it."""
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    page.goto(f"{server}/lessons")
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lessons_start_paper_tour button").click()
    settle(page, FIRST_RENDER_MS)
    for _ in range(5):  # to step 6, on the main page; step 5 left the step page on its multi-head tab
        page.locator(".st-key-lesson_next button").click()
        settle(page, FIRST_RENDER_MS)
    assert parse_qs(urlsplit(page.url).query)["lesson_step"] == ["6"]
    page.locator(".st-key-lesson_leave button").click()
    settle(page, FIRST_RENDER_MS)
    page.locator('[data-testid="stSidebarNav"] a[href$="step_by_step"]').click()
    settle(page, FIRST_RENDER_MS)
    query = parse_qs(urlsplit(page.url).query)
    assert "lesson" not in query and query.get("steps_tab", ["steps"]) == ["steps"], query
    selected = page.locator('[data-testid="stTab"][aria-selected="true"]').first.inner_text()
    assert selected.strip() == "Step by step", selected
    assert blocked == []
    context.close()


@needs_browser
def test_a_step_that_shows_its_own_sentence_says_so_and_gives_the_visitors_back(browser, server: str):
    """The visitor translates their own sentence, then starts the tour: its first step opens on a sentence of its
    own, says so naming theirs, and *Use mine* brings theirs back; after the lesson their sentence is everywhere."""
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    page.goto(server)
    settle(page, FIRST_RENDER_MS)
    mine = "My sister reads a book in the garden."
    page.locator(".st-key-text textarea").fill(mine)
    page.get_by_role("button", name="Translate", exact=True).click()
    settle(page, FIRST_RENDER_MS)
    page.locator('[data-testid="stSidebarNav"] a[href$="lessons"]').click()
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lessons_start_paper_tour button").click()
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lesson_reveal button").click()  # the first step asks a question before its page shows
    settle(page, FIRST_RENDER_MS)
    assert page.locator(".st-key-why_text input").input_value() != mine
    assert f"yours was “{mine}”" in page.locator('[data-testid="stCaptionContainer"]').all_inner_texts().__str__()
    page.locator(".st-key-_use_mine_why_text button").click()
    settle(page, FIRST_RENDER_MS)
    assert page.locator(".st-key-why_text input").input_value() == mine
    page.locator(".st-key-lesson_leave button").click()
    settle(page, FIRST_RENDER_MS)
    page.locator('[data-testid="stSidebarNav"] a[href$="what_if"]').click()
    settle(page, FIRST_RENDER_MS)
    assert page.locator(".st-key-wi_text input").input_value() == mine
    assert blocked == []
    context.close()


@needs_browser
def test_the_page_a_lesson_is_left_on_keeps_its_sentence_and_tokens_until_the_visitor_goes(browser, server: str):
    """The visitor types their sentence on *Why self-attention*, starts the tour there and leaves it on its first
    step: the page keeps the lesson's sentence with the lesson's tokens through its next runs; the other pages show
    the visitor's sentence; back on the page it shows theirs with the tokens they had for it."""
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    page.goto(f"{server}/why_self_attention")
    settle(page, FIRST_RENDER_MS)
    mine = "My sister reads a book in the garden."
    page.locator(".st-key-why_text input").fill(mine)
    page.locator(".st-key-why_text input").press("Enter")
    settle(page, FIRST_RENDER_MS)

    def view() -> tuple[str, str, str]:
        first, second = (page.locator(f".st-key-{key} input").input_value() for key in WHY_TOKENS)  # "7: ."
        return page.locator(".st-key-why_text input").input_value(), first, second

    own = view()
    page.locator('[data-testid="stSidebarNav"] a[href$="lessons"]').click()
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lessons_start_paper_tour button").click()
    settle(page, FIRST_RENDER_MS)
    page.locator(".st-key-lesson_reveal button").click()
    settle(page, FIRST_RENDER_MS)
    lessons = view()
    assert lessons[0] != mine and lessons[2] != own[2]
    page.locator(".st-key-lesson_leave button").click()
    settle(page, FIRST_RENDER_MS)
    assert view() == lessons
    page.locator("[data-testid='stMain'] h1").first.click()  # the focus off the sentence box: R reruns the page
    page.keyboard.press("r")
    settle(page, FIRST_RENDER_MS)
    assert view() == lessons and "lesson" not in parse_qs(urlsplit(page.url).query)
    page.locator('[data-testid="stSidebarNav"] a[href$="what_if"]').click()
    settle(page, FIRST_RENDER_MS)
    assert page.locator(".st-key-wi_text input").input_value() == mine
    page.locator('[data-testid="stSidebarNav"] a[href$="why_self_attention"]').click()
    settle(page, FIRST_RENDER_MS)
    assert view() == own
    assert blocked == []
    context.close()


@pytest.mark.parametrize("worked_on", [False, True])
def test_the_page_a_lesson_was_left_on_is_the_visitors_again_once_they_go(monkeypatch, worked_on: bool):
    """The state behind the browser test above, with the case it leaves out: left as the lesson left it, the page
    takes back the visitor's sentence and their choices for it; worked on, the lesson's sentence becomes theirs, on
    every page, with the choices they made."""
    import streamlit as st

    from pages import lesson_bar, url_state
    from pages.sentence import BOX, HELD, VISITOR_SENTENCE, follow_sentence

    mine, lessons = "My sister reads a book.", "It is in this spirit that a majority of American governments"
    session = {
        url_state.KEPT: {"why_text": lessons, "why_first": 0, "why_second": 11, "lang": "ko"},
        "why_text": lessons,
        VISITOR_SENTENCE: lessons,
        BOX: "why_text",
        lesson_bar.LEFT: {VISITOR_SENTENCE: mine, "why_text": mine, "why_first": 2, "lang": "en"},
    }
    monkeypatch.setattr(st, "session_state", session)
    declared = dict.fromkeys(["why_text", "why_first", "why_second", "lang"])
    lesson_bar.give_back(declared, "why_self_attention")
    assert session[VISITOR_SENTENCE] == mine  # every other page: the visitor's sentence
    follow_sentence("why_text")  # this page's next run
    assert session["why_text"] == lessons and session[VISITOR_SENTENCE] == mine
    if worked_on:
        url_state.kept()["why_first"] = 3
    url_state.kept()["lang"] = "en"  # the interface language is no choice of the page's
    lesson_bar.let_go("what_if")
    kept = url_state.kept()
    assert HELD not in session and kept["lang"] == "en"
    if worked_on:
        assert session[VISITOR_SENTENCE] == lessons and (kept["why_text"], kept["why_first"]) == (lessons, 3)
    else:
        assert session[VISITOR_SENTENCE] == mine and (kept["why_text"], kept["why_first"]) == (mine, 2)
        assert "why_second" not in kept and "why_text" not in session  # the default, for their sentence


def file_only_context(browser, refused: list[str]):
    """A browser context whose pages may read files only: any other request is refused and appended to ``refused``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    return context


@needs_browser
def test_the_exported_lesson_plays_from_disk_with_no_request_leaving(browser, checkpoint: Path, tmp_path: Path):
    lesson = read_lesson("paper_tour")
    out = tmp_path / "paper_tour.html"
    figures = export(lesson, load_checkpoint(checkpoint), out, "ko", explorer=False)
    assert figures >= len(lesson.steps) // 2
    requests: list[str] = []
    context = file_only_context(browser, requests)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.goto(out.as_uri())
    drawn = 0
    for number, step in enumerate(lesson.steps, 1):
        section = page.locator(f"#step-{number}")
        assert section.is_visible() and page.locator("section.step:visible").count() == 1
        assert "단계" in page.locator("#position").inner_text()
        assert step.words("title", "ko") in section.inner_text()
        if step.question is not None:
            assert section.locator(".js-plotly-plot").count() == 0  # hidden until revealed
            section.locator("button.reveal").click()
            if step.answer is not None:
                assert step.words("answer", "ko") in section.locator(".answer").inner_text()
        plots = section.locator(".js-plotly-plot")
        notes = section.locator(".note").count()
        assert plots.count() + notes >= 1, f"step {number} shows neither a figure nor where to see it"
        for index in range(plots.count()):
            assert plots.nth(index).locator(".main-svg").count() >= 1  # plotly drew it
            assert "▁" not in plots.nth(index).inner_text()  # words, or pieces as a reader sees them
        drawn += plots.count()
        if number < len(lesson.steps):
            page.keyboard.press("ArrowRight")
    assert drawn == figures
    page.keyboard.press("PageUp")
    assert page.locator(f"#step-{len(lesson.steps) - 1}").is_visible()
    assert requests == [] and errors == []
    assert os.path.getsize(out) < 20e6
    context.close()


@needs_browser
@pytest.mark.skipif(shutil.which("npm") is None, reason="needs Node.js's npm (apt-get install npm)")
def test_a_student_translates_their_own_sentence_on_an_exported_lessons_step(browser, tmp_path: Path):
    """The lesson file carries the model: on a step showing a head, *Try your own sentence* opens the explorer on the
    step's sentence and head, and a sentence the student types is translated there, with no request leaving."""
    lesson = read_lesson("paper_tour")
    out = tmp_path / "paper_tour.html"
    export(lesson, load_checkpoint(None), out, "en")
    number = next(
        i for i, step in enumerate(lesson.steps, 1) if step.page == "explore" and step.state.get("kind") == "cross"
    )
    step = lesson.steps[number - 1]
    requests: list[str] = []
    context = file_only_context(browser, requests)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{out.as_uri()}#{number}")
    section = page.locator(f"#step-{number}")
    if step.question is not None:
        section.locator("button.reveal").click()
    section.get_by_role("button", name="Try your own sentence").click()
    explorer = page.frame_locator("iframe.explorer")
    title = f"layer {step.state['layer']}, head {step.state['head']}"
    head_title = explorer.locator("#head-title")
    head_title.wait_for(state="visible", timeout=60_000)
    assert title in head_title.inner_text() and "cross" in head_title.inner_text()
    assert explorer.locator("#sentence").input_value() == step.state["text"]
    explorer.locator("#sentence").fill("My sister reads a book in the garden.")
    explorer.locator("#translate").click()
    page.wait_for_function(
        "() => document.querySelector('iframe.explorer').contentDocument.querySelector('#beam-output')"
        ".textContent.length > 0 && !document.querySelector('iframe.explorer').contentDocument"
        ".querySelector('#translate').disabled"
    )
    tokens = explorer.locator("#heatmap text").all_text_contents()
    assert any("garden" in token for token in tokens)
    page.locator("#next").click()
    assert page.locator("#explorer-box").is_hidden()
    assert requests == [] and errors == []
    context.close()


def test_the_example_in_the_lessons_readme_is_a_valid_lesson():
    readme = (Path(__file__).resolve().parent.parent / "lessons" / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    lesson = parse_lesson("example", example)
    assert lesson.steps[0].state["layer"] == "2" and lesson.steps[0].choices["ko"] == ["children", "park"]
