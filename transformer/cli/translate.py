"""Translate standard input to standard output, one sentence per line.

    echo "The children are playing in the park." | python -m transformer translate [--checkpoint DIR] [--beam 4]

Empty lines stay empty; lines longer than the model's reach are cut, with a warning on standard error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from transformer.cli import command_parser, load_or_report
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.search.decode import (
    EXTRA_OUTPUT_TOKENS,
    PRECISIONS,
    DecodingOptions,
    encode_source,
    max_source_tokens,
    translate,
)


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 is greedy decoding")
    parser.add_argument("--alpha", type=float, default=0.6, help="length penalty α")
    parser.add_argument(
        "--max-extra-tokens", type=int, default=EXTRA_OUTPUT_TOKENS, help="outputs end at input length + this many"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="search with float32 weights, or a bfloat16 copy (faster on CPUs with AVX512-BF16 or AMX; the "
        "shipped models' multi30k BLEU moved by at most 0.1, and most translations are identical)",
    )
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")


def decoding_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> DecodingOptions:
    """The --beam, --alpha, --max-extra-tokens and --precision arguments as one object (a usage error if invalid)."""
    try:
        return DecodingOptions(args.beam, args.alpha, args.max_extra_tokens, args.precision)
    except ValueError as error:
        parser.error(str(error))


DecodingCommand = Callable[[argparse.Namespace, DecodingOptions, LoadedCheckpoint], int]


def run_decoding(parser: argparse.ArgumentParser, argv: Sequence[str] | None, command: DecodingCommand) -> int:
    """A decoding command: parse the command line (with :func:`add_decoding_arguments`), set the threads, load the
    checkpoint and run ``command`` on the arguments, the decoding options and the checkpoint; 1, after a message on
    standard error, when the checkpoint cannot be loaded."""
    args = parser.parse_args(argv)
    options = decoding_options(parser, args)
    loaded = load_or_report(args.checkpoint, device=args.device, threads=args.threads)
    return 1 if loaded is None else command(args, options, loaded)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("translate", __doc__)
    add_decoding_arguments(parser)
    return run_decoding(parser, argv, _translate_lines)


def _translate_lines(args: argparse.Namespace, options: DecodingOptions, loaded: LoadedCheckpoint) -> int:
    """Standard input, line by line, to standard output."""
    lines = [line.rstrip("\n") for line in sys.stdin]
    limit = max_source_tokens(loaded.model)
    for number, line in enumerate(lines, start=1):
        if line.strip() and encode_source(loaded.tokenizer, line, limit).truncated:
            print(f"warning: line {number} is longer than {limit} tokens and was cut", file=sys.stderr)
    indices = [i for i, line in enumerate(lines) if line.strip()]
    outputs = translate(loaded.model, loaded.tokenizer, [lines[i] for i in indices], options, args.batch_size)
    results = [""] * len(lines)
    for index, output in zip(indices, outputs, strict=True):
        results[index] = output
    for result in results:
        print(result)
    return 0
