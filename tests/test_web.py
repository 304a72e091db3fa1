"""The one-file explorer (python -m transformer export web): its ONNX graphs compute what the model computes, its
weights are the checkpoint's exactly, and in Chromium, opened from file:// with every other request refused, it
translates as the Python model does and keeps a visitor's choices."""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

from benchmarks.web_explorer import measure, open_explorer, page_ids, sentences, token_sentences
from tests.conftest import needs_browser
from transformer.cli.export import main
from transformer.features import web
from transformer.features.web import (
    MAX_CHARACTERS,
    WEIGHTS_FILE,
    WebExportError,
    onnx_graphs,
    write_graphs,
)
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.config import preset
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="needs Node.js's npm (apt-get install npm)")


@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(None)


# The paper's network, and one with every way BART departs from it (learned positions per stack, a LayerNorm of the
# embedded input, GELU, no √d_model, an output bias).
ARCHITECTURES = {
    "paper": {},
    "bart": {
        "positional": "learned",
        "embedding_norm": True,
        "activation": "gelu",
        "scale_embedding": False,
        "output_bias": True,
    },
}


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_the_graphs_compute_what_the_model_computes(tmp_path, architecture: str):
    """Encoder and decoder graphs in onnxruntime against the torch model, for lengths other than the ones traced."""
    torch.manual_seed(5)
    model = Transformer(preset("tiny", **ARCHITECTURES[architecture])).eval()
    if architecture == "bart":
        with torch.no_grad():  # an output bias and embedding LayerNorms that are not the identity
            model.output_bias.copy_(torch.randn_like(model.output_bias))
            for norm in (model.encoder_embedding_norm, model.decoder_embedding_norm):
                norm.weight.copy_(1 + 0.3 * torch.randn_like(norm.weight))
                norm.bias.copy_(0.3 * torch.randn_like(norm.bias))
    loaded = SimpleNamespace(model=model)  # what write_graphs reads of a checkpoint
    folder = write_graphs(loaded, tmp_path / "graphs", cache=tmp_path / "cache")  # an empty cache: exported here
    encoder = onnxruntime.InferenceSession(str(folder / "encoder.onnx"))
    decoder = onnxruntime.InferenceSession(str(folder / "decoder.onnx"))
    for source_ids, target_ids in (([9, 10, 11, 12, 13, 14, 15, EOS_ID], [BOS_ID, 20, 21]), ([7, EOS_ID], [BOS_ID])):
        source = torch.tensor([source_ids])
        memory, encoder_attention = encoder.run(None, {"source": source.numpy()})
        with torch.no_grad():
            expected_memory, expected_attention = model.encode(source, need_weights=True)
        np.testing.assert_allclose(memory, expected_memory.numpy(), atol=1e-5)
        np.testing.assert_allclose(encoder_attention, expected_attention[0].numpy(), atol=1e-5)
        targets = torch.tensor([target_ids, [BOS_ID, *target_ids[1:][::-1]]])
        sources = source.repeat(2, 1)
        log_probs, self_attention, cross_attention = decoder.run(
            None, {"source": sources.numpy(), "memory": np.repeat(memory, 2, axis=0), "target": targets.numpy()}
        )
        with torch.no_grad():
            out = model(sources, targets, need_weights=True)
        np.testing.assert_allclose(log_probs, torch.log_softmax(out.logits[:, -1], -1).numpy(), atol=1e-5)
        np.testing.assert_allclose(self_attention, out.decoder_attention.transpose(0, 1).numpy(), atol=1e-5)
        np.testing.assert_allclose(cross_attention, out.cross_attention.transpose(0, 1).numpy(), atol=1e-5)


def test_the_weights_are_the_checkpoints_stored_once(shipped, tmp_path):
    """Every float16 tensor in the block is a checkpoint tensor bit for bit; the embedding both graphs use is there
    once; the block is about the checkpoint's size in float16 (the files as the explorer file holds them)."""
    folder = write_graphs(shipped, tmp_path)
    graphs = [
        onnx.load_model(str(folder / name), load_external_data=False) for name in ("encoder.onnx", "decoder.onnx")
    ]
    block = (folder / WEIGHTS_FILE).read_bytes()
    parameters = {name: tensor.detach().numpy() for name, tensor in shipped.model.state_dict().items()}
    embedding_offsets = set()
    compared = 0
    for graph in graphs:
        for initializer in graph.graph.initializer:
            if not initializer.external_data:
                continue
            fields = {entry.key: entry.value for entry in initializer.external_data}
            assert fields["location"] == WEIGHTS_FILE
            start, length = int(fields["offset"]), int(fields["length"])
            dtype = np.float16 if initializer.data_type == 10 else np.float32
            values = np.frombuffer(block[start : start + length], dtype=dtype).reshape(tuple(initializer.dims))
            name = initializer.name.removeprefix("model.").removesuffix(".float16")
            if name in parameters:
                assert np.array_equal(values.astype(np.float32), parameters[name]), name
                compared += 1
            if name == "embedding.weight":
                embedding_offsets.add(start)
    assert compared  # some weights keep the checkpoint's names, and those were compared
    assert len(embedding_offsets) == 1
    parameter_bytes = 2 * shipped.model.num_parameters()
    assert parameter_bytes <= len(block) < parameter_bytes + 1.2e6  # + the float32 positional table


