"""Checkpoint folders: weights as safetensors, never pickles, so loading a checkpoint cannot execute code.

A checkpoint is a folder holding

- ``model.safetensors`` — the weights (fp32 while training, fp16 when exported for shipping), or the same split into
  ``model-00001-of-0000N.safetensors`` files (``--shard-mb``: for transfers with a per-file size limit);
- ``config.json`` — the :class:`~transformer.paper.config.ModelConfig`;
- ``spm.model`` — the SentencePiece vocabulary;
- ``meta.json`` — what it is: step, training time, data, scores;
- during training also ``training_state.safetensors`` and ``trainer.json`` (optimizer moments, random state, data
  position) so a run resumes exactly where it stopped.

Folders are written under a temporary name and renamed into place, so an interrupted write never leaves a broken
checkpoint. Every problem on loading is raised as :class:`CheckpointError` with a one-line message naming the file.

The files as such (names, reading and writing them, the weights' fingerprint and what is stored beside them):
:mod:`transformer.formats.checkpoint_files`, re-exported here. Averaging a run's checkpoints and exporting one for
shipping: :mod:`transformer.formats.runs`; the command line
``python -m transformer checkpoint average|export|info``: :mod:`transformer.cli.checkpoint`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from transformer.formats.checkpoint_files import (  # noqa: F401  (re-exported: the checkpoint API is one module)
    CONFIG_FILE,
    DEFAULT_CHECKPOINT_NAME,
    LOG_FILES,
    MAX_TOKENIZER_BYTES,
    META_FILE,
    METRICS_FILE,
    MODEL_FILE,
    REPOSITORY_CHECKPOINTS,
    STATE_FILE,
    TOKENIZER_FILE,
    TRAINER_FILE,
    TRAINING_LOG_FILE,
    CheckpointError,
    LoadedCheckpoint,
    available_memory,
    check_memory,
    fingerprint,
    folder_lock,
    is_allocation_failure,
    meta_model,
    model_bytes,
    read_beside,
    read_json,
    read_tensors,
    save_beside,
    shard_name,
    shards_of,
    tensor_shapes,
    write_atomically,
    write_json,
)
from transformer.paper.config import ModelConfig
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import Tokenizer


def state_dict_for_saving(model: torch.nn.Module, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """Contiguous CPU copies of the model's parameters (one tensor for the shared embedding)."""
    model = getattr(model, "module", model)  # unwrap DistributedDataParallel
    state = {}
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().to("cpu")
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        state[name] = tensor.contiguous().clone()
    return state


def save_checkpoint(
    path: str | Path,
    weights: Mapping[str, torch.Tensor],
    config: ModelConfig,
    tokenizer: Tokenizer,
    meta: Mapping[str, Any],
    training_state: Mapping[str, torch.Tensor] | None = None,
    trainer: Mapping[str, Any] | None = None,
    shard_bytes: int | None = None,
) -> Path:
    """Write a complete checkpoint folder at ``path``, replacing any folder there only once the new one is whole.

    With ``shard_bytes``, weights larger than that are split into ``model-00001-of-0000N.safetensors`` files of at
    most about that size each (whole tensors per file), which :func:`read_tensors` reads back as one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    if temporary.exists():
        shutil.rmtree(temporary)
    temporary.mkdir()
    try:
        groups = shard_groups(weights, shard_bytes) if shard_bytes else [dict(weights)]
        if len(groups) == 1:
            save_file(groups[0], temporary / MODEL_FILE, metadata={"format": "pt"})
        else:
            for index, group in enumerate(groups, start=1):
                save_file(group, temporary / shard_name(index, len(groups)), metadata={"format": "pt"})
        config.save(temporary / CONFIG_FILE)
        tokenizer.save(temporary / TOKENIZER_FILE)
        write_json(temporary / META_FILE, dict(meta))
        if training_state is not None:
            save_file(dict(training_state), temporary / STATE_FILE)
        if trainer is not None:
            write_json(temporary / TRAINER_FILE, dict(trainer))
        for written in temporary.iterdir():
            with open(written, "rb") as handle:
                os.fsync(handle.fileno())
    except BaseException:
        # A full disk, a failing device or an interrupt: the partial folder goes, any earlier one at ``path`` stays.
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if path.exists():
        retired = path.with_name(f".{path.name}.old-{os.getpid()}")
        os.replace(path, retired)
        os.replace(temporary, path)
        shutil.rmtree(retired)
    else:
        os.replace(temporary, path)
    return path


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the partial folders (``.NAME.tmp-PID``, ``.NAME.old-PID``) that a process killed while writing a
    checkpoint left in ``folder``, when that process is gone; the removed paths. A retired ``.old`` folder whose
    checkpoint was never replaced (killed between the two renames) is put back instead."""
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for leftover in folder.glob(".*-*"):
        name, _, pid = leftover.name.rpartition("-")
        kind = name.rsplit(".", 1)[-1]
        if kind not in ("tmp", "old") or not pid.isdigit() or _alive(int(pid)):
            continue
        original = folder / name[1 : -len(kind) - 1]
        if kind == "old" and not original.exists():
            os.replace(leftover, original)
            continue
        shutil.rmtree(leftover, ignore_errors=True)
        removed.append(leftover)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def shard_groups(weights: Mapping[str, torch.Tensor], shard_bytes: int) -> list[dict[str, torch.Tensor]]:
    """Split tensors, in order, into groups of at most ``shard_bytes`` (a larger tensor gets a group of its own)."""
    groups: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in weights.items():
        nbytes = tensor.numel() * tensor.element_size()
        if groups[-1] and size + nbytes > shard_bytes:
            groups.append({})
            size = 0
        groups[-1][name] = tensor
        size += nbytes
    return groups


