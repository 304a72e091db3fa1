"""Every command line: training (with its parts in ``training/``), translation, evaluation, head importance, the
what-if tools, and the commands of the other layers — the alignment dictionary, the paper's figures, the stored
measurements, the heads-over-training timeline and checkpoint averaging/export.

The documented ``python -m transformer.<name>`` commands keep working: each of those modules hands its
``__main__`` over to the command line here.
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