def test_a_model_is_exported_once_and_its_files_copied_after(tmp_path, monkeypatch):
    """The second export of the same model copies the cached files (no tracing); a model whose weights differ in one
    number, or whose configuration differs, has another key and is exported again."""
    torch.manual_seed(6)
    model = Transformer(preset("tiny")).eval()
    loaded = SimpleNamespace(model=model)
    cache = tmp_path / "cache"
    first = write_graphs(loaded, tmp_path / "first", cache)
    monkeypatch.setattr(web, "onnx_graphs", lambda model: pytest.fail("exported again"))
    second = write_graphs(loaded, tmp_path / "second", cache)
    for name in ("encoder.onnx", "decoder.onnx", WEIGHTS_FILE):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert [folder.name for folder in (cache / "graphs").iterdir()] == [web.graphs_key(model)]  # nothing half-written

    key = web.graphs_key(model)
    with torch.no_grad():
        model.embedding.weight[3, 1] += 1.0
    assert web.graphs_key(model) != key
    with pytest.raises(pytest.fail.Exception, match="exported again"):
        write_graphs(loaded, tmp_path / "third", cache)
    assert web.graphs_key(Transformer(preset("tiny")).eval()) != web.graphs_key(model)  # other weights
    other = Transformer(replace(preset("tiny"), dropout=0.0)).eval()
    other.load_state_dict(model.state_dict())
    assert web.graphs_key(other) != web.graphs_key(model)  # the same weights, another configuration


def test_export_refuses_to_overwrite_and_names_what_it_cannot_export(tmp_path, capsys):
    existing = tmp_path / "explorer.html"
    existing.write_text("kept")
    assert main(["web", "--out", str(existing)]) == 1
    assert "exists" in capsys.readouterr().err and existing.read_text() == "kept"
    with pytest.raises(WebExportError, match="heads are switched off"):
        model = Transformer(preset("tiny"))
        factors = torch.ones(model.config.encoder_layers, model.config.num_heads)
        factors[0, 0] = 0
        with model.head_mask({"encoder": factors}):
            onnx_graphs(model)


@pytest.fixture(scope="module")
def explorer(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("web") / "explorer.html"
    assert main(["web", "--out", str(out)]) == 0
    return out


@needs_npm
def test_the_file_holds_everything_and_asks_for_nothing(explorer):
    html = explorer.read_text(encoding="utf-8")
    assert explorer.stat().st_size < 60e6
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in policy and "connect-src data: blob:" in policy
    assert not re.search(r"""(?:src|href)=["']https?:""", html)
    data = json.loads(re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html).group(1))
    assert set(data["strings"]) == {"en", "ko"} and data["strings"]["ko"]["web.translate"] == "번역"


@needs_browser
@needs_npm
def test_the_file_translates_as_the_python_model_does(browser, explorer, shipped):
    """30 tatoeba_new sentences (benchmarks/web_explorer.py measures 200): greedy ≥ 29 and beam 4 ≥ 28 identical,
    attention within 1e-3; nothing fetched."""
    page, _, refused = open_explorer(browser, explorer)
    result = measure(shipped, page, sentences("tatoeba_new", 30))
    assert result["same_source_ids"] == 30
    assert result["same_greedy"] >= 29, result["mismatches"]
    assert result["same_beam"] >= 28, result["mismatches"]
    assert result["largest_attention_difference"] < 1e-3
    assert refused == []
    page.context.close()


@needs_browser
@needs_npm
def test_the_files_tokenizer_is_the_projects_on_hostile_text(browser, explorer, shipped):
    page, _, refused = open_explorer(browser, explorer)
    texts = token_sentences(1000)
    found = page_ids(page, texts)
    different = [text for text, ids in zip(texts, found, strict=True) if ids != shipped.tokenizer.encode(text)]
    assert different == []
    assert refused == []
    page.context.close()


TRANSLATE_MS = 120_000  # the file translates on the page's own thread: a click returns once its search has run


def _translate(page, text: str) -> None:
    page.fill("#sentence", text)
    page.click("#translate", timeout=TRANSLATE_MS)
    page.wait_for_function(
        "document.querySelector('#timing').textContent.length > 0 && !document.querySelector('#translate').disabled",
        timeout=TRANSLATE_MS,
    )