def check_weights(path: Path, weights: Mapping[str, torch.Tensor], model: Transformer) -> None:
    """The weights fit ``model`` (names and shapes; built on ``meta`` it costs nothing) and are finite floats."""
    check_shapes(path, {name: tuple(tensor.shape) for name, tensor in weights.items()}, model)
    for name in model.state_dict():
        if not weights[name].is_floating_point() or not torch.isfinite(weights[name]).all():
            raise CheckpointError(f"{path / MODEL_FILE}: tensor {name} holds non-finite or non-float values")


def check_shapes(path: Path, shapes: Mapping[str, tuple[int, ...]], model: Transformer) -> None:
    """The tensors named in ``shapes`` are exactly ``model``'s, each of its shape: read from the weights' headers
    (:func:`tensor_shapes`), before anything is read or allocated."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} tensors (e.g. {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected tensors (e.g. {unexpected[0]!r})")  # a damaged name: escaped
        raise CheckpointError(f"{path / MODEL_FILE}: does not match {CONFIG_FILE}: {'; '.join(parts)}")
    for name, tensor in expected.items():
        if tuple(shapes[name]) != tuple(tensor.shape):
            raise CheckpointError(
                f"{path / MODEL_FILE}: tensor {name} has shape {tuple(shapes[name])} but {CONFIG_FILE} "
                f"implies {tuple(tensor.shape)}"
            )


def resolve(name_or_path: str | Path | None = None) -> Path:
    """A checkpoint folder from a path, or from a name under the repository's ``checkpoints/``."""
    if name_or_path is None:
        name_or_path = os.environ.get("TRANSFORMER_CHECKPOINT", DEFAULT_CHECKPOINT_NAME)
    path = Path(name_or_path)
    for folder in (path, REPOSITORY_CHECKPOINTS / path):
        with suppress(OSError):  # a name the file system refuses (too long, say) is simply no folder
            if folder.is_dir():
                return folder
    from transformer.formats.hub.families import cached_hub_folder

    cached = cached_hub_folder(str(name_or_path))
    if cached is not None:
        return cached
    available = ", ".join(p.name for p in list_checkpoints()) or "none"
    raise CheckpointError(
        f"{name_or_path}: no such checkpoint folder (available in {REPOSITORY_CHECKPOINTS}: {available})"
    )


def list_checkpoints(root: str | Path | None = None) -> list[Path]:
    """Every folder under ``root`` (default: the repository's ``checkpoints/``) that holds a config.json."""
    root = Path(REPOSITORY_CHECKPOINTS if root is None else root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_FILE).is_file())


def load_config(path: Path) -> ModelConfig:
    try:
        return ModelConfig.from_dict(read_json(path / CONFIG_FILE))
    except (TypeError, ValueError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{path / CONFIG_FILE}: invalid model configuration ({error})") from None


@dataclass
class CheckpointFiles:
    """A checkpoint folder's files, read and checked against each other (no model built)."""

    path: Path
    config: ModelConfig
    tokenizer: Tokenizer
    weights: dict[str, torch.Tensor]
    meta: dict[str, Any]


def read_checkpoint(path: Path, weights: Mapping[str, torch.Tensor] | None = None) -> CheckpointFiles:
    """Read a checkpoint folder: its configuration, tokenizer (whose vocabulary must match the configuration),
    weights (names and shapes must match the configuration's model; ``weights`` given: check those instead, e.g. an
    average) and meta (empty when absent). The one reader behind loading, exporting, resuming and fine-tuning."""
    config = load_config(path)
    with suppress(OSError):
        size = (path / TOKENIZER_FILE).stat().st_size
        if size > MAX_TOKENIZER_BYTES:
            raise CheckpointError(f"{path / TOKENIZER_FILE}: {size / 2**20:,.0f} MB, larger than any tokenizer")
    try:
        tokenizer = Tokenizer.load(path / TOKENIZER_FILE)
    except (FileNotFoundError, ValueError) as error:
        raise CheckpointError(str(error)) from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(
            f"{path / TOKENIZER_FILE}: has {tokenizer.vocab_size} pieces but {CONFIG_FILE} says vocab_size="
            f"{config.vocab_size}"
        )
    expected = meta_model(path, config)  # the expected names and shapes, without allocating what the config describes
    if weights is None:
        check_shapes(path, tensor_shapes(path / MODEL_FILE), expected)  # a lying config is refused before reading
        weights = read_tensors(path / MODEL_FILE)
    weights = dict(weights)
    check_weights(path, weights, expected)
    meta = read_json(path / META_FILE) if (path / META_FILE).is_file() else {}
    return CheckpointFiles(path, config, tokenizer, weights, meta)


def load_checkpoint(
    name_or_path: str | Path | None = None, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> LoadedCheckpoint:
    """Load a checkpoint folder into an evaluation-mode model (weights cast to ``dtype``). A Hugging Face Marian or
    M2M100/NLLB folder (or hub id in the local cache) is opened as this project's model
    (:mod:`transformer.formats.hub`)."""
    from transformer.formats.hub import open_hub_folder
    from transformer.formats.hub.families import is_hub_folder

    path = resolve(name_or_path)
    try:
        if is_hub_folder(path):
            loaded = open_hub_folder(path, dtype)
            loaded.model.to(device)
            return loaded
        files = read_checkpoint(path)
        check_memory(path, model_bytes(files.config))
        model = Transformer(files.config)
        model.load_state_dict({name: tensor.to(dtype) for name, tensor in files.weights.items()})
        return LoadedCheckpoint(
            files.path, model.to(device=device, dtype=dtype).eval(), files.tokenizer, files.config, files.meta
        )
    except (MemoryError, RuntimeError) as error:
        if not is_allocation_failure(error):
            raise
        raise CheckpointError(f"{path}: not enough memory to open this model") from None
