"""Which explanation predicts what the model does: the deletion test (:mod:`transformer.analysis.faithfulness`) for
attention heads and layers, rollout and three gradient attributions.

    python benchmarks/faithfulness.py [--checkpoint DIR] [--sentences 80] [--tokens 4] [--markdown] [--save]

The model's own greedy translations of the first N newstest2013 sentences; at up to T output tokens of each, the
k = 1 and k = 3 source tokens an explanation ranks highest are deleted and the drop in the token's log-probability
is compared with deleting k random source tokens (5 draws). Higher is more faithful. Each figure has its 95%
bootstrap interval over sentences (a sentence's tokens resampled together), and each explanation's gain over the
random deletions at the same tokens its paired interval: an explanation beats chance only where that interval lies
above zero. ``--save`` stores the table
beside the checkpoint (``faithfulness.json``), where the app's Attribution tab draws it.
"""

from __future__ import annotations

import argparse
import sys
import time

from tables import print_table

from transformer.analysis import alignment_choice
from transformer.analysis.faithfulness import FAITHFULNESS_FILE, deletion_test, explanations
from transformer.formats.checkpoint import load_checkpoint, save_beside
from transformer.paper.data import DEV_PREFIX, read_pairs
from transformer.search.decode import GREEDY, translate_ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--sentences", type=int, default=80, help="the first N newstest2013 sentences")
    parser.add_argument("--tokens", type=int, default=4, help="output tokens measured per sentence")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--save", action="store_true", help="store the table beside the checkpoint for the app")
    args = parser.parse_args()
    loaded = load_checkpoint(args.checkpoint)
    texts = [source for source, _ in read_pairs(DEV_PREFIX, loaded.config.languages)[: args.sentences]]
    sources, outputs = translate_ids(loaded.model, loaded.tokenizer, texts, GREEDY)
    pairs = [(source, output) for source, output in zip(sources, outputs, strict=True) if output]
    reading = alignment_choice.default_method(loaded)
    heads = [(reading.layer, reading.head)] if reading.layer is not None and reading.head is not None else []
    started = time.perf_counter()
    results = deletion_test(
        loaded, pairs, explanations(loaded.config.decoder_layers, heads), tokens_per_pair=args.tokens
    )
    by_name: dict[str, dict[int, object]] = {}
    for result in results:
        by_name.setdefault(result.explanation, {})[result.k] = result
    rows, shown = [], []
    for name, by_k in by_name.items():
        one, three = by_k.get(1), by_k.get(3)
        rows.append([name, one.drop, three.drop])
        shown.append(
            [
                name,
                *(f"{d.drop:.2f} [{d.drop_interval[0]:.2f}, {d.drop_interval[1]:.2f}]" for d in (one, three)),
                *(f"{d.gain:+.2f} [{d.gain_interval[0]:+.2f}, {d.gain_interval[1]:+.2f}]" for d in (one, three)),
                three.drop,
            ]
        )
    first = next(iter(by_name.values()))
    rows.append(["random source tokens", first[1].random_drop, first[3].random_drop])
    shown.append(
        [
            "random source tokens",
            f"{first[1].random_drop:.2f}",
            f"{first[3].random_drop:.2f}",
            "",
            "",
            first[3].random_drop,
        ]
    )
    rows.sort(key=lambda row: -row[2])
    shown = [row[:-1] for row in sorted(shown, key=lambda row: -row[-1])]
    print(
        f"{loaded.path.name}: {first[1].tokens} output tokens of {len(pairs)} sentences, "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    headers = ["explanation", "drop, top 1 deleted", "drop, top 3 deleted", "over random, top 1", "over random, top 3"]
    print_table(headers, shown, args.markdown, align="left")
    if args.save:
        table = {
            "sentences": len(pairs),
            "tokens": first[1].tokens,
            "rows": [[row[0], round(float(row[1]), 4), round(float(row[2]), 4)] for row in rows],
            # 95% bootstrap intervals over sentences: each drop, and its gain over random deletions (paired)
            "intervals": {
                name: {
                    str(k): {
                        "drop": list(map(float, by_k[k].drop_interval)),
                        "gain": list(map(float, by_k[k].gain_interval)),
                    }
                    for k in (1, 3)
                }
                for name, by_k in by_name.items()
            },
        }
        print(f"wrote {save_beside(loaded, FAITHFULNESS_FILE, table)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