@needs_browser
@needs_npm
def test_bad_input_gets_a_message_and_the_page_goes_on(browser, explorer):
    page, _, _ = open_explorer(browser, explorer)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.fill("#sentence", "   ")
    page.click("#translate")
    assert page.inner_text("#status") == "Type a sentence first."
    _translate(page, "Ich 😀 liebe 한국어 und 中文! </script><img src=x onerror=alert(1)>")
    assert page.inner_text("#beam-output").strip()
    assert page.locator("#results img").count() == 0
    _translate(page, "the cat sees the dog. " * 100)  # 2,200 characters
    notes = page.inner_text("#notes")
    assert f"first {MAX_CHARACTERS} characters" in notes and "cut to 96 tokens" in notes
    assert errors == []
    page.context.close()
    page, _, _ = open_explorer(browser, explorer, init_script="delete window.WebAssembly;")
    page.wait_for_function("document.querySelector('#status').textContent.length > 0")
    assert "WebAssembly" in page.inner_text("#status")
    assert page.locator("#translate").is_disabled()
    page.context.close()


@needs_browser
@needs_npm
def test_a_visitors_choices_survive_reload_and_a_shared_link(browser, explorer):
    page, _, _ = open_explorer(browser, explorer)
    _translate(page, "The law will never be perfect, but its application should be just.")
    translation = page.inner_text("#beam-output")
    page.click("#kinds button[data-kind=encoder]")
    page.locator("#grid canvas").nth(4 * 8 + 2).click()  # layer 5, head 3
    assert page.inner_text("#head-title") == "Encoder self-attention: layer 5, head 3"
    page.locator("#grid canvas").nth(1).focus()
    page.keyboard.press("Enter")
    assert page.inner_text("#head-title") == "Encoder self-attention: layer 1, head 2"
    page.select_option("#layer", "4")
    page.click("#languages button[data-language=ko]")
    assert page.inner_text("#head-title").startswith("인코더") and "5층, 헤드 2" in page.inner_text("#head-title")
    link = page.url
    page.reload()
    page.wait_for_selector("#results:not([hidden])")
    assert page.inner_text("#head-title").endswith("5층, 헤드 2") and page.inner_text("#beam-output") == translation
    page.context.close()
    fresh, _, _ = open_explorer(browser, explorer, fragment=link.partition("#")[2])
    fresh.wait_for_selector("#results:not([hidden])", timeout=60_000)
    assert fresh.inner_text("#beam-output") == translation
    assert fresh.input_value("#sentence").startswith("The law will never be perfect")
    assert fresh.locator("#layer").input_value() == "4" and fresh.locator("#head").input_value() == "1"
    fresh.context.close()


@needs_browser
@needs_npm
def test_html_in_a_shared_link_and_messages_from_other_windows_change_nothing(browser, explorer):
    """A link whose hash carries markup in every field, and a message from a window that does not embed the
    explorer: no element, script or language they name; the text shows as text."""
    from urllib.parse import quote

    payload = '<img src=x onerror="window.__pwned=1"><svg onload="window.__pwned=1">'
    fragment = f"text={quote(payload)}&kind={quote(payload)}&layer=2.5&head=1e300&lang=__proto__"
    page, _, refused = open_explorer(browser, explorer, fragment=fragment)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.click("#translate")
    page.wait_for_function("document.querySelector('#timing').textContent.length > 0")
    assert page.input_value("#sentence") == payload
    assert page.evaluate("document.documentElement.lang") == "en"
    shown = page.inner_text("#head-title")
    page.evaluate(  # the window itself is no embedding lesson: ignored
        "window.postMessage({type: 'explorer-show', text: 'Other text.', kind: 'encoder', layer: 2.5, head: 1,"
        " language: 'constructor'}, '*')"
    )
    page.wait_for_timeout(500)
    assert page.input_value("#sentence") == payload and page.inner_text("#head-title") == shown
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img, iframe, svg[onload]").count() == 0
    assert errors == [] and refused == []
    page.context.close()


def test_on_the_apps_install_the_export_names_the_extra_it_needs(
    trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    # The README's quick start installs ".[app]", which leaves the ONNX exporter out: as if it were not installed.
    monkeypatch.setitem(sys.modules, "onnxscript", None)
    out = tmp_path / "explorer.html"
    assert main(["web", "--checkpoint", str(trained_checkpoint), "--out", str(out)]) != 0
    said = capsys.readouterr()
    assert 'pip install -e ".[web]"' in said.err + said.out and "Traceback" not in said.err
    assert len((said.err + said.out).strip().splitlines()) == 1 and not out.exists()
