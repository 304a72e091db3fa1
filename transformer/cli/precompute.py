"""``python -m transformer precompute CHECKPOINT …``: measure what the figure pages show and store it beside
each checkpoint (:mod:`transformer.analysis.precompute`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.precompute import default_head, measure_all, write
from transformer.cli import command_parser, each_loaded


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("precompute", __doc__)
    parser.add_argument("checkpoints", nargs="+", type=Path, help="checkpoint folders")
    args = parser.parse_args(argv)
    for loaded in each_loaded(args.checkpoints):
        started = time.perf_counter()
        measured = measure_all(loaded)
        path = write(loaded, measured)
        kind, layer, head = default_head(measured.tables)
        print(
            f"wrote {path} in {time.perf_counter() - started:.0f} s; the app opens on {kind} attention, "
            f"layer {layer + 1}, head {head + 1}"
        )
    return 0
