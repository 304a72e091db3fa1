"""Starting, resuming and fine-tuning a run, through :mod:`transformer.formats.checkpoint`.

A run's checkpoint is a shippable checkpoint folder plus ``training_state.safetensors`` (Adam's moments, random state)
and ``trainer.json`` (the run's configuration, the optimizer's hyper-parameters and the :class:`Progress`), so that
``--resume`` continues exactly: step, optimizer, schedule, random state and data order.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from transformer.cli.training.options import TrainingConfig
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs
from transformer.paper.config import ModelConfig
from transformer.paper.tokenizer import Tokenizer


@dataclass
class Progress:
    """How far a run is: steps, the data position, tokens and time, and the checkpoint it was fine-tuned from."""

    step: int = 0
    epoch: int = 0
    position: int = 0  # batches of this epoch already taken
    tokens_seen: int = 0
    train_seconds: float = 0.0
    cpu_seconds: float = 0.0  # CPU time of the process (all its threads); unlike wall time, not inflated by pauses
    parent: dict[str, Any] | None = None

    @property
    def schedule_start(self) -> int:
        """The step the learning-rate schedule (and its warm-up) starts from: a fine-tuning run's first."""
        return self.parent["step"] if self.parent else 0


def newest_state(run: Path) -> tuple[Path, dict[str, Any]] | None:
    """The run's newest checkpoint whose ``trainer.json`` reads, with that file; None when it has no checkpoint.
    Unreadable ones (a machine stopped while writing) are skipped with a warning."""
    latest = runs.run_checkpoints(run)
    if not latest:
        return None
    for candidate in reversed(latest):
        try:
            return candidate, ckpt.read_json(candidate / ckpt.TRAINER_FILE)
        except ckpt.CheckpointError as error:
            print(f"warning: skipping {candidate}: {error}", file=sys.stderr)
    raise ckpt.CheckpointError(f"no readable checkpoint in {run / 'checkpoints'}")


def optimizer_tensors(optimizer: torch.optim.Optimizer, names: list[str]) -> tuple[dict[str, Tensor], dict]:
    """Split Adam's state into named tensors (for safetensors) and JSON-able hyper-parameters."""
    state = optimizer.state_dict()
    tensors = {}
    for index, values in state["state"].items():
        for key, value in values.items():
            tensors[f"optimizer/{names[index]}/{key}"] = value.detach().cpu().contiguous()
    return tensors, {"param_groups": state["param_groups"]}


def load_optimizer(
    optimizer: torch.optim.Optimizer, names: list[str], tensors: dict[str, Tensor], groups: dict
) -> None:
    state: dict[int, dict[str, Tensor]] = {}
    for index, name in enumerate(names):
        prefix = f"optimizer/{name}/"
        values = {key[len(prefix) :]: value for key, value in tensors.items() if key.startswith(prefix)}
        if values:
            state[index] = values
    optimizer.load_state_dict({"state": state, "param_groups": groups["param_groups"]})


def save_state(
    run: Path,
    model: nn.Module,
    config: ModelConfig,
    tokenizer: Tokenizer,
    meta: dict[str, Any],
    optimizer: torch.optim.Optimizer,
    parameter_names: list[str],
    progress: Progress,
    options: TrainingConfig,
    device: torch.device,
) -> Path:
    """Write ``checkpoints/step-N`` (everything :func:`load_state` needs) and drop all but the last
    ``options.keep_last`` of the run's checkpoints."""
    tensors, groups = optimizer_tensors(optimizer, parameter_names)
    tensors["rng/torch"] = torch.get_rng_state()
    if device.type == "cuda":
        tensors["rng/cuda"] = torch.cuda.get_rng_state(device)
    trainer = {"args": options.to_json(), "optimizer": groups, "progress": dataclasses.asdict(progress)}
    path = run / "checkpoints" / f"step-{progress.step:07d}"
    ckpt.save_checkpoint(path, ckpt.state_dict_for_saving(model), config, tokenizer, meta, tensors, trainer)
    for old in runs.run_checkpoints(run)[: -options.keep_last]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def load_state(
    path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, parameter_names: list[str], device: torch.device
) -> Progress:
    """Restore a run's checkpoint into ``model`` and ``optimizer`` (and the random state); its :class:`Progress`."""
    files = ckpt.read_checkpoint(path)
    model.load_state_dict(files.weights)
    tensors = ckpt.read_tensors(path / ckpt.STATE_FILE)
    trainer = ckpt.read_json(path / ckpt.TRAINER_FILE)
    load_optimizer(optimizer, parameter_names, tensors, trainer["optimizer"])
    torch.set_rng_state(tensors["rng/torch"])
    if device.type == "cuda" and "rng/cuda" in tensors:
        torch.cuda.set_rng_state(tensors["rng/cuda"])
    known = {field.name for field in dataclasses.fields(Progress)}
    return Progress(**{key: value for key, value in trainer["progress"].items() if key in known})


def load_initial_weights(path: Path, model: nn.Module, config: ModelConfig, preset: str) -> Progress:
    """Another checkpoint's weights for a fine-tuning run of the same shape; the returned :class:`Progress` counts
    steps, tokens and hours on from the checkpoint's own, and names it as the parent (optimizer, schedule with its
    warm-up, and data order start afresh)."""
    # Dropout rates are training choices, not shape: a fine-tune may change them (--dropout, --attention-dropout).
    # The shape is checked first, so that a checkpoint of another shape is named as that.
    theirs = ckpt.load_config(path)
    if dataclasses.replace(theirs, dropout=config.dropout, attention_dropout=config.attention_dropout) != config:
        raise ckpt.CheckpointError(f"{path / ckpt.CONFIG_FILE}: does not match --preset {preset}")
    files = ckpt.read_checkpoint(path)
    model.load_state_dict({name: tensor.float() for name, tensor in files.weights.items()})
    meta = files.meta
    step = int(meta.get("step", 0))
    return Progress(
        step=step,
        tokens_seen=int(meta.get("tokens_seen", 0)),
        train_seconds=float(meta.get("train_hours", 0.0)) * 3600,
        cpu_seconds=float(meta.get("cpu_hours", 0.0)) * 3600,
        parent={"checkpoint": str(path), "step": step, "data": meta.get("data")},
    )
