"""Training that gets interrupted the hard way: ``kill -9`` at random moments (checkpoint writes included) and a disk
that fills up while a checkpoint is written. Nothing written before is lost, ``--resume`` starts from the last
complete checkpoint, and the losses after resuming are those of a run that was never interrupted."""

from __future__ import annotations

import errno
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import train_arguments
from transformer.cli import train
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs

pytestmark = pytest.mark.training

REPOSITORY = Path(__file__).resolve().parents[1]
STEPS = 24


def losses(run: Path) -> dict[int, float]:
    return {
        record["step"]: record["loss"]
        for record in runs.read_metrics(run / "metrics.jsonl")
        if record.get("kind") == "train"
    }


def leftovers(run: Path) -> list[str]:
    return sorted(path.name for path in (run / "checkpoints").glob(".*")) if (run / "checkpoints").is_dir() else []


@pytest.fixture(scope="module")
def straight(corpus, spm_path, tmp_path_factory) -> dict[int, float]:
    """The losses of a run that is never interrupted (the same arguments as the interrupted ones)."""
    run = tmp_path_factory.mktemp("straight") / "run"
    assert train.main(train_arguments(corpus, spm_path, run, "--max-steps", str(STEPS))) == 0
    return losses(run)


@pytest.mark.slow
def test_kill_9_at_random_moments_then_resume_gives_the_uninterrupted_losses(corpus, spm_path, tmp_path, straight):
    run = tmp_path / "run"
    arguments = train_arguments(corpus, spm_path, run, "--max-steps", str(STEPS), "--save-every-steps", "1")
    command = [sys.executable, "-m", "transformer", "train", *arguments]
    moments = random.Random(7)
    kills = 0
    for attempt in range(8):
        resume = ["--resume"] if runs.run_checkpoints(run) else []
        process = subprocess.Popen(
            [*command, *resume], cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        if attempt < 4:
            # A random number of steps in, at a random moment of that step: every step writes a checkpoint, so
            # many kills land mid-write. Counted in steps, not seconds, so that a fast machine still kills it
            # before it ends.
            target = len(losses(run)) + moments.randint(1, 4)
            deadline = time.time() + 120
            while time.time() < deadline and len(losses(run)) < target and process.poll() is None:
                time.sleep(0.005)
            time.sleep(moments.uniform(0.0, 0.02))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
        output, _ = process.communicate(timeout=300)
        for checkpoint in runs.run_checkpoints(run):  # never a partial checkpoint among the complete ones
            ckpt.read_checkpoint(checkpoint)
            json.loads((checkpoint / ckpt.TRAINER_FILE).read_text())
        if process.returncode == 0 and f"stopped at step {STEPS}" in output:
            break
    assert kills >= 3, "the runs ended before they could be killed"
    assert process.returncode == 0, output
    assert leftovers(run) == []  # what killed writers left half-done was cleared on resuming
    resumed = losses(run)
    assert sorted(resumed) == list(range(1, STEPS + 1))
    assert [resumed[step] for step in sorted(resumed)] == pytest.approx(
        [straight[s] for s in sorted(straight)], rel=1e-6
    )


def test_a_full_disk_while_saving_keeps_the_previous_checkpoint(
    corpus, spm_path, tmp_path, straight, monkeypatch, capsys
):
    run = tmp_path / "run"
    written = ckpt.save_file
    full = {"from_save": 2, "saves": 0}

    def filling_disk(tensors, filename, *args, **kwargs):
        if Path(filename).name == ckpt.STATE_FILE:
            full["saves"] += 1
        if full["saves"] >= full["from_save"]:
            written(tensors, filename, *args, **kwargs)  # part of the folder is on disk when the device fills up
            raise OSError(errno.ENOSPC, "No space left on device")
        return written(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(ckpt, "save_file", filling_disk)
    arguments = train_arguments(corpus, spm_path, run, "--max-steps", "12", "--save-every-steps", "4")
    assert train.main(arguments) == 1  # the last checkpoint could not be written: said, and not a success
    err = capsys.readouterr().err
    assert (
        "could not save the checkpoint of step 8 (No space left on device); the previous one, step-0000004, is "
        "intact" in err
    )
    assert [path.name for path in runs.run_checkpoints(run)] == ["step-0000004"] and leftovers(run) == []
    ckpt.load_checkpoint(run / "checkpoints" / "step-0000004")

    monkeypatch.setattr(ckpt, "save_file", written)  # space freed
    assert train.main([*arguments, "--resume", "--max-steps", str(STEPS)]) == 0
    resumed = losses(run)
    assert sorted(resumed) == list(range(1, STEPS + 1))
    assert [resumed[step] for step in sorted(resumed)] == pytest.approx(
        [straight[s] for s in sorted(straight)], rel=1e-6
    )


def test_stale_partial_folders_are_removed_and_a_retired_checkpoint_is_put_back(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (folder / f".step-0000010.tmp-{dead.pid}").mkdir()  # killed while writing a new checkpoint
    (folder / f".step-0000008.old-{dead.pid}").mkdir()  # killed between retiring step 8 and putting its copy in place
    (folder / ".step-0000012.tmp-1").mkdir()  # a live process (pid 1): left alone
    removed = ckpt.remove_stale_temporaries(folder)
    assert [path.name for path in removed] == [f".step-0000010.tmp-{dead.pid}"]
    assert (folder / "step-0000008").is_dir() and (folder / ".step-0000012.tmp-1").is_dir()
