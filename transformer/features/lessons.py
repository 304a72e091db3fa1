"""Lessons: a path through the app's pages that a teacher writes as a TOML file in ``lessons/``.

A lesson is a title and a list of steps; each step names a page of the app, the page's controls as a link would set
them (its URL state), a short text in every interface language and, optionally, a question the class answers before
the view is revealed::

    title = { en = "The paper, section by section", ko = "논문을 절마다" }
    summary = { en = "…", ko = "…" }

    [[steps]]
    page = "explore"                          # a page of the app (see PAGES)
    title = { en = "Encoder self-attention", ko = "인코더 셀프 어텐션" }
    text = { en = "…", ko = "…" }
    state = { text = "The children are playing in the park.", view = "Heads", kind = "encoder", layer = 5 }
    question = { en = "Which word will 'playing' attend to?", ko = "…" }
    choices = { en = ["children", "park"], ko = ["children", "park"] }   # optional: answers to pick from
    answer = { en = "…", ko = "…" }                                       # optional: shown once revealed

State values are written as a link writes them (numbers, ``true``/``false`` as 1/0, lists joined by commas); a page
reads them exactly as it reads its URL. This module reads and checks the file; whether a page has each named
control is checked where the page's controls are known (the app, and the export of a lesson).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformer.features.i18n import DEFAULT_LANGUAGE, LANGUAGES

DEFAULT_SENTENCE = "The children are playing in the park."  # what the app and its lessons open on

LESSONS = Path(__file__).resolve().parents[2] / "lessons"  # the shipped lessons
FOLDER_VARIABLE = "TRANSFORMER_LESSONS"  # another folder of lessons, for the app and the commands
# The app's pages a step can name (the main page is "explore"; the others are named after their files in pages/).
PAGES = (
    "explore",
    "lessons",
    "step_by_step",
    "paper_figures",
    "head_discovery",
    "head_atlas",
    "what_if",
    "positional_encoding",
    "why_self_attention",
    "toy_model",
    "model_and_training",
)
STEP_KEYS = {"page", "title", "text", "state", "question", "choices", "answer"}
LESSON_KEYS = {"title", "summary", "steps"}
MAX_STEPS = 100
MAX_LESSON_CHARACTERS = 200_000  # the shipped tour, 11 steps in two languages, is about 12,000


class LessonError(ValueError):
    """A lesson file that cannot be played, with a message naming the file and the step."""


@dataclass(frozen=True)
class Step:
    page: str
    title: dict[str, str]  # language → text
    text: dict[str, str]
    state: dict[str, str]  # control → value as URL text
    question: dict[str, str] | None = None
    choices: dict[str, list[str]] | None = None
    answer: dict[str, str] | None = None

    def words(self, part: str, language: str) -> Any:
        """The step's ``part`` (title, text, question, choices, answer) in ``language``, English where missing."""
        value = getattr(self, part)
        if value is None:
            return None
        return value.get(language) or value[DEFAULT_LANGUAGE]


@dataclass(frozen=True)
class Lesson:
    name: str  # the file's stem: what a link names (``?lesson=paper_tour``)
    title: dict[str, str]
    summary: dict[str, str]  # {} when the file has none
    steps: tuple[Step, ...] = field(default_factory=tuple)

    def words(self, part: str, language: str) -> str:
        """The lesson's title or summary in ``language``, English where missing ("" for no summary)."""
        value = getattr(self, part)
        return value.get(language) or value.get(DEFAULT_LANGUAGE, "")


