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
from transformer.paper.tokenizer import BIDI_CONTROLS, clean
from transformer.plots import bertviz
from transformer.plots.style import safe_label
from transformer.plots.whatif import diff_html
from transformer.search.decode import EXTRA_OUTPUT_TOKENS, GREEDY, max_source_tokens

REPOSITORY = Path(__file__).resolve().parent.parent
HOSTILE = ["</script><img src=x onerror=alert(1)>", "<b>bold</b>", "&amp;", "\u202eevil", "\ud800", "\x00", "'\"<>"]
# Any code point Python allows, lone surrogates (category Cs) and control characters included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=400)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
APP_TAGS = re.compile(r"</?(span|div|br)\b[^<>]*>")  # the tags the app's own HTML uses
MARKUP = re.compile(r"<\s*(script|img|iframe|svg|object|embed|b)\b", re.IGNORECASE)


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
    """The app's pages: app.py (whose default page is pages/translate.py) and the page scripts its navigation names."""
    from pages.navigation import PAGE_SCRIPTS

    return ["app.py", *PAGE_SCRIPTS]


PARAMETER_NAMES = st.sampled_from(
    [
        "text",
        "beam",
        "alpha",
        "precision",
        "kind",
        "layer",
        "head",
        "view",
        "lang",
        "present",
        "checkpoint",
        "focus_query",
        "focus_heads",
        "steps_text",
        "steps_layer",
        "steps_step",
        "fig_layer",
        "fig3_heads",
        "heads_sample",
        "heads_sentence",
        "pe_d_model",
        "pe_positions",
        "wi_tab",
        "wi_text",
        "wi_off_cross",
        "wi_k",
        "wi_given",
        "wi_other_path",
        "wi_hypothesis",
        "wi_residual",
        "unknown",
    ]
)
# A URL carries percent-encoded UTF-8, so no lone surrogate can arrive through one.
PARAMETER_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1e309",
            "nan",
            "99999999999999999999",
            "all",
            "1,2,999",
            "beam",
            "ko",
            "../../etc",
            *(value for value in HOSTILE if clean(value) == value),
        ]
    ),
    st.text(st.characters(codec="utf-8"), max_size=60),
)


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


# ------------------------------------------------------------------------------------------------ bad files
def broken_copy(checkpoint: Path, folder: Path) -> Path:
    import shutil

    if folder.exists():
        shutil.rmtree(folder)
    return shutil.copytree(checkpoint, folder)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_byte_wise_damaged_weights_give_one_clear_error(trained_checkpoint: Path, tmp_path_factory, data):
    folder = broken_copy(trained_checkpoint, tmp_path_factory.getbasetemp() / "damaged")
    weights = folder / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    header = 8 + int.from_bytes(raw[:8], "little")
    damage = data.draw(st.sampled_from(["truncate", "flip header", "flip data", "header length"]))
    if damage == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif damage == "header length":
        raw[:8] = data.draw(st.integers(0, 2**64 - 1)).to_bytes(8, "little")
    else:
        low, high = (0, header - 1) if damage == "flip header" else (header, len(raw) - 1)
        for _ in range(data.draw(st.integers(1, 8))):
            raw[data.draw(st.integers(low, high))] ^= data.draw(st.integers(1, 255))
    weights.write_bytes(bytes(raw))
    try:
        loaded = ckpt_module().load_checkpoint(folder)
    except ckpt_module().CheckpointError as error:
        assert str(folder) in str(error) and "\n" not in str(error).strip()
        return
    # Damage that leaves a readable file with finite weights (flipped mantissa bits) loads as a working model.
    assert translate_with_attention(loaded.model, loaded.tokenizer, "the cat.", GREEDY).translation is not None


def ckpt_module():
    from transformer.formats import checkpoint

    return checkpoint


HEADER_EDITS = st.sampled_from(
    [
        ("dtype", "I32"),
        ("dtype", "BOOL"),
        ("dtype", "F64"),
        ("shape", [1]),
        ("shape", [10**12, 10**12]),
        ("shape", []),
        ("data_offsets", [0, 10**15]),
        ("data_offsets", [5, 3]),
    ]
)


