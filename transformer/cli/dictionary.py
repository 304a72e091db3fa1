"""``python -m transformer dictionary --train PREFIX …``: rebuild the English→German dictionary the
cross-attention alignment scores use (:func:`transformer.analysis.heads.build_dictionary`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.alignment import DICTIONARY_FILE, build_dictionary
from transformer.paper.data import CorpusSpec, read_corpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer dictionary",
        description="Rebuild the English→German dictionary the cross-attention alignment scores use.",
    )
    parser.add_argument("--train", nargs="+", type=Path, required=True, help="corpus prefixes (PREFIX.en, PREFIX.de)")
    parser.add_argument("--out", type=Path, default=DICTIONARY_FILE)
    parser.add_argument("--min-count", type=int, default=5)
    parser.add_argument("--min-dice", type=float, default=0.15)
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["dictionary"]:  # the older spelling, `… dictionary --train …`
        arguments = arguments[1:]
    args = parser.parse_args(arguments)
    pairs = (pair for prefix in args.train for pair in read_corpus(CorpusSpec(prefix)))
    rows = build_dictionary(pairs, args.min_count, args.min_dice)
    header = (
        "# English word <TAB> German word <TAB> Dice coefficient over sentence pairs of "
        + ", ".join(prefix.name for prefix in args.train)
        + f" (co-occurrence ≥ {args.min_count}, Dice ≥ {args.min_dice}, top 3 per English word)\n"
    )
    args.out.write_text(header + "".join(f"{e}\t{g}\t{d}\n" for e, g, d in rows), encoding="utf-8")
    words = len({row[0] for row in rows})
    print(f"wrote {len(rows)} pairs for {words} English words to {args.out}", file=sys.stderr)
    return 0