def url_value(value: Any) -> str:
    """A TOML value as a link writes it: booleans as 1/0, lists joined by commas, everything else as text."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(url_value(item) for item in value)
    return str(value)


def _texts(where: str, value: Any, required: bool = True) -> dict[str, str] | None:
    """A text in every interface language: ``{en = "…", ko = "…"}`` (English required, others optional)."""
    if value is None and not required:
        return None
    if not isinstance(value, dict) or not all(isinstance(text, str) for text in value.values()):
        raise LessonError(f'{where} must be a table of texts by language, like {{ en = "…", ko = "…" }}')
    unknown = set(value) - set(LANGUAGES)
    if unknown:
        raise LessonError(f"{where} has unknown languages {sorted(unknown)} (known: {', '.join(LANGUAGES)})")
    if not value.get(DEFAULT_LANGUAGE, "").strip():
        raise LessonError(f'{where} has no English text ({DEFAULT_LANGUAGE} = "…")')
    return dict(value)


def _step(where: str, raw: Any, pages: tuple[str, ...]) -> Step:
    if not isinstance(raw, dict):
        raise LessonError(f"{where} must be a table ([[steps]])")
    unknown = set(raw) - STEP_KEYS
    if unknown:
        raise LessonError(f"{where} has unknown keys {sorted(unknown)} (known: {', '.join(sorted(STEP_KEYS))})")
    page = raw.get("page")
    if page not in pages:
        raise LessonError(f"{where} names page {page!r}, which the app does not have (pages: {', '.join(pages)})")
    state = raw.get("state", {})
    if not isinstance(state, dict) or any(isinstance(value, dict) for value in state.values()):
        raise LessonError(f"{where}: state must be a table of control = value")
    choices = raw.get("choices")
    if choices is not None:
        if not isinstance(choices, dict) or not all(
            isinstance(options, list) and options and all(isinstance(o, str) for o in options)
            for options in choices.values()
        ):
            raise LessonError(f'{where}: choices must be lists of texts by language, like {{ en = ["…", "…"] }}')
        if DEFAULT_LANGUAGE not in choices or len({len(options) for options in choices.values()}) > 1:
            raise LessonError(f"{where}: choices need English and the same number of choices in every language")
        if "question" not in raw:
            raise LessonError(f"{where}: choices without a question")
    return Step(
        page=page,
        title=_texts(f"{where}: title", raw.get("title")),
        text=_texts(f"{where}: text", raw.get("text")),
        state={str(key): url_value(value) for key, value in state.items()},
        question=_texts(f"{where}: question", raw.get("question"), required=False),
        choices=None if choices is None else {language: list(options) for language, options in choices.items()},
        answer=_texts(f"{where}: answer", raw.get("answer"), required=False),
    )


def parse_lesson(name: str, text: str, pages: tuple[str, ...] = PAGES) -> Lesson:
    """A lesson from its TOML ``text``; :class:`LessonError` names what is wrong and in which step."""
    if len(text) > MAX_LESSON_CHARACTERS:
        raise LessonError(
            f"lesson {name!r} has {len(text):,} characters; a lesson has at most {MAX_LESSON_CHARACTERS:,}"
        )
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise LessonError(f"lesson {name!r} is not valid TOML: {error}") from None
    except RecursionError:
        raise LessonError(f"lesson {name!r} is nested too deeply to be a lesson") from None
    unknown = set(raw) - LESSON_KEYS
    if unknown:
        known = ", ".join(sorted(LESSON_KEYS))
        raise LessonError(f"lesson {name!r} has unknown keys {sorted(unknown)} (known: {known})")
    steps = raw.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LessonError(f"lesson {name!r} has no steps ([[steps]] tables)")
    if len(steps) > MAX_STEPS:
        raise LessonError(f"lesson {name!r} has {len(steps)} steps; at most {MAX_STEPS}")
    return Lesson(
        name=name,
        title=_texts(f"lesson {name!r}: title", raw.get("title")),
        summary=_texts(f"lesson {name!r}: summary", raw.get("summary"), required=False) or {},
        steps=tuple(_step(f"lesson {name!r}, step {number}", step, pages) for number, step in enumerate(steps, 1)),
    )


def lessons_folder() -> Path:
    """Where lessons are read from: ``$TRANSFORMER_LESSONS`` when set, else the shipped ``lessons/``."""
    return Path(os.environ.get(FOLDER_VARIABLE) or LESSONS)


def read_lesson(path: str | Path, pages: tuple[str, ...] = PAGES) -> Lesson:
    """The lesson in file ``path``, or a lesson's name alone (``paper_tour``: ``<lessons folder>/paper_tour.toml``)."""
    path = Path(path)
    if path.suffix != ".toml" and not path.exists():
        path = lessons_folder() / f"{path.name}.toml"
    try:
        size = path.stat().st_size
        if size > 4 * MAX_LESSON_CHARACTERS:  # never read a huge file whole (UTF-8: at most 4 bytes a character)
            raise LessonError(f"lesson {path.stem!r} is {size / 2**20:,.1f} MB; a lesson is a short text file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LessonError(f"cannot read lesson {str(path)!r}: {error}") from None
    return parse_lesson(path.stem, text, pages)


def available_lessons() -> list[str]:
    """The names of the lessons in the lessons folder, in file-name order."""
    return sorted(path.stem for path in lessons_folder().glob("*.toml"))


def unknown_controls(step_number: int, step: Step, controls: dict[str, Any]) -> list[str]:
    """Messages for the step's state entries that its page does not have or cannot read: ``controls`` maps each of
    the page's control keys to a parser (``parse(text)`` raising ``ValueError`` or ``TypeError`` when malformed)."""
    problems = []
    for key, value in step.state.items():
        if key not in controls:
            problems.append(
                f"step {step_number}: page {step.page!r} has no control {key!r} "
                f"(its controls: {', '.join(sorted(controls))})"
            )
            continue
        try:
            controls[key](value)
        except (ValueError, TypeError):
            problems.append(f"step {step_number}: {value!r} is not a value control {key!r} of {step.page!r} accepts")
    return problems
