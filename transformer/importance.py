"""Head importance of a checkpoint on a dev sample (Michel et al., 2019), from the command line.

    python -m transformer.importance [--checkpoint DIR] [--sample 50] [--json] [--gradient-only]

For every attention head: the BLEU and chrF lost when it alone is switched off, and the gradient proxy; then the BLEU
as the k least important heads (by BLEU drop, or by gradient with ``--gradient-only``) are switched off together.
The sample is the first N pairs of newstest2013 (``--src``/``--ref`` for another).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.ablation import head_importance, prune_curve
from transformer.data import DATA_ROOT, read_parallel
from transformer.translate import add_decoding_arguments, start

DEV = DATA_ROOT / "dev" / "newstest2013"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer.importance", description=__doc__.split("\n\n")[0])
    add_decoding_arguments(parser)
    parser.set_defaults(beam=1)  # greedy: one search per head keeps the whole table to minutes
    parser.add_argument("--src", type=Path, default=Path(f"{DEV}.en"))
    parser.add_argument("--ref", type=Path, default=Path(f"{DEV}.de"))
    parser.add_argument("--sample", type=int, default=50, help="the first N sentence pairs")
    parser.add_argument("--gradient-only", action="store_true", help="skip the ablations (one backward pass only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    started = start(parser, argv)
    if started is None:
        return 1
    args, options, loaded = started
    try:
        pairs = read_parallel(args.src, args.ref)[: args.sample]
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    importance = head_importance(loaded.model, loaded.tokenizer, pairs, options, ablation=not args.gradient_only)
    order = importance.ranked("gradient" if args.gradient_only else "bleu_drop")
    total = len(order)
    counts = sorted({0, *range(0, total, max(1, total // 8)), total - 1})
    curve = prune_curve(loaded.model, loaded.tokenizer, pairs, order, counts, options)
    result = {"checkpoint": str(loaded.path), "decoding": options.describe(), **importance.to_json(), "prune": curve}
    within = [point["heads_off"] for point in curve if point["bleu"] >= importance.bleu - 1.0]
    result["heads_off_within_1_bleu"] = max(within) if within else 0
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(f"{importance.sentences} sentences, {options.describe()}: BLEU {importance.bleu:.2f}, chrF "
              f"{importance.chrf:.2f}")  # fmt: skip
        for point in curve:
            print(f"  {point['heads_off']:3d} of {total} heads off: BLEU {point['bleu']:.2f}, chrF {point['chrf']:.2f}")
        print(f"up to {result['heads_off_within_1_bleu']} heads off for at most 1 BLEU lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
