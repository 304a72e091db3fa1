"""Fuzzed input: arbitrary Unicode text through the tokenizer → search → attention pipeline, hostile tokens through
every piece of HTML the app writes, and arbitrary URL query parameters on every page (hypothesis).

What must hold whatever the input: no exception, work bounded by the model's own limits (the source is cut to what
the model reads, the output to source + 50 tokens), attention that is still a probability distribution, and no
markup from the input in any HTML the app emits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from tests.conftest import no_exceptions
from transformer.analysis.ablation import word_diff
from transformer.analysis.attention import AttentionMaps, translate_with_attention
from transformer.analysis.input_check import not_source_reasons
from transformer.checkpoint import load_checkpoint
from transformer.decode import EXTRA_OUTPUT_TOKENS, GREEDY, max_source_tokens
from transformer.plots import bertviz
from transformer.plots.style import safe_label
from transformer.plots.whatif import diff_html
from transformer.tokenizer import BIDI_CONTROLS, clean

REPOSITORY = Path(__file__).resolve().parent.parent
HOSTILE = ["</script><img src=x onerror=alert(1)>", "<b>bold</b>", "&amp;", "\u202eevil", "\ud800", "\x00", "'\"<>"]
# Any code point Python allows, lone surrogates (category Cs) and control characters included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=400)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
APP_TAGS = re.compile(r"</?(span|div|br)\b[^<>]*>")  # the tags the app's own HTML uses
MARKUP = re.compile(r"<\s*(script|img|iframe|svg|object|embed|b)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def loaded(trained_checkpoint: Path):
    return load_checkpoint(trained_checkpoint)


@FUZZ
@given(text=ANY_TEXT)
@example(text="")
@example(text="a" * 10_000)
@example(text="שלום עולם مرحبا بالعالم")  # right-to-left scripts
@example(text="e\u0301\u0301\u0301 o\u0308" * 50)  # stacked combining marks
@example(text="\x00\x01\x07\x1b[31m\x7f\u200b\ufeff")  # control and invisible characters
@example(text="\ud800 lone \udfff surrogates")
@example(text=" ".join(HOSTILE))
def test_any_text_translates_within_the_models_limits(loaded, text: str):
    model, tokenizer = loaded.model, loaded.tokenizer
    translation = translate_with_attention(model, tokenizer, text, GREEDY)
    assert len(translation.source_ids) <= max_source_tokens(model)
    assert len(translation.output_ids) <= len(translation.source_ids) + EXTRA_OUTPUT_TOKENS
    assert translation.translation == clean(translation.translation)  # no lone surrogate, no bidi control
    maps = translation.maps
    for kind in ("encoder", "decoder", "cross"):
        weights = maps.weights(kind)
        queries, keys = maps.tokens(kind)
        assert weights.shape[2:] == (len(queries), len(keys))
        assert np.isfinite(weights).all() and np.allclose(weights.sum(-1), 1.0, atol=1e-4)
    json.dumps(translation.translation)  # encodable for the URL, the downloads and the JSON outputs
    not_source_reasons(text, maps.source_tokens, "en", "de")  # the input check never raises


@FUZZ
@given(text=ANY_TEXT)
def test_cleaning_keeps_text_encodable_and_free_of_direction_controls(text: str):
    cleaned = clean(text)
    cleaned.encode("utf-8")  # a lone surrogate would raise here
    assert not set(map(ord, cleaned)) & set(BIDI_CONTROLS)
    assert clean(cleaned) == cleaned


def hostile_maps(tokens: list[str]) -> AttentionMaps:
    size = len(tokens)
    uniform = np.full((1, 1, size, size), 1.0 / size)
    return AttentionMaps(tokens, tokens, tokens, uniform, uniform, uniform)


@FUZZ
@given(tokens=st.lists(st.one_of(st.sampled_from(HOSTILE), ANY_TEXT.filter(bool)), min_size=1, max_size=8))
def test_no_markup_from_tokens_reaches_the_apps_html(tokens: list[str]):
    for kind in (None, "cross"):
        document = bertviz.head_view_html(hostile_maps(tokens), kind)
        data = document.split('id="bertviz-params"')[1].split("</script>")[0]
        assert not MARKUP.search(data) and "<" not in data.split(">", 1)[1]  # the JSON block holds no raw "<"
    for token in tokens:
        assert not MARKUP.search(safe_label(token)) and "<" not in safe_label(token)
    words = " ".join(tokens)
    shown = diff_html(word_diff(words, "x " + words), {"removed": "<i>", "added": '"><b>'})
    assert not MARKUP.search(shown.replace("<span", "").replace("</span>", "").replace("<div", ""))


def page_apps() -> list[str]:
    return ["app.py", *sorted(path.name for path in (REPOSITORY / "pages").glob("*.py")
                               if path.name not in ("__init__.py", "common.py", "explore.py", "i18n.py",
                                                    "url_state.py"))]  # fmt: skip


PARAMETER_NAMES = st.sampled_from([
    "text", "beam", "alpha", "precision", "kind", "layer", "head", "view", "lang", "present", "checkpoint",
    "focus_query", "focus_heads", "steps_text", "steps_layer", "steps_step", "fig_layer", "fig3_heads", "heads_sample",
    "heads_sentence", "pe_d_model", "pe_positions", "wi_tab", "wi_text", "wi_off_cross", "wi_k", "wi_given",
    "wi_other_path", "wi_hypothesis", "wi_residual", "unknown",
])  # fmt: skip
# A URL carries percent-encoded UTF-8, so no lone surrogate can arrive through one.
PARAMETER_VALUES = st.one_of(
    st.sampled_from(["", "0", "-1", "1e309", "nan", "99999999999999999999", "all", "1,2,999", "beam", "ko", "../../etc",
                     *(value for value in HOSTILE if clean(value) == value)]),
    st.text(st.characters(codec="utf-8"), max_size=60),
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("page", page_apps())
def test_arbitrary_url_parameters_never_break_a_page(page: str, trained_checkpoint: Path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    path = REPOSITORY / page if page == "app.py" else REPOSITORY / "pages" / page

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(query=st.dictionaries(PARAMETER_NAMES, PARAMETER_VALUES, max_size=6))
    def opens(query: dict[str, str]) -> None:
        app = AppTest.from_file(str(path), default_timeout=180)
        for key, value in query.items():
            app.query_params[key] = value
        app.run()
        no_exceptions(app)
        shown = [element.value for element in (*app.markdown, *app.caption, *app.info, *app.warning, *app.error)]
        for value in shown:
            assert not MARKUP.search(APP_TAGS.sub("", str(value))), value

    opens()
