"""A checkpoint folder's files as such: their names, the error every problem on reading them raises, the loaded
model's record, atomic writes, JSON, safetensors (whole or in shards), the weights' fingerprint and the
measurements stored beside them. The folders themselves (saving, checking, loading, Hugging Face models):
:mod:`transformer.formats.checkpoint`, which re-exports all of this.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from transformer.paper.config import ModelConfig
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import Tokenizer

MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "spm.model"
META_FILE = "meta.json"
STATE_FILE = "training_state.safetensors"
TRAINER_FILE = "trainer.json"
METRICS_FILE = "metrics.jsonl"  # in a training run's folder
TRAINING_LOG_FILE = "training_log.jsonl"  # the same log, copied into a shipped checkpoint
LOG_FILES = (TRAINING_LOG_FILE, METRICS_FILE)  # where training_log() looks, in this order

REPOSITORY_CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"
DEFAULT_CHECKPOINT_NAME = "en-de-small"
MAX_JSON_BYTES = 64 * 2**20  # a model's config, meta and tokenizer JSON are kilobytes to a few tens of megabytes
MAX_TOKENIZER_BYTES = 256 * 2**20  # the largest tokenizer files in use (NLLB's tokenizer.json) are about 32 MB


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated or does not match its configuration."""


@dataclass
class LoadedCheckpoint:
    path: Path
    model: Transformer
    tokenizer: Tokenizer
    config: ModelConfig
    meta: dict[str, Any] = field(default_factory=dict)
    # For threads that share ``model`` (a server's sessions), see transformer.serving.translator: ``lock`` is held
    # while a translation batch runs on it; ``scratch`` is a private copy for work that changes a model, lent under
    # ``scratch_lock``.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    scratch: Transformer | None = field(default=None, repr=False, compare=False)
    scratch_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # Where measurements of these weights are stored (save_beside): the checkpoint folder itself, or for a Hugging
    # Face model a folder of the project's cache (transformer.formats.hub.measurement_folder).
    store: Path | None = None
    # Set when a server's cache lets the model go (pages.common): no new translation process is started for it.
    released: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = self.path

    @property
    def hub(self) -> dict[str, Any] | None:
        """What a Hugging Face model is (family, name, languages; transformer.formats.hub.HubModel), None for this
        project's own checkpoints."""
        return self.meta.get("hub")


