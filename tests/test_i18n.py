"""The interface's languages: complete catalogues, and pages that speak Korean when asked."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import charts, no_exceptions
from transformer.features.i18n import LANGUAGES, catalogue

REPOSITORY = Path(__file__).resolve().parent.parent
HANGUL = re.compile(r"[\uac00-\ud7a3]")
FIGURE_WORDS = {
    "steps.py": "plot",
    "scaling.py": "plot",
    "grid.py": "plot_attention",
    "positional.py": "plot_pe",
    "training.py": "plot_training",
    "attention.py": ("plot_attention", "plot_scores"),
    "paper.py": "plot_paper",
    "whatif.py": "plot_whatif",
    "logit_lens.py": "plot_lens",
    "complexity.py": "plot_complexity",
    "toy.py": "plot_toy",
    "head_scores.py": ("plot_scores", "plot_attention"),
    "describe": "describe",  # a package: every module of it
}
# Pages translated so far, each with a link that opens every part of it.
KOREAN_PAGES = {
    "lessons.py": {},
    "step_by_step.py": {},
    "positional_encoding.py": {},
    "why_self_attention.py": {},
    "toy_model.py": {},
    "model_and_training.py": {},
    "head_discovery.py": {},
    "head_atlas.py": {},
    "paper_figures.py": {},
    "what_if.py": {},  # its tabs, each opened by its link
    **{f"what_if.py#{tab}": {"wi_tab": tab} for tab in ("importance", "rollout", "beam", "forced", "compare")},
    "app.py": {},  # the main page, Translate and explore
}
SYMBOLS = {"d_model", "d_ff"}  # labels that are the paper's own symbols
FORMULAS = {"plot.scores", "plot.scaled", "plot.residual", "plot.output"}


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_every_message_with_the_same_fields():
    english = catalogue("en")
    # Head scores are named in the registry (English); other languages translate every one of them.
    from transformer.analysis.figures import FIGURES
    from transformer.analysis.heads import SCORES

    scores = {f"score.{key}.{part}" for key in SCORES for part in ("name", "description")}
    # So are the paper's figure titles and captions (verbatim in transformer.analysis.figures).
    scores |= {f"fig.{part}{number}" for number in FIGURES for part in ("title", "caption")}
    for language in LANGUAGES:
        messages = catalogue(language)
        assert set(messages) == set(english) | (scores if language != "en" else set()), language
        for key, text in messages.items():
            assert text.strip(), f"{language}: {key} is empty"
            # A translation may leave a field out (Korean has no articles), never add one.
            assert key in scores or fields(text) <= fields(english[key]), f"{language}: {key}: other fields"
    korean = catalogue("ko")
    # Only formulas may stay as they are.
    untranslated = {key for key in english if korean[key] == english[key]}
    assert all(
        korean[key] != getattr(SCORES[key.split(".")[1]], key.split(".")[2])
        for key in scores
        if key.startswith("score.")
    )
    assert untranslated <= FORMULAS, sorted(untranslated - FORMULAS)


def test_every_message_the_code_asks_for_exists():
    english = catalogue("en")
    sources = [*REPOSITORY.glob("pages/**/*.py"), REPOSITORY / "app.py"]
    asked = {key for path in sources for key in re.findall(r"""\bt\(\s*f?["']([\w.]+)["']""", path.read_text())}
    assert asked and not asked - set(english), sorted(asked - set(english))
    # Figures read their words as text["key"] / _say(text, "key") under their prefix, or message(language, "key").
    for module, prefixes in FIGURE_WORDS.items():
        prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
        path = REPOSITORY / "transformer" / "plots" / module
        figures = (
            "\n".join(part.read_text() for part in sorted(path.glob("*.py"))) if path.is_dir() else path.read_text()
        )
        short = set(re.findall(r"""text\[\s*f?["']([\w]+)["']""", figures))
        short |= set(re.findall(r"""_say\(\s*text,\s*["']([\w]+)["']""", figures))
        missing = {key for key in short if not any(f"{prefix}.{key}" in english for prefix in prefixes)}
        full = set(re.findall(r"""message\(\s*language,\s*["']([\w.]+)["']""", figures))
        assert short | full and not missing and full <= set(english), (module, sorted(missing | (full - set(english))))
    # Step titles and explanations are asked for by the steps' keys.
    from transformer.analysis.steps import STEPS

    assert all(f"step.{step.key}.title" in english and f"step.{step.key}.explanation" in english for step in STEPS)


@pytest.fixture
def korean_page(trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))

    def run(page: str, **query: str) -> AppTest:
        page = page.split("#")[0]
        path = REPOSITORY / "app.py" if page == "app.py" else REPOSITORY / "pages" / page
        app = AppTest.from_file(str(path), default_timeout=120)
        app.query_params["lang"] = "ko"
        for key, value in query.items():
            app.query_params[key] = value
        return app.run()

    return run


@pytest.mark.parametrize("page", sorted(KOREAN_PAGES))
def test_pages_speak_korean(korean_page, page: str):
    app = korean_page(page, **KOREAN_PAGES[page])
    no_exceptions(app)
    assert app.sidebar.selectbox(key="lang").value == "ko"
    shown = [
        app.title[0].value,
        *(header.value for header in app.header),
        *(tab.label for tab in app.tabs),
        *(caption.value for caption in app.caption),
        *(metric.label for metric in app.metric),
        *(chart["figure"]["layout"]["title"]["text"] for chart in charts(app)),
    ]
    widgets = ("text_input", "radio", "selectbox", "multiselect", "slider", "select_slider", "toggle", "button")
    labels = [widget.label for kind in widgets for widget in app.get(kind) if widget.label != "Language / 언어"]
    untranslated = [text for text in [*shown, *labels] if not HANGUL.search(text) and text not in SYMBOLS]
    assert not untranslated, untranslated


def test_english_is_one_choice_away(korean_page):
    app = korean_page("step_by_step.py")
    app.sidebar.selectbox(key="lang").set_value("en").run()
    assert app.title[0].value == "Attention, step by step" and app.query_params["lang"] == "en"
