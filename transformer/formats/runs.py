"""What training runs leave, and how a checkpoint leaves the machine it was made on: a run's metrics log
(:func:`read_metrics`, :func:`training_log`), averaging a run's last checkpoints (§6.1) and exporting one for shipping
(fp16, optionally sharded, with its training log and no folder of this machine in its metadata: :func:`portable`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from transformer.formats.checkpoint import (
    LOG_FILES,
    MODEL_FILE,
    REPOSITORY_CHECKPOINTS,
    TRAINER_FILE,
    TRAINING_LOG_FILE,
    CheckpointError,
    read_checkpoint,
    read_json,
    read_tensors,
    save_checkpoint,
    write_atomically,
)


def average_weights(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the weights of several checkpoints of the same model (§6.1)."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        weights = read_tensors(Path(path) / MODEL_FILE)
        if total and set(weights) != set(total):
            raise CheckpointError(f"{path / MODEL_FILE}: holds different tensors from {paths[0] / MODEL_FILE}")
        for name, tensor in weights.items():
            total[name] = total.get(name, 0) + tensor.double()
    return {name: (tensor / len(paths)).float() for name, tensor in total.items()}


def run_checkpoints(run_directory: Path) -> list[Path]:
    """The rotating checkpoints of a training run, oldest first."""
    folder = run_directory / "checkpoints"
    found = [p for p in folder.glob("step-*") if p.is_dir() and (p / MODEL_FILE).is_file()] if folder.is_dir() else []
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def export(
    source: Path,
    out: Path,
    paths_to_average: Sequence[Path] = (),
    fp16: bool = True,
    shard_bytes: int | None = None,
) -> Path:
    """Write a shippable checkpoint (no optimizer state): ``source``'s, or the average of ``paths_to_average``
    (weights split into files of at most ``shard_bytes`` when given)."""
    files = read_checkpoint(source, average_weights(paths_to_average) if paths_to_average else None)
    dtype = torch.float16 if fp16 else torch.float32
    weights = {name: tensor.to(dtype).contiguous() for name, tensor in files.weights.items()}
    meta = files.meta
    if (source / TRAINER_FILE).is_file():
        trainer = read_json(source / TRAINER_FILE)
        meta["training_args"] = trainer.get("args", {})
    meta["weights_dtype"] = str(dtype).removeprefix("torch.")
    if paths_to_average:
        meta["averaged_checkpoints"] = [p.name for p in paths_to_average]
    meta = portable(meta)  # a shipped checkpoint names no folder of the machine it was trained on
    written = save_checkpoint(out, weights, files.config, files.tokenizer, meta, shard_bytes=shard_bytes)
    copy_training_log(source, written, meta.get("step"))
    return written


def training_log(checkpoint: Path) -> Path | None:
    """A checkpoint's training log: in its own folder when shipped with one, else in the run folder that holds
    ``checkpoints/step-…`` or ``snapshots/step-…``, where the trainer writes it."""
    folders = [checkpoint]
    if checkpoint.parent.name in ("checkpoints", "snapshots"):
        folders.append(checkpoint.parent.parent)
    return next((folder / name for folder in folders for name in LOG_FILES if (folder / name).is_file()), None)


def portable_path(text: str) -> str:
    """A path as a shipped checkpoint may record it, without the folders of the machine it was made on: inside this
    repository, relative to it; under a ``data`` folder, from there on (``en-de/train/news:2``, as the data's own
    ``SOURCES.md`` names corpora); anywhere else, the last name only (``ft2``). A relative path that climbs out of
    the folder it was given from (``../shared/data/en-de/train/news:3``) is treated the same way; other text,
    relative paths below the working folder included, is returned unchanged."""
    windows = len(text) > 2 and text[1] == ":" and text[2] in "/\\"
    climbs = text.replace("\\", "/").startswith("../")
    if not (text.startswith(("/", "\\")) or windows or climbs):
        return text
    parts = [part for part in text.replace("\\", "/").split("/") if part]
    if not parts:
        return text
    if not windows:
        try:
            return Path(text).resolve().relative_to(REPOSITORY_CHECKPOINTS.parent).as_posix()
        except (ValueError, OSError):
            pass
    if "data" in parts[:-1]:
        return "/".join(parts[len(parts) - parts[::-1].index("data") :])
    return parts[-1]


def portable(value: Any) -> Any:
    """``value`` (JSON: dicts, lists, strings, numbers) with every string passed through :func:`portable_path`."""
    if isinstance(value, str):
        return portable_path(value)
    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item) for item in value]
    return value


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a trainer's JSONL log; a missing file gives none, unreadable lines are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by an interrupted write, most likely the last one
        if isinstance(record, dict) and isinstance(record.get("step"), int | float):
            records.append(record)
    return records


def copy_training_log(source: Path, out: Path, step: int | None) -> None:
    """Give an exported checkpoint its training log (the app plots its curves from it), up to the source's step."""
    log = training_log(source)
    if log is not None:
        write_atomically(out / TRAINING_LOG_FILE, log_up_to(log, step, portable_paths=True))


def log_up_to(path: Path, step: int | None, portable_paths: bool = False) -> bytes:
    """The lines of a JSONL training log whose records are at or before ``step`` (all of them for None); with
    ``portable_paths`` (for a checkpoint that leaves this machine) every path in them made :func:`portable`."""
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if step is None or record.get("step", 0) <= step:
            rewrite = portable_paths and ("/" in line or "\\" in line)
            kept.append(json.dumps(portable(record), ensure_ascii=False) if rewrite else line)
    return "".join(f"{line}\n" for line in kept).encode("utf-8")
