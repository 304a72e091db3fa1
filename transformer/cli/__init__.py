"""Every command line: training (with its parts in ``training/``), translation, evaluation, head importance, the
what-if tools, and the commands of the other layers — the alignment dictionary, the paper's figures, the stored
measurements, the heads-over-training timeline and checkpoint averaging/export.

A command has one door: its short module ``transformer/<name>.py``, run with ``python -m``, that only calls ``main``
of ``transformer.cli.<name>`` (``transformer-train``, ``-translate`` and ``-evaluate`` are console scripts too). The
modules here have no ``__main__`` block of their own, nor do the library's (``tests/test_layout.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from transformer.checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint


def load_or_report(name_or_path: str | Path | None, device: str = "cpu") -> LoadedCheckpoint | None:
    """A command's checkpoint, or None after printing why it cannot be loaded (the command then exits with 1)."""
    try:
        return load_checkpoint(name_or_path, device=device)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
