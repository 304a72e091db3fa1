"""``python -m transformer checkpoint``: average checkpoints (§6.1), export one without its optimizer state, or
print one's configuration and metadata."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from transformer.cli import command_parser, fail
from transformer.formats.checkpoint import CheckpointError, load_checkpoint
from transformer.formats.runs import export, run_checkpoints


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("checkpoint", __doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    average = commands.add_parser("average", help="average checkpoints (§6.1) into one shippable checkpoint")
    average.add_argument("inputs", nargs="+", type=Path, help="a training run folder, or checkpoint folders")
    average.add_argument("--last", type=int, default=5, help="with a run folder: average its last K checkpoints")
    average.add_argument("--out", type=Path, required=True)
    average.add_argument("--fp16", action="store_true", help="store the averaged weights as float16")
    average.add_argument("--shard-mb", type=float, default=None, help="split the weights into files of at most N MB")
    exporter = commands.add_parser("export", help="copy a checkpoint without optimizer state, as fp16 by default")
    exporter.add_argument("checkpoint", type=Path)
    exporter.add_argument("--out", type=Path, required=True)
    exporter.add_argument("--fp32", action="store_true", help="keep float32 weights")
    info = commands.add_parser("info", help="print a checkpoint's configuration and metadata")
    info.add_argument("checkpoint")
    args = parser.parse_args(argv)
    try:
        if args.command == "average":
            run = args.inputs[0] if len(args.inputs) == 1 and (args.inputs[0] / "checkpoints").is_dir() else None
            paths = run_checkpoints(run)[-args.last :] if run else list(args.inputs)
            if not paths:
                raise CheckpointError(f"{args.inputs[0]}: no checkpoints found")
            shard_bytes = int(args.shard_mb * 2**20) if args.shard_mb else None
            written = export(paths[-1], args.out, paths, fp16=args.fp16, shard_bytes=shard_bytes)
            print(f"averaged {len(paths)} checkpoints ({paths[0].name} … {paths[-1].name}) into {written}")
        elif args.command == "export":
            print(f"wrote {export(args.checkpoint, args.out, fp16=not args.fp32)}")
        else:
            loaded = load_checkpoint(args.checkpoint)
            print(f"{loaded.path}: {loaded.model.num_parameters():,} parameters")
            print(loaded.config.to_json(), end="")
            print(json.dumps(loaded.meta, indent=2, sort_keys=True))
    except CheckpointError as error:
        return fail(error)
    return 0
