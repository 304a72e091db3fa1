"""Checkpoint folders: round trip, fp16 export, averaging, and one-line errors for broken files."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
import torch

from transformer.cli import checkpoint as checkpoint_cli
from transformer.cli.evaluate import record_scores
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs
from transformer.paper.config import preset
from transformer.paper.model import Transformer


@pytest.fixture()
def saved(tmp_path: Path, tokenizer) -> tuple[Path, Transformer]:
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=tokenizer.vocab_size)).eval()
    path = ckpt.save_checkpoint(
        tmp_path / "model", ckpt.state_dict_for_saving(model), model.config, tokenizer, {"step": 7}
    )
    return path, model


def outputs(model: Transformer) -> torch.Tensor:
    source = torch.tensor([[5, 6, 7, 3]])
    target = torch.tensor([[2, 8, 9]])
    return model(source, target).logits


def test_round_trip_gives_the_same_model(saved):
    path, model = saved
    loaded = ckpt.load_checkpoint(path)
    assert loaded.meta == {"step": 7}
    assert loaded.config == model.config
    assert torch.equal(outputs(loaded.model), outputs(model))
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "meta.json", "model.safetensors", "spm.model"]


def test_fp16_export_is_half_the_size_and_close(saved, tmp_path: Path):
    path, model = saved
    exported = runs.export(path, tmp_path / "shipped")
    size = (exported / ckpt.MODEL_FILE).stat().st_size
    assert size < 0.55 * (path / ckpt.MODEL_FILE).stat().st_size
    loaded = ckpt.load_checkpoint(exported)
    assert loaded.meta["weights_dtype"] == "float16"
    assert torch.allclose(outputs(loaded.model), outputs(model), atol=2e-2)


def test_export_records_no_folder_of_the_training_machine(saved, tmp_path: Path):
    path, _ = saved
    meta = {
        "step": 7,
        "data": [
            "/srv/alice/data/en-de/train/tatoeba:2",
            "D:\\corpora\\data\\en-de\\train\\chat",
            "../alice/data/en-de/train/news:3",
            "runs/part7",
        ],
        "fine_tuned_from": {"checkpoint": "/srv/alice/candidates/ft2", "step": 3},
        "note": "a sentence / with a slash",
    }
    ckpt.write_json(path / ckpt.META_FILE, meta)
    log = '{"kind": "init", "step": 0, "dev": "/srv/alice/data/en-de/dev/newstest2013"}\n{"step": 5, "loss": 2.0}\n'
    (path / ckpt.METRICS_FILE).write_text(log, encoding="utf-8")
    exported = runs.export(path, tmp_path / "shipped")
    written = (exported / ckpt.META_FILE).read_text() + (exported / ckpt.TRAINING_LOG_FILE).read_text()
    assert "alice" not in written and "corpora" not in written
    shipped = ckpt.read_json(exported / ckpt.META_FILE)
    # relative paths that climb out of the working folder name it too; those below it do not
    assert shipped["data"] == ["en-de/train/tatoeba:2", "en-de/train/chat", "en-de/train/news:3", "runs/part7"]
    assert shipped["fine_tuned_from"] == {"checkpoint": "ft2", "step": 3}
    assert shipped["note"] == "a sentence / with a slash"
    assert "en-de/dev/newstest2013" in written


def test_averaging_is_the_element_wise_mean(saved, tmp_path: Path, tokenizer):
    path, model = saved
    torch.manual_seed(1)
    other = Transformer(model.config)
    other_path = ckpt.save_checkpoint(
        tmp_path / "other", ckpt.state_dict_for_saving(other), model.config, tokenizer, {}
    )
    averaged = ckpt.load_checkpoint(runs.export(path, tmp_path / "avg", [path, other_path], fp16=False))
    expected = (
        model.encoder_layers[0].feed_forward.inner.weight + other.encoder_layers[0].feed_forward.inner.weight
    ) / 2
    assert torch.allclose(averaged.model.encoder_layers[0].feed_forward.inner.weight, expected, atol=1e-7)


def test_truncated_weights_give_a_one_line_error(saved, capsys):
    path, _ = saved
    data = (path / ckpt.MODEL_FILE).read_bytes()
    (path / ckpt.MODEL_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(ckpt.CheckpointError, match=r"model\.safetensors: not a readable safetensors file"):
        ckpt.load_checkpoint(path)
    assert checkpoint_cli.main(["info", str(path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "model.safetensors" in error and "Traceback" not in error


def test_garbage_header_gives_the_error(saved):
    path, _ = saved
    (path / ckpt.MODEL_FILE).write_bytes(b"\xff" * 64)
    with pytest.raises(ckpt.CheckpointError, match="model.safetensors"):
        ckpt.load_checkpoint(path)


@pytest.mark.parametrize("name", [ckpt.MODEL_FILE, ckpt.CONFIG_FILE, ckpt.TOKENIZER_FILE])
def test_missing_file_is_named(saved, name):
    path, _ = saved
    (path / name).unlink()
    with pytest.raises(ckpt.CheckpointError, match=rf"{name}: .*(missing|not found)"):
        ckpt.load_checkpoint(path)


def test_config_that_does_not_match_the_weights_is_named(saved):
    path, model = saved
    (path / ckpt.CONFIG_FILE).write_text(model.config.replace(d_ff=128).to_json())
    with pytest.raises(ckpt.CheckpointError, match=r"tensor .*inner.weight has shape \(64, 32\) but config.json"):
        ckpt.load_checkpoint(path)


def test_corrupt_config_json_is_named(saved):
    path, _ = saved
    (path / ckpt.CONFIG_FILE).write_text("{ not json")
    with pytest.raises(ckpt.CheckpointError, match="config.json: not valid JSON"):
        ckpt.load_checkpoint(path)


def test_unknown_checkpoint_name_lists_what_exists(tmp_path):
    with pytest.raises(ckpt.CheckpointError, match="no-such-model: no such checkpoint folder"):
        ckpt.load_checkpoint("no-such-model")


@pytest.mark.parametrize("name", ["a" * 600, "org/" + "b" * 300, "x/" * 3000])
def test_a_name_the_file_system_refuses_is_no_such_checkpoint(name):
    # Typed into What if's "another checkpoint" box: the page must say so, not crash on "File name too long".
    with pytest.raises(ckpt.CheckpointError, match="no such checkpoint folder"):
        ckpt.load_checkpoint(name)


def test_saving_over_an_existing_checkpoint_replaces_it_whole(saved, tokenizer):
    path, model = saved
    ckpt.save_checkpoint(path, ckpt.state_dict_for_saving(model), model.config, tokenizer, {"step": 8})
    assert ckpt.load_checkpoint(path).meta == {"step": 8}
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


def test_an_interrupted_save_leaves_the_previous_checkpoint_intact(saved, tokenizer, monkeypatch):
    path, model = saved

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ckpt, "write_json", crash)
    with pytest.raises(OSError):
        ckpt.save_checkpoint(path, ckpt.state_dict_for_saving(model), model.config, tokenizer, {"step": 9})
    assert ckpt.load_checkpoint(path).meta == {"step": 7}


def test_sharded_export_loads_as_the_same_model(saved, tmp_path: Path, capsys):
    path, _ = saved
    out = tmp_path / "sharded"
    assert checkpoint_cli.main(["average", str(path), "--out", str(out), "--fp16", "--shard-mb", "0.03"]) == 0
    shards = sorted(p.name for p in out.glob("model-*.safetensors"))
    assert len(shards) > 1 and not (out / ckpt.MODEL_FILE).exists()
    assert all((out / name).stat().st_size <= 0.03 * 2**20 + 2**13 for name in shards)  # tensors + header
    whole = tmp_path / "whole"
    assert checkpoint_cli.main(["average", str(path), "--out", str(whole), "--fp16"]) == 0
    assert torch.equal(outputs(ckpt.load_checkpoint(out).model), outputs(ckpt.load_checkpoint(whole).model))
    (out / shards[1]).unlink()
    with pytest.raises(ckpt.CheckpointError, match=shards[1]):
        ckpt.load_checkpoint(out)


def test_evaluations_recording_at_once_keep_every_score(tmp_path: Path):
    """Two evaluations of one checkpoint (two test sets in parallel) each write their score into its meta.json;
    neither may lose the other's."""
    if sys.platform == "win32":
        pytest.skip("Windows has no flock; there the scores are recorded unlocked")
    signature = {"bleu_signature": "b", "chrf_signature": "c", "alpha": 0.6, "sentences": 1, "limit": None, "beam": 4}

    def record(worker: int) -> None:
        for index in range(20):
            result = {"src": f"set{worker}_{index}.en", "bleu": worker, "chrf": index, **signature}
            record_scores(tmp_path, result)

    workers = [threading.Thread(target=record, args=(worker,)) for worker in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    scores = ckpt.read_json(tmp_path / ckpt.META_FILE)["scores"]
    assert len(scores) == 6 * 20
    assert scores["set3_7 beam4"]["bleu"] == 3 and scores["set3_7 beam4"]["chrf"] == 7
