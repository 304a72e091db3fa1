"""Draw a training run's curves — loss, dev loss and dev BLEU over steps and hours, and the model-health measures
(encoder position cosines, cross-attention entropies, best head's alignment) where the log has them — as one PNG.

    python benchmarks/training_curve.py checkpoints/en-de-small/training_log.jsonl --out docs/training_curve.png

Reads the trainer's JSONL metrics log (``metrics.jsonl`` in a run folder, ``training_log.jsonl`` in a shipped
checkpoint) and prints the last dev record.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import matplotlib.pyplot as plt

from transformer.formats.runs import read_metrics
from transformer.plots.training import dev_set_changes, health_records


def draw_health(axes, records: list[dict]) -> None:
    """Encoder position cosines (left) and cross-attention entropies with the best head's alignment (right), per
    layer over steps: darker lines are higher layers."""
    steps = [r["step"] for r in records]
    panels = (
        (axes[0], "encoder_position_cosine", plt.cm.Blues, "encoder: cosine between positions, per layer"),
        (axes[1], "cross_entropy_normalised", plt.cm.Reds, "cross-attention entropy / uniform, per layer"),
    )
    for axis, field, colours, title in panels:
        layers = len(records[-1][field])
        for layer in range(layers):
            axis.plot(
                steps,
                [r[field][layer] for r in records],
                "o-",
                ms=3,
                lw=1,
                color=colours(0.35 + 0.65 * (layer + 1) / layers),
                label=f"layer {layer + 1}",
            )
        axis.set_ylim(0, 1.02)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("optimizer step")
        axis.grid(alpha=0.3)
    alignment = [r.get("cross_alignment_best") for r in records]
    axes[1].plot(
        steps,
        [a if a is not None else float("nan") for a in alignment],
        "k--",
        lw=1.5,
        label="best cross head's alignment",
    )
    for axis in axes:
        axis.legend(fontsize=7, ncol=2, loc="best")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/training_curve.png"))
    args = parser.parse_args()
    records = read_metrics(args.log)
    train = [r for r in records if r.get("kind") == "train"]
    dev = [r for r in records if r.get("kind") == "dev" and r.get("dev_bleu") is not None]
    starts = [r for r in records if r.get("kind") == "init"]  # fine-tuning began here (--init-from)
    if not train:
        raise SystemExit(f"{args.log}: no training records")
    # Dev records are drawn phase by phase: a fine-tuning run may validate on another dev set.
    edges = [float("-inf"), *(r["step"] for r in starts), float("inf")]
    phases = [[r for r in dev if low < r["step"] <= high] for low, high in itertools.pairwise(edges)]
    healthy = health_records(records)
    rows = 2 if healthy else 1
    figure, grid = plt.subplots(rows, 2, figsize=(12, 4.2 * rows), constrained_layout=True, squeeze=False)
    axes = grid[0]
    if healthy:
        draw_health(grid[1], healthy)
    for axis, x_key, x_label in ((axes[0], "step", "optimizer step"), (axes[1], "train_hours", "training hours")):
        axis.plot([r[x_key] for r in train], [r["loss"] for r in train], color="#1f77b4", lw=1, label="training loss")
        bleu = axis.twinx()
        first = next((index for index, phase in enumerate(phases) if phase), 0)
        for index, phase in enumerate(phases):
            label = "" if index == first else "_"  # one legend entry per kind, however many phases
            axis.plot(
                [r[x_key] for r in phase],
                [r["dev_loss"] for r in phase],
                "o-",
                color="#ff7f0e",
                label=f"{label}dev loss",
            )
            bleu.plot(
                [r[x_key] for r in phase],
                [r["dev_bleu"] for r in phase],
                "s--",
                color="#2ca02c",
                label=f"{label}dev BLEU",
            )
        for index, (start, labelled) in enumerate(zip(starts, dev_set_changes(starts), strict=True)):
            axis.axvline(start[x_key], color="#888", ls=":", lw=1, label="_" if index else "fine-tuning starts")
            if labelled:
                axis.annotate(
                    f"dev set: {start['dev']}",
                    (start[x_key], 1),
                    xycoords=("data", "axes fraction"),
                    xytext=(-3, -3),
                    textcoords="offset points",
                    va="top",
                    ha="right",
                    fontsize=8,
                    rotation=90,
                    color="#555",
                )
        axis.set_xlabel(x_label)
        axis.set_ylabel("label-smoothed cross-entropy")
        axis.grid(alpha=0.3)
        bleu.set_ylabel("greedy dev BLEU (dev subset)")
        lines = [line for line in axis.get_lines() + bleu.get_lines() if not line.get_label().startswith("_")]
        axis.legend(lines, [line.get_label() for line in lines], loc="center right")
    figure.suptitle(f"{args.log}: {train[-1]['step']:,} steps, {train[-1]['train_hours']:.1f} h")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    if dev:
        last = dev[-1]
        print(f"last dev record: step {last['step']}, dev loss {last['dev_loss']:.3f}, BLEU {last['dev_bleu']:.2f}")


if __name__ == "__main__":
    main()
