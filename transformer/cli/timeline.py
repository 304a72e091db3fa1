"""``python -m transformer timeline SNAPSHOT … --out FILE``: the heads over training, measured on each
snapshot (:mod:`transformer.analysis.timeline`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.timeline import TIMELINE_FILE, measure, save_timeline
from transformer.cli import command_parser, each_loaded


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("timeline", __doc__)
    parser.add_argument("checkpoints", nargs="+", help="snapshot or checkpoint folders, in any order")
    parser.add_argument("--out", type=Path, required=True, help=f"the {TIMELINE_FILE} to write")
    parser.add_argument(
        "--label",
        default="snapshot",
        help="what the snapshots are: 'snapshot' (of the run that made the checkpoint) or 'rerun' "
        "(of another run of the same recipe, when that run kept none)",
    )
    args = parser.parse_args(argv)
    points = []
    for loaded in each_loaded(args.checkpoints):
        label = "averaged" if "averaged_checkpoints" in (loaded.meta or {}) else args.label
        point = measure(loaded, label)
        print(
            f"step {point.step}: making heads {point.metrics['making_heads_on_more_difficult']}, "
            f"its→Law {point.metrics['its_to_law']}",
            file=sys.stderr,
        )
        points.append(point)
    save_timeline(points, args.out)
    print(f"wrote {len(points)} points to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0