@settings(max_examples=16, deadline=None, suppress_health_check=list(HealthCheck))
@given(edit=HEADER_EDITS, which=st.integers(0, 1000))
def test_wrong_dtypes_shapes_and_offsets_in_the_header_are_refused(trained_checkpoint, tmp_path_factory, edit, which):
    folder = broken_copy(trained_checkpoint, tmp_path_factory.getbasetemp() / "header")
    weights = folder / "model.safetensors"
    raw = weights.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + length])
    names = sorted(key for key in header if key != "__metadata__")
    header[names[which % len(names)]][edit[0]] = edit[1]
    text = json.dumps(header).encode()
    weights.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + length :])
    with pytest.raises(ckpt_module().CheckpointError, match=re.escape(str(weights))):
        ckpt_module().load_checkpoint(folder)


CONFIG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    changes=st.dictionaries(
        st.sampled_from(
            [
                "vocab_size",
                "d_model",
                "num_heads",
                "d_ff",
                "encoder_layers",
                "decoder_layers",
                "dropout",
                "max_positions",
                "pad_id",
                "extra",
            ]
        ),
        CONFIG_VALUES,
        min_size=1,
        max_size=3,
    )
)
# Cases hypothesis found once (each crashed inside torch before the config refused them), kept so they run every time.
@example(changes={"d_model": 0})
@example(changes={"num_heads": 0})
@example(changes={"pad_id": 320})
@example(changes={"pad_id": 3})
def test_a_config_with_wrong_types_or_huge_values_gives_one_clear_error(trained_checkpoint, tmp_path_factory, changes):
    folder = broken_copy(trained_checkpoint, tmp_path_factory.getbasetemp() / "config")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    try:
        loaded = ckpt_module().load_checkpoint(folder)
    except ckpt_module().CheckpointError as error:
        assert str(folder) in str(error)
        return
    # What still loads (the same shape; another dropout rate or positions table) is a working model.
    assert translate_with_attention(loaded.model, loaded.tokenizer, "the cat.", GREEDY).translation is not None


def test_a_missing_or_foreign_vocabulary_is_named(trained_checkpoint, tmp_path):
    checkpoint = ckpt_module()
    folder = broken_copy(trained_checkpoint, tmp_path / "vocab")
    (folder / "spm.model").write_bytes(b"\x00not a sentencepiece model" * 10)
    with pytest.raises(checkpoint.CheckpointError, match="not a valid SentencePiece model"):
        checkpoint.load_checkpoint(folder)
    shipped = REPOSITORY / "checkpoints" / "en-de-small" / "spm.model"
    if shipped.is_file():  # another model's vocabulary, of another size
        (folder / "spm.model").write_bytes(shipped.read_bytes())
        with pytest.raises(checkpoint.CheckpointError, match="pieces but config.json says vocab_size"):
            checkpoint.load_checkpoint(folder)
    (folder / "spm.model").unlink()
    with pytest.raises(checkpoint.CheckpointError, match="spm.model"):
        checkpoint.load_checkpoint(folder)


def test_corrupted_training_data_is_named_by_file_and_line(tmp_path):
    from transformer.paper.data import read_parallel

    (tmp_path / "c.en").write_bytes(b"good line\n\xff\xfe broken \xc3\n\nlast\n")
    (tmp_path / "c.de").write_bytes(b"gute zeile\nkaputt\n\nletzte\n")
    with pytest.warns(UserWarning, match=r"c\.en: 1 lines are not valid UTF-8 \(first: line 2\)"):
        pairs = read_parallel(tmp_path / "c.en", tmp_path / "c.de")
    assert len(pairs) == 4 and pairs[1][0] == "\ufffd\ufffd broken \ufffd"
    (tmp_path / "c.de").write_bytes(b"nur eine\n")
    with pytest.raises(ValueError, match=r"c\.en has 4 lines but .*c\.de has 1"):
        read_parallel(tmp_path / "c.en", tmp_path / "c.de")
