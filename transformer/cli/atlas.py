"""The head atlas from the command line (:mod:`transformer.analysis.atlas`).

    python -m transformer atlas --checkpoint DIR --json [--save] [--sentences N]

Measures every head of the checkpoint: encoder heads against English gold syntax, decoder self-attention heads
against German gold syntax (Universal Dependencies PUD, ``../shared/data/syntax/``; seen in training, so each head's
comparison chosen there is scored again on held-out text: English EWT and German GSD development sets), cross heads
against gold word alignments (``../shared/data/en-de/align/``), each beside its baseline with a 95% interval; with
the head's importance when ``importance.json`` was measured on these weights. Prints one line per head, or with
``--json`` one JSON record per head (kind, 1-based layer and head, scores with their baselines, importance, cluster,
map place, related heads). ``--save`` stores the whole atlas beside the checkpoint (``atlas.json``), where the app
reads it, with each head's clearest examples from an index of dev and test sentences
(:mod:`transformer.analysis.atlas_index`, stored too as ``atlas_index.npz``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import torch

from transformer.analysis import atlas, atlas_index
from transformer.cli import command_parser, fail, load_or_report


def parser() -> argparse.ArgumentParser:
    parse = command_parser("atlas", __doc__)
    parse.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parse.add_argument("--json", action="store_true", help="print one JSON record per head, one per line")
    parse.add_argument(
        "--save", action="store_true", help=f"store the atlas beside the checkpoint ({atlas.ATLAS_FILE})"
    )
    parse.add_argument("--sentences", type=int, default=None, help="only the first N treebank pairs (default: all)")
    parse.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    return parse


def describe(record: dict) -> str:
    """One line: the head, its group, its best score beside its baseline, its importance."""
    head = f"{record['kind']:8s} L{record['layer']}H{record['head']}"
    best = record["scores"][0] if record["scores"] else None
    if best is None:
        score = "no score"
    elif "aer" in best:
        difference = best.get("difference") or {}
        interval = f" (difference [{difference['low']:+.3f}, {difference['high']:+.3f}])" if difference else ""
        score = f"AER {best['aer']:.3f} ({best['reading']}) vs diagonal {best['baseline']:.3f}{interval}"
    else:
        direction = "dep→head" if best["direction"] == "dependent_to_head" else "head→dep"
        score = (
            f"{best['relation']} {direction} {best['accuracy']:.2f} vs offset {best['baseline_offset']:+d} "
            f"{best['baseline']:.2f}"
        )
        held = best.get("held_out")
        if held:
            margin = held["margin"]
            score += (
                f"; held out {held['accuracy']:.2f} vs {held['baseline']:.2f}, "
                f"margin {margin['value']:+.2f} [{margin['low']:+.2f}, {margin['high']:+.2f}]"
            )
    drop = record["importance_bleu_drop"]
    importance = "" if drop is None else f"; switched off alone: BLEU {-drop:+.2f}"
    return f"{head}  {record['cluster']:20s} {score}{importance}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    for path in (atlas.ENGLISH_TREES, atlas.GERMAN_TREES, atlas.ALIGNMENT_GOLD.with_suffix(".de-en.wa")):
        if not path.is_file():
            return fail(f"{path} not found: the atlas needs the gold data in ../shared/data")
    for path in (atlas.HELD_OUT_ENGLISH, atlas.HELD_OUT_GERMAN):
        if not path.is_file():
            print(f"warning: {path} not found: no held-out syntax scores (PUD only)", file=sys.stderr)
    loaded = load_or_report(args.checkpoint)
    if loaded is None:
        return 1
    started = time.perf_counter()
    try:
        found = atlas.build(loaded, args.sentences)
    except atlas.AtlasError as error:
        return fail(error)
    pairs, names = atlas_index.default_pairs(loaded.config.languages)
    index = atlas_index.build(loaded, pairs, names) if pairs else None
    if index is not None:
        atlas.add_examples(found["heads"], index)
    for record in found["heads"]:
        print(json.dumps(record, ensure_ascii=False) if args.json else describe(record))
    treebank = found["treebank"]
    print(
        f"{len(found['heads'])} heads measured on {treebank['pairs'] - treebank['skipped']} treebank pairs "
        f"({treebank['skipped']} left out) and {found['alignment_gold']['pairs']} aligned pairs in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    if args.save:
        atlas.save(loaded, found)
        print(f"stored {loaded.store / atlas.ATLAS_FILE}", file=sys.stderr)
        if index is not None:
            print(f"stored {atlas_index.save(loaded, index)}", file=sys.stderr)
    return 0
