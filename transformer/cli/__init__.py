"""Every command line: training (with its parts in ``training/``), translation, evaluation, head importance, the
what-if tools, and the commands of the other layers — the alignment dictionary, the paper's figures, the stored
measurements, the heads-over-training timeline and checkpoint averaging/export.

Every command has one door, ``python -m transformer <name>`` (``transformer/__main__.py``), which calls ``main`` of
``transformer.cli.<name>`` (``transformer-train``, ``-translate`` and ``-evaluate`` are console scripts too). The
modules here have no ``__main__`` block of their own, nor do the library's (``tests/test_layout.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch

from transformer.formats.checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint


def command_parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The parser of the command ``name``, described by the first paragraph of its module's ``doc``."""
    return argparse.ArgumentParser(prog=f"python -m transformer {name}", description=doc.split("\n\n")[0])


def fail(message: object) -> int:
    """Print ``error: <message>`` on standard error; returns the failing command's exit status, 1."""
    print(f"error: {message}", file=sys.stderr)
    return 1


def load_or_report(
    name_or_path: str | Path | None, device: str = "cpu", threads: int | None = None
) -> LoadedCheckpoint | None:
    """A command's checkpoint, or None after printing why it cannot be loaded (the command then exits with 1).
    ``threads`` (the commands' --threads): torch's CPU threads, set first (None or 0 leaves them as they are)."""
    if threads:
        torch.set_num_threads(threads)
    try:
        return load_checkpoint(name_or_path, device=device)
    except CheckpointError as error:
        fail(error)
        return None


def each_loaded(folders: Iterable[str | Path]) -> Iterator[LoadedCheckpoint]:
    """The checkpoints in ``folders``, loaded one at a time; :class:`SystemExit` (1) after printing why one cannot
    be loaded."""
    for folder in folders:
        loaded = load_or_report(folder)
        if loaded is None:
            raise SystemExit(1)
        yield loaded
