"""How much of a corpus a model has memorised: its loss on training pairs against held-out pairs of the same kind.

    python benchmarks/generalisation_gap.py                                  # the shipped model
    python benchmarks/generalisation_gap.py runs/a/checkpoints/step-0005119 checkpoints/en-de-small --markdown

For each checkpoint: the per-token negative log-likelihood (nats, no label smoothing, evaluation mode, float32) of
the first --sentences pairs of a training corpus and of a held-out set drawn from the same distribution (by default
Multi30k's training split and its validation split). A gap that widens from checkpoint to checkpoint while the
held-out loss stalls says the model is fitting its training sentences rather than the task: more regularisation
(dropout) or more data, not more steps of the same, is what helps then.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
from tables import print_table  # benchmarks/tables.py, beside this script

from transformer.cli.training.validation import sequence_losses
from transformer.formats import checkpoint as ckpt
from transformer.paper.data import DATA_ROOT, CorpusSpec, collate, encode_pairs, read_corpus


def mean_nll(loaded: ckpt.LoadedCheckpoint, pairs: list[tuple[str, str]], batch_size: int = 64) -> float:
    """Per-target-token negative log-likelihood of ``pairs`` (teacher forcing, including </s>)."""
    examples = encode_pairs(pairs, loaded.tokenizer)
    total, tokens = 0.0, 0
    with torch.inference_mode():
        for start in range(0, len(examples), batch_size):
            batch = collate(examples[start : start + batch_size])
            logits = loaded.model(batch.source, batch.target_input).logits
            _, nll = sequence_losses(logits, batch.target_output, label_smoothing=0.0)
            total += float(nll)
            tokens += batch.num_target_tokens
    return total / max(tokens, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="*", default=[None], help="checkpoint folders (default: the shipped one)")
    parser.add_argument("--train", type=Path, default=DATA_ROOT / "train" / "multi30k", help="training corpus prefix")
    parser.add_argument("--held-out", type=Path, default=DATA_ROOT / "dev" / "multi30k_val", help="held-out prefix")
    parser.add_argument("--sentences", type=int, default=1000, help="pairs taken from the start of each")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    train_pairs = read_corpus(CorpusSpec(args.train))[: args.sentences]
    held_out_pairs = read_corpus(CorpusSpec(args.held_out))[: args.sentences]
    header = ("checkpoint", "step", f"{args.train.name} NLL", f"{args.held_out.name} NLL", "gap", "held-out ppl")
    rows = []
    for name in args.checkpoints:
        try:
            loaded = ckpt.load_checkpoint(name)
        except (ckpt.CheckpointError, FileNotFoundError) as error:
            raise SystemExit(f"error: {error}") from None
        train_nll, held_out_nll = mean_nll(loaded, train_pairs), mean_nll(loaded, held_out_pairs)
        step = loaded.meta.get("step", "?")
        rows.append(
            (
                str(loaded.path),
                f"{step:,}" if isinstance(step, int) else str(step),
                f"{train_nll:.3f}",
                f"{held_out_nll:.3f}",
                f"{held_out_nll - train_nll:.3f}",
                f"{math.exp(held_out_nll):.2f}",
            )
        )
    print_table(header, rows, args.markdown, align="left")


if __name__ == "__main__":
    main()
