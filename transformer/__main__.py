"""``python -m transformer <command>``: the one door of every command line.

    python -m transformer                 the commands, one line each
    python -m transformer train --help    a command's own options

Each command is the ``main`` of ``transformer.cli.<command>``, imported only when it runs, so listing the commands
loads neither torch nor the model. ``transformer-train``, ``-translate`` and ``-evaluate`` are console scripts of the
same ``main``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# command → what it does (its module is transformer.cli.<command>; tests/test_layout.py keeps the two lists equal)
COMMANDS = {
    "train": "train a model",
    "translate": "translate sentences",
    "evaluate": "score a checkpoint on a test set",
    "importance": "measure how much each head matters",
    "whatif": "switch heads off, trace, search, force, compare",
    "align": "word alignment from the cross-attention, scored against gold links",
    "dictionary": "the English→German dictionary the cross-attention alignment scores use",
    "atlas": "every attention head measured against gold syntax and gold alignments, beside baselines",
    "paper_figures": "the paper's Figures 3–5 redrawn on a model",
    "precompute": "every measurement the figure pages need, stored beside a checkpoint",
    "timeline": "the paper's figure measures across a run's snapshots",
    "checkpoint": "average checkpoints (§6.1), export one without its optimizer state, or print its configuration",
    "lesson": "lessons: a path through the app, and a lesson as one web page that opens with nothing installed",
    "export": "a checkpoint for CTranslate2, as a Hugging Face model, or as the one-file browser explorer",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {summary}" for name, summary in COMMANDS.items()]
    return (
        "usage: python -m transformer <command> [options]\n\ncommands:\n"
        + "\n".join(lines)
        + "\n\n`python -m transformer <command> --help` gives a command's options."
    )


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] in ("-h", "--help"):
        print(usage())
        return 0 if arguments else 2
    command, rest = arguments[0], arguments[1:]
    if command not in COMMANDS:
        print(f"error: no command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    return importlib.import_module(f"transformer.cli.{command}").main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