def write_atomically(path: Path, data: bytes) -> None:
    """Write a file through a temporary sibling and an atomic rename."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_json(path: Path, value: Any, compact: bool = False) -> None:
    """``value`` as JSON, written atomically; readable (indented, keys sorted) unless ``compact``."""
    text = json.dumps(value, separators=(",", ":")) if compact else json.dumps(value, indent=2, sort_keys=True)
    write_atomically(path, (text + "\n").encode("utf-8"))


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` while the block runs, so that processes which read, change and write a
    file in it one after another (two evaluations recording their scores in the same ``meta.json``) take turns
    instead of overwriting each other's change. Where the system offers no ``flock`` the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def read_json(path: Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A JSON file of at most ``max_bytes``; every way it can fail (missing, too large, not JSON, nested beyond
    Python's recursion limit) is a :class:`CheckpointError` naming the file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file is missing") from None
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None
    if size > max_bytes:
        raise CheckpointError(
            f"{path}: {size / 2**20:,.0f} MB, more than a JSON file of a model holds ({max_bytes // 2**20} MB)"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise CheckpointError(f"{path}: nested too deeply to be a configuration") from None
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping: the kernel's MemAvailable, or less where a cgroup
    limits the process (a container); None where neither can be read."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(0, min(found)) if found else None


def check_memory(what: Path | str, needed: int, doing: str = "to open") -> None:
    """Refuse, with a :class:`CheckpointError` a user understands, work that needs more memory than is free: a
    refusal is a message, running out of memory half way would take the whole server (every visitor) down."""
    free = available_memory()
    if free is not None and needed > free:
        raise CheckpointError(
            f"{what}: needs about {needed / 2**30:.1f} GB of memory {doing}; {free / 2**30:.1f} GB are free"
        )


def meta_model(path: Path, config: ModelConfig) -> Transformer:
    """The model ``config`` describes, built on the ``meta`` device: its names and shapes without its memory. A
    configuration no model can be built from is a :class:`CheckpointError`."""
    try:
        with torch.device("meta"):
            return Transformer(config)
    except (ValueError, TypeError, RuntimeError, ZeroDivisionError, OverflowError) as error:
        raise CheckpointError(f"{path / CONFIG_FILE}: invalid model configuration ({error})") from None


def model_bytes(config: ModelConfig) -> int:
    """The float32 bytes of the model ``config`` describes (parameters and buffers), counted on the ``meta``
    device: nothing is allocated, however large the configuration claims to be."""
    model = meta_model(Path("."), config)
    return sum(t.numel() * 4 for t in (*model.parameters(), *model.buffers()))


def is_allocation_failure(error: BaseException) -> bool:
    """A failure to allocate memory, as PyTorch and Python report it."""
    if isinstance(error, MemoryError):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(
        words in text
        for words in ("can't allocate memory", "defaultcpuallocator", "out of memory", "not enough memory")
    )


def shard_name(index: int, count: int) -> str:
    """``model-00001-of-00002.safetensors``: one of the files of a weights file split by :func:`save_checkpoint`."""
    return f"model-{index:05d}-of-{count:05d}.safetensors"


def shards_of(path: Path) -> list[Path]:
    """The shards that stand in for a missing ``model.safetensors``: every one of them, or raise."""
    found = sorted(path.parent.glob("model-*-of-*.safetensors"))
    if not found:
        return []
    count = int(found[0].stem.rsplit("-", 1)[1])
    expected = [path.parent / shard_name(index, count) for index in range(1, count + 1)]
    if found != expected:
        missing = sorted({p.name for p in expected} - {p.name for p in found}) or [found[0].name]
        raise CheckpointError(f"{path.parent}: sharded weights are incomplete or mixed (e.g. {missing[0]})")
    return expected


def fingerprint(checkpoint: Path) -> str:
    """SHA-256 of the checkpoint's weight files (a sharded model's shards in order): what the measurements stored
    beside a checkpoint are tied to, so that they are never shown for other weights."""
    digest = hashlib.sha256()
    weights = checkpoint / MODEL_FILE
    for path in [weights] if weights.is_file() else shards_of(weights):
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def save_beside(loaded: LoadedCheckpoint, name: str, result: dict, compact: bool = False) -> Path:
    """Store a measurement of these weights beside them as JSON (``importance.json``, ``alignment.json``), with
    their :func:`fingerprint`, so that it is never shown for other weights (``compact``: without indentation)."""
    path = loaded.store / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {**result, "fingerprint": fingerprint(loaded.path)}, compact)
    return path


def read_beside(loaded: LoadedCheckpoint, name: str) -> dict | None:
    """A measurement :func:`save_beside` stored for exactly these weights; None when there is none, it is
    unreadable, or the weights changed since."""
    path = loaded.store / name
    if not path.is_file():
        return None
    try:
        stored = read_json(path)
    except (OSError, CheckpointError):
        return None
    if not isinstance(stored, dict) or stored.get("fingerprint") != fingerprint(loaded.path):
        return None
    return stored


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file; for a missing ``model.safetensors``, the union of its shards (``model-i-of-n``)."""
    shards = shards_of(path) if path.name == MODEL_FILE and not path.is_file() else []
    if shards:
        merged: dict[str, torch.Tensor] = {}
        for shard in shards:
            merged.update(read_tensors(shard))
        return merged
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing")
    check_memory(path, path.stat().st_size, "to read")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError, RuntimeError, MemoryError) as error:
        if is_allocation_failure(error):
            raise CheckpointError(f"{path}: not enough memory to read it") from None
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(f"{path}: not a readable safetensors file, perhaps truncated ({message})") from None


def tensor_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor of a safetensors file (or of ``model.safetensors``'s shards), read from
    the files' headers: nothing of the weights themselves is read."""
    shards = shards_of(path) if path.name == MODEL_FILE and not path.is_file() else [path]
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        if not shard.is_file():
            raise CheckpointError(f"{shard}: file is missing")
        try:
            with safe_open(shard, "pt") as handle:
                for name in handle.keys():  # noqa: SIM118  (a safetensors handle is no dict)
                    shapes[name] = tuple(handle.get_slice(name).get_shape())
        except (SafetensorError, OSError, ValueError, RuntimeError) as error:
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise CheckpointError(f"{shard}: not a readable safetensors file, perhaps truncated ({message})") from None
    return shapes
