"""Translations searched in a child process (transformer.serving.process): the same translations and attention
as in the server's own process, for any text; a child that fails, ends or loaded other weights is noticed, and the
server's translator goes on in its own process and starts a new child."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis.attention import KINDS, translate_many_with_attention
from transformer.formats.checkpoint import LoadedCheckpoint, load_checkpoint
from transformer.search.decode import DecodingOptions
from transformer.serving import translator as serving
from transformer.serving.process import (
    ANSWER,
    HEADER,
    TranslationProcess,
    TranslationProcessError,
    decode_translations,
    read_frame,
)

pytestmark = pytest.mark.server

TEXTS = [
    "the small cat sees the big dog.",
    "",
    "שלום עולם ‮ <script>alert(1)</script> e\u0301\u0301",
    "lone \ud800 surrogate \x00\x07 control",
    "the dog " * 400,
]


@pytest.fixture
def loaded(trained_checkpoint: Path) -> LoadedCheckpoint:
    return load_checkpoint(trained_checkpoint)


def test_the_child_translates_exactly_as_the_server_would(loaded: LoadedCheckpoint):
    options = DecodingOptions(beam_size=3, alpha=0.4)
    with TranslationProcess(loaded.path, loaded.model, threads=torch.get_num_threads()) as child:
        theirs = child.translate_many(TEXTS, options, max_tokens=64)
    ours = translate_many_with_attention(loaded.model, loaded.tokenizer, TEXTS, options, max_tokens=64)
    assert len(theirs) == len(TEXTS)
    for child_translation, own in zip(theirs, ours, strict=True):
        assert child_translation.source_text == own.source_text  # the text itself, lone surrogate included
        assert child_translation.translation == own.translation
        assert (child_translation.source_ids, child_translation.output_ids) == (own.source_ids, own.output_ids)
        assert (child_translation.truncated, child_translation.read_text) == (own.truncated, own.read_text)
        assert child_translation.options == options
        for name in ("source_tokens", "target_tokens", "predicted_tokens"):
            assert getattr(child_translation.maps, name) == getattr(own.maps, name)
        for kind in KINDS:
            np.testing.assert_allclose(getattr(child_translation.maps, kind), getattr(own.maps, kind), atol=1e-6)
    assert theirs[-1].truncated  # the long text was cut to what the model reads, there as here


def test_a_child_that_loaded_other_weights_is_refused(loaded: LoadedCheckpoint):
    with torch.no_grad():
        loaded.model.embedding.weight[5, 0] += 1.0  # the server's model no longer matches the folder
    with pytest.raises(TranslationProcessError, match="other weights"):
        TranslationProcess(loaded.path, loaded.model)


def test_a_child_that_cannot_load_says_why(loaded: LoadedCheckpoint, tmp_path: Path):
    with pytest.raises(TranslationProcessError, match="could not start.*missing"):
        TranslationProcess(tmp_path / "missing", loaded.model)


def test_an_ended_child_is_noticed_and_never_answers_again(loaded: LoadedCheckpoint):
    child = TranslationProcess(loaded.path, loaded.model)
    child._process.kill()
    with pytest.raises(TranslationProcessError, match="ended"):
        child.translate_many(TEXTS[:1])
    assert not child.alive
    with pytest.raises(TranslationProcessError):
        child.translate_many(TEXTS[:1])


def test_closing_ends_the_child(loaded: LoadedCheckpoint):
    child = TranslationProcess(loaded.path, loaded.model)
    child.close()
    assert child._process.returncode == 0  # it saw its input close and returned


def test_unreadable_frames_are_an_error_not_an_allocation():
    huge = io.BytesIO(HEADER.pack(ANSWER, 1 << 60))
    with pytest.raises(TranslationProcessError, match="not a frame"):
        read_frame(huge)
    with pytest.raises(TranslationProcessError, match="unreadable"):
        decode_translations(b"\x00" * 3, DecodingOptions())
    header = b'{"translations": [], "array_bytes": 12}'
    with pytest.raises(TranslationProcessError, match="unreadable"):  # fewer array bytes than the header says
        decode_translations(struct.pack("<Q", len(header)) + header + b"\x00" * 4, DecodingOptions())


def test_the_translator_uses_the_child_and_carries_on_when_it_fails(loaded: LoadedCheckpoint, monkeypatch):
    entered = []

    class Around:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *_):
            return False

    translator = serving.Translator(loaded, around_batch=Around, separate_process=True)
    try:
        if translator.process is None:  # until the child is ready, this process translates
            assert "process" not in translator.translate(TEXTS[0]).seconds
        deadline = 120
        while translator.process is None and deadline > 0:
            translator._starting.join(timeout=1)
            deadline -= 1
        assert translator.process is not None, translator.process_failures
        entered.clear()
        expected = translate_many_with_attention(loaded.model, loaded.tokenizer, TEXTS[:1])[0]
        first = translator.translate(TEXTS[0])
        assert "process" in first.seconds and first.translation == expected.translation
        assert not entered  # the pages were not held for the child's search

        monkeypatch.setattr(serving, "RESTART_SECONDS", 0.0)
        translator.process._process.kill()
        second = translator.translate(TEXTS[0])  # searched here instead, and a new child is started
        assert second.translation == expected.translation and "process" not in second.seconds
        assert entered and "ended" in translator.process_failures[-1]
        translator._starting.join(timeout=120)
        assert translator.process is not None and translator.process.alive
        assert "process" in translator.translate(TEXTS[0]).seconds
    finally:
        translator.close()


SERVER_ENDS_WHILE_STARTING = """
import sys, threading, time
import torch
from transformer.serving import process as translation_process
from transformer.serving import translator as serving
from transformer.formats.checkpoint import load_checkpoint

loaded = load_checkpoint(sys.argv[1])
checking, real, x = threading.Event(), translation_process.parameter_checksum, torch.randn(256, 256)

def slow_checksum(model):  # the start's own PyTorch work, made long enough to be under way when the server ends
    if threading.current_thread() is not threading.main_thread():
        checking.set()
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            (x @ x).sum()
    return real(model)

translation_process.parameter_checksum = slow_checksum
serving.Translator(loaded, separate_process=True)
assert checking.wait(120), "the translation process did not start"
"""


def test_a_server_that_ends_while_its_translation_process_starts_exits_cleanly(trained_checkpoint: Path):
    """A server stopped (or a test session ending) while the child is starting: the start finishes before Python
    ends, instead of Python stopping its thread inside PyTorch, which aborts the whole process ('terminate called
    without an active exception', exit status 134)."""
    command = [sys.executable, "-c", SERVER_ENDS_WHILE_STARTING, str(trained_checkpoint)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "terminate called" not in finished.stderr
