"""Measurements stored beside a checkpoint: used for exactly the weights they were made on, ignored otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from safetensors.torch import load_file, save_file
from streamlit.testing.v1 import AppTest

from tests.conftest import no_exceptions
from transformer.analysis import precompute
from transformer.analysis.score_tables import HeadScoreTables
from transformer.formats.checkpoint import load_checkpoint

PAGES = Path(__file__).resolve().parent.parent / "pages"


def test_stored_measurements_round_trip_and_follow_the_weights(trained_checkpoint: Path, tmp_path: Path):
    folder = shutil.copytree(trained_checkpoint, tmp_path / "model")
    (folder / precompute.PRECOMPUTED_FILE).unlink(missing_ok=True)
    loaded = load_checkpoint(folder)
    assert precompute.read(loaded) is None
    measured = precompute.measure_all(loaded, sample=5)
    precompute.write(loaded, measured)
    stored = precompute.read(loaded)
    assert stored is not None and stored.sample == 5 and stored.translations == measured.translations
    # Equal value for value; a measure with nothing to count (no dictionary word in the sample) is NaN on both sides.
    np.testing.assert_equal(stored.tables.as_dict(), measured.tables.as_dict())
    np.testing.assert_equal(stored.point.metrics, measured.point.metrics)
    for number in (3, 4):
        assert np.allclose(stored.point.attention[number].weights, measured.point.attention[number].weights, atol=1e-3)
    assert stored.tables.kinds == ("encoder", "decoder", "cross")
    # Other weights in the same folder: the stored numbers are not theirs.
    weights = load_file(str(folder / "model.safetensors"))
    name = next(iter(weights))
    weights[name] = weights[name] + 1
    save_file(weights, str(folder / "model.safetensors"))
    assert precompute.read(load_checkpoint(folder)) is None
    # A damaged file is ignored, not raised.
    (folder / precompute.PRECOMPUTED_FILE).write_bytes(b"\x00" * 64)
    assert precompute.read(load_checkpoint(folder)) is None


def test_measurements_stored_in_an_older_format_are_measured_again(
    trained_checkpoint: Path, tmp_path: Path, monkeypatch
):
    """A file from before the decoder's head scores (format 1) would open Head discovery without them."""
    folder = shutil.copytree(trained_checkpoint, tmp_path / "model")
    loaded = load_checkpoint(folder)
    measured = precompute.measure_all(loaded, sample=3)
    monkeypatch.setattr(precompute, "FORMAT", "1")
    precompute.write(loaded, measured)
    assert precompute.read(loaded) is not None
    monkeypatch.undo()
    assert precompute.read(loaded) is None


def test_default_head_prefers_a_well_aligned_cross_head_then_the_sharpest_encoder_head():
    entropy = np.array([[3.0, 2.0], [0.5, 2.5]])
    scores = {"encoder": {"entropy": entropy}, "cross": {"alignment_dictionary": np.array([[0.1, 0.2], [0.45, 0.3]])}}
    tables = HeadScoreTables("2 sentences", 2, 0, scores)
    assert precompute.default_head(tables) == ("cross", 1, 0)
    scores["cross"]["alignment_dictionary"] = np.array(
        [[0.1, 0.2], [0.05, 0.1]]
    )  # none aligns: the sharpest encoder head
    assert precompute.default_head(tables) == ("encoder", 1, 0)


def test_the_first_visit_of_a_figure_page_stores_what_it_measured(trained_checkpoint: Path, tmp_path, monkeypatch):
    folder = shutil.copytree(trained_checkpoint, tmp_path / "model")
    (folder / precompute.PRECOMPUTED_FILE).unlink(missing_ok=True)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    app = AppTest.from_file(str(PAGES / "paper_figures.py"), default_timeout=120).run()
    no_exceptions(app)
    stored = precompute.read(load_checkpoint(folder))
    assert stored is not None and stored.sample == precompute.SAMPLE
    assert any(stored.translations[3] in markdown.value for markdown in app.markdown)
