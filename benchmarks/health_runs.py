"""Compare training runs by their model health: one PNG of the health measures over steps, and a Markdown table.

    python benchmarks/health_runs.py runs/gain1.0/metrics.jsonl=gain\\ 1 runs/gain0.5/metrics.jsonl=gain\\ 0.5 \\
        --out docs/health_runs.png

Each argument is a trainer log (``metrics.jsonl`` or ``training_log.jsonl``) with a label after ``=``. Panels: the
last encoder layer's mean cosine between positions (collapse → 1), the encoder's mean over layers, the
cross-attention entropy / uniform averaged over decoder layers (uniform → 1), the best cross head's dictionary
alignment, and the dev loss. The table lists every validation's figures per layer.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt

from transformer.analysis.health import per_layer
from transformer.formats.runs import read_metrics
from transformer.plots.training import health_records

PANELS = (
    ("last encoder layer: cosine between positions", lambda r: r["encoder_position_cosine"][-1]),
    ("encoder, mean over layers: cosine between positions", lambda r: mean(r["encoder_position_cosine"])),
    ("cross-attention entropy / uniform, mean over layers", lambda r: mean(r["cross_entropy_normalised"])),
    ("best cross head's dictionary alignment", lambda r: r.get("cross_alignment_best")),
    ("encoder self-attention entropy / uniform, last layer", lambda r: r["encoder_entropy_normalised"][-1]),
    ("dev loss (label-smoothed)", lambda r: r.get("dev_loss")),
)


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="LOG=LABEL")
    parser.add_argument("--out", type=Path, default=Path("docs/health_runs.png"))
    args = parser.parse_args()
    runs = []
    for argument in args.runs:
        log, _, label = argument.partition("=")
        records = health_records(read_metrics(log))
        if not records:
            raise SystemExit(f"{log}: no validation records with health measures")
        runs.append((label or log, records))
    figure, axes = plt.subplots(2, 3, figsize=(15, 7.5), constrained_layout=True)
    for axis, (title, value) in zip(axes.flat, PANELS, strict=True):
        for label, records in runs:
            values = [value(r) for r in records]
            axis.plot(
                [r["step"] for r in records], [float("nan") if v is None else v for v in values], "o-", label=label
            )
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("optimizer step")
        axis.grid(alpha=0.3)
        if "loss" not in title:
            axis.set_ylim(0, 1.02)
    axes.flat[0].legend()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=100)
    print(f"wrote {args.out}\n")
    print(
        "| run | step | dev loss | encoder position cosine by layer | cross entropy / uniform by layer | "
        "encoder entropy / uniform by layer | best alignment |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, records in runs:
        for r in records:
            alignment = r.get("cross_alignment_best")
            print(
                f"| {label} | {r['step']:,} | {r['dev_loss']:.3f} | {per_layer(r['encoder_position_cosine'])} | "
                f"{per_layer(r['cross_entropy_normalised'])} | {per_layer(r['encoder_entropy_normalised'])} | "
                f"{'–' if alignment is None else f'{alignment:.3f}'} |"
            )


if __name__ == "__main__":
    main()
