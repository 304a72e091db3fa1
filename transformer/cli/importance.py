"""Head importance of a checkpoint on a dev sample (Michel et al., 2019), from the command line.

    python -m transformer importance [--checkpoint DIR] [--sample 500] [--report 500] [--json] [--gradient-only]
                                     [--save]

For every attention head: the BLEU and chrF lost when it alone is switched off, and the gradient proxy; then the BLEU
as the k least important heads (by BLEU drop, or by gradient with ``--gradient-only``) are switched off together.
The heads are ranked on the first ``--sample`` pairs of newstest2013 (``--src``/``--ref`` for another) and
everything reported is measured on the next ``--report`` pairs (0: on the ranking pairs themselves): each head's
drop with its 95% paired bootstrap interval, and the pruning curve in the order chosen on the other pairs.
``--save`` stores the result beside the checkpoint (``importance.json``), where the app's *What if* page finds it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.ablation import measure_importance, save_importance
from transformer.cli import command_parser, fail
from transformer.cli.translate import add_decoding_arguments, run_decoding
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.data import DEV_PREFIX, read_parallel
from transformer.search.decode import DecodingOptions


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("importance", __doc__)
    add_decoding_arguments(parser)
    parser.set_defaults(beam=1)  # greedy: one search per head keeps the whole table to minutes
    parser.add_argument("--src", type=Path, help="source sentences (default: newstest2013 in the model's pair)")
    parser.add_argument("--ref", type=Path, help="their reference translations (default: newstest2013's)")
    parser.add_argument("--sample", type=int, default=500, help="rank the heads on the first N sentence pairs")
    parser.add_argument(
        "--report", type=int, default=500, help="measure what is reported on the next N pairs (0: the same pairs)"
    )
    parser.add_argument("--gradient-only", action="store_true", help="skip the ablations (one backward pass only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--save", action="store_true", help="store the result beside the checkpoint for the app")
    return run_decoding(parser, argv, _importance)


def _importance(args: argparse.Namespace, options: DecodingOptions, loaded: LoadedCheckpoint) -> int:
    source, target = (Path(f"{DEV_PREFIX}.{language}") for language in loaded.config.languages)
    args.src, args.ref = args.src or source, args.ref or target
    try:
        every = read_parallel(args.src, args.ref)
        pairs = every[: args.sample]
        report = (every[args.sample : args.sample + args.report] if args.report > 0 else None) or None
        if report is None and args.report > 0:
            print(f"no pairs after the first {args.sample}: reporting on the ranking pairs", file=sys.stderr)
    except (FileNotFoundError, ValueError) as error:
        return fail(error)
    result = {
        "checkpoint": str(loaded.path),
        **measure_importance(
            loaded.model, loaded.tokenizer, pairs, options, ablation=not args.gradient_only, report_pairs=report
        ),
    }
    total = len(result["ranked"])
    if "ranking" in result:
        first, last = args.sample + 1, args.sample + result["sentences"]
        result["source"] = f"{args.src.name}, pairs {first}–{last} (ranked on pairs 1–{args.sample})"
    else:
        result["source"] = f"{args.src.name}, first {result['sentences']} pairs"
    if args.save:
        print(f"stored in {save_importance(loaded, result)}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(
            f"{result['sentences']} sentences, {options.describe()}: BLEU {result['bleu']:.2f}, chrF "
            f"{result['chrf']:.2f}"
        )
        for point in result["prune"]:
            change = point.get("change")
            interval = ""
            if change:
                interval = f", change {change['value']:+.2f} [{change['low']:+.2f}, {change['high']:+.2f}]"
            print(
                f"  {point['heads_off']:3d} of {total} heads off: BLEU {point['bleu']:.2f}, chrF {point['chrf']:.2f}"
                f"{interval}"
            )
        print(
            f"up to {result['heads_off_within_1_bleu']} heads off for at most 1 BLEU lost "
            f"({result['heads_off_clear_within_1_bleu']} with the whole 95% interval within 1 BLEU)"
        )
    return 0
