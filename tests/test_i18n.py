"""The interface's languages: complete catalogues, and pages that speak Korean when asked."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import charts, no_exceptions
from transformer.i18n import LANGUAGES, catalogue

REPOSITORY = Path(__file__).resolve().parent.parent
HANGUL = re.compile(r"[\uac00-\ud7a3]")
FORMULAS = {"plot.scores", "plot.scaled", "plot.residual", "plot.output"}


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_every_message_with_the_same_fields():
    english = catalogue("en")
    for language in LANGUAGES:
        messages = catalogue(language)
        assert set(messages) == set(english), language
        for key, text in messages.items():
            assert text.strip(), f"{language}: {key} is empty"
            assert fields(text) == fields(english[key]), f"{language}: {key} has other fields than English"
    korean = catalogue("ko")
    # Only formulas may stay as they are.
    untranslated = {key for key in english if korean[key] == english[key]}
    assert untranslated <= FORMULAS, sorted(untranslated - FORMULAS)


def test_every_message_the_code_asks_for_exists():
    english = catalogue("en")
    sources = [*REPOSITORY.glob("pages/*.py"), REPOSITORY / "app.py"]
    asked = {key for path in sources for key in re.findall(r"""\bt\(\s*f?["']([\w.]+)["']""", path.read_text())}
    assert asked and not asked - set(english), sorted(asked - set(english))
    # Figures read their words as text["key"] / _say(text, "key") from the "plot." messages.
    figures = (REPOSITORY / "transformer" / "plots" / "steps.py").read_text()
    drawn = {f"plot.{key}" for key in re.findall(r"""text\[\s*f?["']([\w]+)["']""", figures)}
    drawn |= {f"plot.{key}" for key in re.findall(r"""_say\(\s*text,\s*["']([\w]+)["']""", figures)}
    assert drawn and not drawn - set(english), sorted(drawn - set(english))
    # Step titles and explanations are asked for by the steps' keys.
    from transformer.analysis.steps import STEPS

    assert all(f"step.{step.key}.title" in english and f"step.{step.key}.explanation" in english for step in STEPS)


@pytest.fixture
def korean_page(trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))

    def run(page: str, **query: str) -> AppTest:
        app = AppTest.from_file(str(REPOSITORY / "pages" / page), default_timeout=120)
        app.query_params["lang"] = "ko"
        for key, value in query.items():
            app.query_params[key] = value
        return app.run()

    return run


def test_the_step_page_speaks_korean(korean_page):
    app = korean_page("step_by_step.py")
    no_exceptions(app)
    assert app.sidebar.selectbox(key="lang").value == "ko"
    assert HANGUL.search(app.title[0].value)
    assert all(HANGUL.search(header.value) for header in app.subheader)
    labels = [app.text_input(key="steps_text").label, app.radio(key="steps_kind").label,
              app.selectbox(key="steps_layer").label, app.selectbox(key="steps_head").label,
              app.selectbox(key="steps_query").label, app.toggle(key="steps_all").label,
              app.select_slider(key="steps_dk").label, app.slider(key="steps_t").label,
              app.sidebar.toggle(key="present").label, app.sidebar.selectbox(key="checkpoint").label]  # fmt: skip
    assert all(HANGUL.search(label) for label in labels), labels
    assert all(HANGUL.search(tab.label) for tab in app.tabs)
    assert all(HANGUL.search(button.label) for button in app.button)
    assert all(HANGUL.search(caption.value) for caption in app.caption)
    assert all(HANGUL.search(chart["figure"]["layout"]["title"]["text"]) for chart in charts(app))
    # English is one choice away, and the URL keeps it.
    app.sidebar.selectbox(key="lang").set_value("en").run()
    assert app.title[0].value == "Attention, step by step" and app.query_params["lang"] == "en"
