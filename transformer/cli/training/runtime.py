"""What a training process runs on: its processes, signals, metrics log, batch prefetching, optimizer and device."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from transformer.formats import checkpoint as ckpt
from transformer.formats import runs


@dataclass
class LogWindow:
    """The training steps since the last log record (each step's loss, NLL, learning rate, gradient norm and tokens),
    and when the window opened."""

    steps: list[dict[str, float]] = field(default_factory=list)
    opened: float = field(default_factory=time.time)

    def record(self, progress, wall_seconds: float) -> dict[str, Any]:
        """The log's ``train`` record: means over the window, its throughput, and the run's totals so far."""
        count = len(self.steps)
        return {
            "kind": "train",
            "step": progress.step,
            "epoch": progress.epoch,
            "loss": sum(s["loss"] for s in self.steps) / count,
            "nll": sum(s["nll"] for s in self.steps) / count,
            "lr": self.steps[-1]["lr"],
            "grad_norm": sum(s["grad_norm"] for s in self.steps) / count,
            "tokens_per_second": sum(s["tokens"] for s in self.steps) / max(time.time() - self.opened, 1e-9),
            "tokens_seen": progress.tokens_seen,
            "train_hours": progress.train_seconds / 3600,
            "cpu_hours": progress.cpu_seconds / 3600,
            "wall_seconds": wall_seconds,
        }


class Distributed:
    """Process-group facts; a single process when not started by torchrun."""

    def __init__(self, device: torch.device) -> None:
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.enabled = self.world_size > 1
        if self.enabled and not dist.is_initialized():
            backend = "nccl" if device.type == "cuda" else "gloo"
            dist.init_process_group(backend, timeout=datetime.timedelta(hours=1))

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def sum(self, value: float, device: torch.device) -> float:
        if not self.enabled:
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return float(tensor.item())

    def any(self, flag: bool, device: torch.device) -> bool:
        return self.sum(float(flag), device) > 0

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


class StopRequest:
    """Turns SIGINT / SIGTERM into a flag the training loop checks after each step."""

    def __init__(self) -> None:
        self.requested = False
        self.previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self.handle)

    def handle(self, signum: int, frame: Any) -> None:
        if self.requested:  # a second Ctrl-C leaves at once
            raise KeyboardInterrupt
        self.requested = True
        print(f"\n{signal.Signals(signum).name}: saving a checkpoint after this step…", file=sys.stderr, flush=True)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


class MetricsLog:
    """Append-only JSONL file of training and validation records."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path = path
        self.enabled = enabled

    def truncate_after(self, step: int) -> None:
        """Forget records past ``step`` (written after the checkpoint a resumed run starts from)."""
        if not self.enabled or not self.path.is_file():
            return
        ckpt.write_atomically(self.path, runs.log_up_to(self.path, step))

    def write(self, record: dict[str, Any]) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def adam(parameters, fused: bool, lr: float = 0.0) -> torch.optim.Adam:
    """Adam with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9 (§5.3); ``fused``: the single-kernel update (same maths,
    fewer passes over the weights) where this torch supports it on the parameters' device, else the default one."""
    parameters = list(parameters)
    if fused:
        try:
            return torch.optim.Adam(parameters, lr=lr, betas=(0.9, 0.98), eps=1e-9, fused=True)
        except RuntimeError:  # e.g. torch < 2.4 on a CPU
            pass
    return torch.optim.Adam(parameters, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def prefetch(items: Iterator[Any], depth: int) -> Iterator[Any]:
    """Items of ``items`` made by a thread up to ``depth`` ahead of the consumer. When the consumer stops (the
    run ended or failed), the thread stops after the item it is making, and is waited for: a thread left inside
    PyTorch while Python ends aborts the process."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fill() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
        except BaseException as error:  # handed to the consumer, which raises it
            put((False, error))

    thread = threading.Thread(target=fill, daemon=True, name="batches")
    thread.start()
    try:
        while True:
            ok, item = slots.get()
            if not ok:
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=60)


def autocast(device: torch.device, amp: str) -> contextlib.AbstractContextManager:
    if amp == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def progress_bar(style: str, total: int, initial: int, main: bool):
    """A tqdm bar for ``--progress bar`` (or ``auto`` on a terminal) in the main process; None otherwise."""
    show = style == "bar" or (style == "auto" and sys.stderr.isatty())
    if not (main and show):
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True)
