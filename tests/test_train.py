"""The trainer end to end on a synthetic corpus: learning, exact resumption, signals, torchrun, and the CLIs."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import train_arguments
from transformer.cli import checkpoint as checkpoint_cli
from transformer.cli import evaluate, train
from transformer.cli import translate as translate_cli
from transformer.cli.training.runtime import prefetch
from transformer.cli.training.validation import sequence_losses
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs
from transformer.paper.schedule import learning_rate

pytestmark = pytest.mark.training

REPOSITORY = Path(__file__).resolve().parents[1]


def records(run: Path, kind: str = "train") -> list[dict]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_learning_rate_follows_the_paper():
    d_model, warmup = 512, 4000
    assert learning_rate(warmup, d_model, warmup) == pytest.approx(d_model**-0.5 * warmup**-0.5)
    assert learning_rate(100, d_model, warmup) == pytest.approx(d_model**-0.5 * 100 * warmup**-1.5)
    assert learning_rate(16000, d_model, warmup) == pytest.approx(d_model**-0.5 * 16000**-0.5)
    assert learning_rate(16000, d_model, warmup, scale=2) == pytest.approx(2 * d_model**-0.5 * 16000**-0.5)

    # A cool-down leaves the schedule alone before its window and then falls linearly to 1/cooldown of it.
    paper = learning_rate(20000, d_model, warmup)
    assert learning_rate(20000, d_model, warmup, cooldown=100, last_step=20100) == pytest.approx(paper)
    assert learning_rate(20000, d_model, warmup, cooldown=100, last_step=20049) == pytest.approx(paper / 2)
    assert learning_rate(20000, d_model, warmup, cooldown=100, last_step=20000) == pytest.approx(paper / 100)
    assert learning_rate(20000, d_model, warmup, cooldown=100, last_step=19999) == 0


def test_cooldown_anneals_a_fine_tuning_run_to_its_last_step(trained_checkpoint: Path, corpus, spm_path, tmp_path):
    start = json.loads((trained_checkpoint / ckpt.META_FILE).read_text())["step"]
    run = tmp_path / "cooldown"
    extra = ("--max-steps", str(start + 4), "--init-from", str(trained_checkpoint), "--cooldown", "4")
    assert train.main(train_arguments(corpus, spm_path, run, *extra)) == 0
    # Counted from the fine-tuning's own first step: the four steps fall to a quarter of the paper's rate.
    expected = [learning_rate(k, 32, warmup=100, scale=0.5) * (5 - k) / 4 for k in (1, 2, 3, 4)]
    assert [r["lr"] for r in records(run)[-4:]] == pytest.approx(expected)
    # The cool-down's end belongs to the run: a resumption asking for more steps is held to it.
    resumed = ["--out", str(run), "--resume", "--max-steps", str(start + 9), "--progress", "lines", "--threads", "1"]
    assert train.main(resumed) == 0
    assert records(run)[-1]["step"] == start + 4


def test_label_smoothed_loss_matches_torch(tokenizer):
    import torch

    logits = torch.randn(2, 5, 11)
    target = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])
    loss, nll = sequence_losses(logits, target, 0.1)
    expected = torch.nn.functional.cross_entropy(
        logits.view(-1, 11), target.view(-1), ignore_index=0, label_smoothing=0.1, reduction="sum"
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert nll.item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits.view(-1, 11), target.view(-1), ignore_index=0, reduction="sum").item()
    )


def test_training_learns_and_logs_what_the_app_plots(trained_checkpoint: Path):
    run = trained_checkpoint.parents[1]
    steps = records(run)
    assert steps[-1]["loss"] < 0.5 * steps[0]["loss"]
    for key in ("step", "loss", "lr", "tokens_per_second", "train_hours", "wall_seconds"):
        assert key in steps[-1]
    dev = records(run, "dev")[-1]
    assert dev["step"] == 600 and dev["dev_bleu"] > 30 and dev["dev_loss"] < steps[0]["loss"]
    meta = json.loads((trained_checkpoint / ckpt.META_FILE).read_text())
    assert meta["step"] == 600 and meta["tokens_seen"] > 0


def test_interrupted_and_resumed_run_reproduces_the_losses(corpus, spm_path, tmp_path: Path):
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert train.main(train_arguments(corpus, spm_path, straight, "--max-steps", "12")) == 0
    assert train.main(train_arguments(corpus, spm_path, split, "--max-steps", "5")) == 0
    assert train.main(train_arguments(corpus, spm_path, split, "--max-steps", "12", "--resume")) == 0
    assert [r["step"] for r in records(split)] == list(range(1, 13))
    expected = [r["loss"] for r in records(straight)]
    assert [r["loss"] for r in records(split)] == pytest.approx(expected, rel=1e-6)


def test_an_existing_run_needs_resume(corpus, spm_path, tmp_path: Path, capsys):
    run = tmp_path / "run"
    assert train.main(train_arguments(corpus, spm_path, run, "--max-steps", "2")) == 0
    with pytest.raises(SystemExit, match="pass --resume"):
        train.main(train_arguments(corpus, spm_path, run, "--max-steps", "4"))
    with pytest.raises(SystemExit, match="holds no checkpoint"):
        train.main(train_arguments(corpus, spm_path, tmp_path / "empty", "--resume"))


def test_checkpoints_rotate_and_snapshots_stay(corpus, spm_path, tmp_path: Path):
    run = tmp_path / "run"
    arguments = ("--max-steps", "10", "--save-every-steps", "2", "--keep-last", "3", "--snapshot-steps", "1,4")
    assert train.main(train_arguments(corpus, spm_path, run, *arguments)) == 0
    assert [p.name for p in runs.run_checkpoints(run)] == ["step-0000006", "step-0000008", "step-0000010"]
    snapshots = sorted(p.name for p in (run / "snapshots").iterdir())
    assert snapshots == ["step-0000001", "step-0000004"]
    assert ckpt.load_checkpoint(run / "snapshots" / "step-0000004").model.embedding.weight.dtype.is_floating_point
    averaged = tmp_path / "averaged"
    assert checkpoint_cli.main(["average", str(run), "--last", "3", "--out", str(averaged), "--fp16"]) == 0
    meta = json.loads((averaged / ckpt.META_FILE).read_text())
    assert meta["averaged_checkpoints"] == ["step-0000006", "step-0000008", "step-0000010"]
    assert meta["training_args"]["keep_last"] == 3 and meta["weights_dtype"] == "float16"
    assert (averaged / ckpt.TRAINING_LOG_FILE).read_text() == (run / "metrics.jsonl").read_text()


def trainer_command(corpus, spm_path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "transformer", "train", *train_arguments(corpus, spm_path, out, *extra)]


def test_sigterm_saves_a_checkpoint_before_exiting(corpus, spm_path, tmp_path: Path):
    run = tmp_path / "run"
    process = subprocess.Popen(
        trainer_command(corpus, spm_path, run, "--max-steps", "100000"),
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not ((run / "metrics.jsonl").is_file() and len(records(run)) >= 3):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    saved = runs.run_checkpoints(run)
    assert len(saved) == 1
    step = json.loads((saved[0] / ckpt.META_FILE).read_text())["step"]
    assert step >= 3 and f"interrupted at step {step}" in output and "--resume" in output


def test_two_process_torchrun_trains_a_loadable_checkpoint(corpus, spm_path, tmp_path: Path):
    run = tmp_path / "ddp"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "transformer",
        "train",
        *train_arguments(corpus, spm_path, run, "--max-steps", "6"),
    ]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 process(es)" in result.stdout
    loaded = ckpt.load_checkpoint(runs.run_checkpoints(run)[-1])
    assert loaded.meta["step"] == 6 and loaded.meta["processes"] == 2
    assert [r["step"] for r in records(run)] == list(range(1, 7))


def test_translate_cli_keeps_lines_aligned(trained_checkpoint: Path, monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("the cat sees the dog.\n\nthe red house.\n"))
    assert translate_cli.main(["--checkpoint", str(trained_checkpoint), "--beam", "2"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert "katze" in lines[0] and "haus" in lines[2]


def test_evaluate_cli_reports_bleu_chrf_and_health_as_json(trained_checkpoint: Path, corpus, tmp_path: Path, capsys):
    arguments = [
        "--checkpoint",
        str(trained_checkpoint),
        "--src",
        f"{corpus['dev']}.en",
        "--ref",
        f"{corpus['dev']}.de",
    ]
    assert evaluate.main([*arguments, "--limit", "20", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 20 and result["beam"] == 4
    assert 30 < result["bleu"] <= 100 and 0 < result["chrf"] <= 100
    assert result["bleu_signature"].startswith("nrefs:1|") and "tok:13a" in result["bleu_signature"]
    assert result["chrf_signature"].startswith("nrefs:1|") and "nc:6" in result["chrf_signature"]
    # The model's health comes with the scores (tiny: 2 layers), unless --no-health.
    assert len(result["encoder_position_cosine"]) == 2 and len(result["cross_entropy_normalised"]) == 2
    assert result["cross_alignment_best"] is None or 0 <= result["cross_alignment_best"] <= 1
    assert result["bootstrap"] == 1000 and 0 < result["bleu_ci"] < 50  # sacreBLEU's 95% interval, half its width
    assert evaluate.main([*arguments, "--limit", "5", "--beam", "1", "--json", "--no-health"]) == 0
    assert "encoder_position_cosine" not in json.loads(capsys.readouterr().out)
    # Against another system on the same sentences: the difference with its paired interval and a p-value.
    worse = tmp_path / "worse.de"
    worse.write_text("".join("das\n" for _ in range(20)), encoding="utf-8")
    assert evaluate.main([*arguments, "--limit", "20", "--json", "--no-health", "--compare", str(worse)]) == 0
    compared = json.loads(capsys.readouterr().out)["compare"]
    assert compared["difference"] > 0 and compared["low"] > 0 and compared["p"] < 0.05
    worse.write_text("das\n", encoding="utf-8")
    assert evaluate.main([*arguments, "--limit", "20", "--no-health", "--compare", str(worse)]) == 1
    assert "1 lines for 20 sentences" in capsys.readouterr().err


def test_evaluate_records_scores_in_the_checkpoint(trained_checkpoint: Path, corpus, tmp_path: Path, capsys):
    shipped = runs.export(trained_checkpoint, tmp_path / "shipped")
    arguments = ["--checkpoint", str(shipped), "--src", f"{corpus['dev']}.en", "--ref", f"{corpus['dev']}.de"]
    assert evaluate.main([*arguments, "--beam", "1", "--limit", "10", "--json", "--record"]) == 0
    result = json.loads(capsys.readouterr().out)
    scores = ckpt.load_checkpoint(shipped).meta["scores"]
    assert scores["words[:10] beam1"]["bleu"] == result["bleu"] and scores["words[:10] beam1"]["sentences"] == 10


def test_cli_on_a_broken_checkpoint_prints_one_line(trained_checkpoint: Path, tmp_path: Path, capsys):
    broken = tmp_path / "broken"
    runs.export(trained_checkpoint, broken)
    (broken / ckpt.MODEL_FILE).write_bytes(b"")
    assert translate_cli.main(["--checkpoint", str(broken)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1 and "model.safetensors" in error


def test_init_from_continues_from_a_shipped_checkpoint(trained_checkpoint: Path, corpus, spm_path, tmp_path: Path):
    shipped = runs.export(trained_checkpoint, tmp_path / "shipped")
    parent = json.loads((shipped / ckpt.META_FILE).read_text())
    run = tmp_path / "fine-tune"
    start = parent["step"]
    arguments = train_arguments(corpus, spm_path, run, "--max-steps", str(start + 3), "--init-from", str(shipped))
    assert train.main(arguments) == 0
    steps = records(run)
    # The parent's log opens this run's log; then one "init" record; then the new steps, counted on.
    logged = [r["step"] for r in records(trained_checkpoint.parents[1]) if r["step"] <= start]
    assert len(logged) > 1 and [r["step"] for r in steps] == [*logged, start + 1, start + 2, start + 3]
    assert records(run, "init")[0]["step"] == start and records(run, "init")[0]["checkpoint"] == str(shipped)
    # A model starting from trained weights begins far below a fresh model's loss (≈ ln of the vocabulary).
    assert steps[len(logged)]["loss"] < 0.5 * steps[0]["loss"]
    # The schedule warms up again from its first step.
    assert steps[len(logged)]["lr"] == pytest.approx(learning_rate(1, 32, warmup=100, scale=0.5))
    meta = json.loads((runs.run_checkpoints(run)[-1] / ckpt.META_FILE).read_text())
    assert meta["step"] == start + 3 and meta["tokens_seen"] > parent["tokens_seen"]
    assert meta["fine_tuned_from"] == {"checkpoint": str(shipped), "step": start, "data": parent["data"]}

    resumed = ["--out", str(run), "--resume", "--max-steps", str(start + 4), "--progress", "lines", "--threads", "1"]
    assert train.main(resumed) == 0
    assert records(run)[-1]["step"] == start + 4
    assert records(run)[-1]["lr"] == pytest.approx(learning_rate(4, 32, warmup=100, scale=0.5))


def test_fine_tuning_may_change_dropout_but_not_shape(trained_checkpoint: Path, corpus, spm_path, tmp_path, capsys):
    start = json.loads((trained_checkpoint / ckpt.META_FILE).read_text())["step"]
    run = tmp_path / "regularised"
    extra = ("--max-steps", str(start + 2), "--init-from", str(trained_checkpoint), "--dropout", "0.3")
    assert train.main(train_arguments(corpus, spm_path, run, *extra)) == 0
    saved = ckpt.load_config(runs.run_checkpoints(run)[-1])
    assert saved.dropout == 0.3 and saved.d_model == ckpt.load_config(trained_checkpoint).d_model
    # The weights were loaded despite the new rate: the loss starts near the parent's (dropout 0.3 raises it), far
    # below a fresh model's (≈ ln of the vocabulary).
    parent_loss = records(trained_checkpoint.parents[1])[-1]["loss"]
    assert records(run)[-2]["loss"] < 2 * parent_loss

    # Another shape is refused with one line naming the file.
    other = tmp_path / "other-shape"
    shutil.copytree(trained_checkpoint, other)
    config = json.loads((other / ckpt.CONFIG_FILE).read_text())
    (other / ckpt.CONFIG_FILE).write_text(json.dumps({**config, "d_ff": config["d_ff"] * 2}))
    capsys.readouterr()
    extra = ("--max-steps", "2", "--init-from", str(other))
    assert train.main(train_arguments(corpus, spm_path, tmp_path / "refused", *extra)) != 0
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "config.json" in error and "does not match" in error


def test_resume_keeps_the_runs_settings_unless_overridden(corpus, spm_path, tmp_path: Path):
    run = tmp_path / "run"
    assert train.main(train_arguments(corpus, spm_path, run, "--max-steps", "3", "--snapshot-steps", "2,5")) == 0
    # A run saved before newer arguments existed still resumes (its trainer.json lacks them).
    last = runs.run_checkpoints(run)[-1] / ckpt.TRAINER_FILE
    trainer = json.loads(last.read_text())
    del trainer["args"]["init_from"]
    last.write_text(json.dumps(trainer))
    resumed = [
        "--out",
        str(run),
        "--resume",
        "--max-steps",
        "6",
        "--save-every-steps",
        "1",
        "--keep-last",
        "10",
        "--progress",
        "lines",
        "--threads",
        "1",
    ]
    assert train.main(resumed) == 0
    assert sorted(p.name for p in (run / "snapshots").iterdir()) == ["step-0000002", "step-0000005"]
    steps = [p.name for p in runs.run_checkpoints(run)]
    assert steps == ["step-0000003", "step-0000004", "step-0000005", "step-0000006"]


def test_prefetch_keeps_order_and_passes_errors_on():
    def items():
        yield from range(50)
        raise ValueError("corpus went away")

    stream = prefetch(items(), depth=4)
    assert [next(stream) for _ in range(50)] == list(range(50))
    with pytest.raises(ValueError, match="corpus went away"):
        next(stream)


def test_prefetch_stops_making_items_when_the_consumer_stops():
    """A run that ends early leaves no thread making batches (one still inside PyTorch when Python ends would abort
    the process)."""
    made = []

    def items():
        for i in itertools.count():
            made.append(i)
            yield torch.full((4,), i)

    stream = prefetch(items(), depth=4)
    assert [int(next(stream)[0]) for _ in range(3)] == [0, 1, 2]
    stream.close()
    assert not any(thread.name == "batches" for thread in threading.enumerate())
    count = len(made)
    time.sleep(0.3)
    assert len(made) == count <= 3 + 4 + 1  # what was queued, and the one being put when it stopped
