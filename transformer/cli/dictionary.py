"""``python -m transformer.analysis.heads dictionary --train PREFIX …``: rebuild the English→German dictionary the
cross-attention alignment scores use (:func:`transformer.analysis.heads.build_dictionary`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.alignment import DICTIONARY_FILE, build_dictionary
from transformer.data import CorpusSpec, read_corpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer.analysis.heads")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("dictionary", help="rebuild the English→German dictionary for alignment scores")
    build.add_argument("--train", nargs="+", type=Path, required=True, help="corpus prefixes (PREFIX.en, PREFIX.de)")
    build.add_argument("--out", type=Path, default=DICTIONARY_FILE)
    build.add_argument("--min-count", type=int, default=5)
    build.add_argument("--min-dice", type=float, default=0.15)
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
