"""How long a chart's text alternative takes (:func:`transformer.plots.describe.describe`): every page writes one
under every chart on every run, so it adds to each answer. Timed on the main page's largest figures, the layers ×
heads grid (model view) and one head's heatmap, for attention maps of 20, 40 and 96 source pieces (the app's most),
6 layers × 8 heads, random weights (the time depends on the size, not on the values); median of ``--repeats``.

    python benchmarks/describe_speed.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import plotly.graph_objects as go

from transformer.plots import attention as plot_attention
from transformer.plots import grid as plot_grid
from transformer.plots.describe import describe


def figures(pieces: int, rng: np.random.Generator) -> dict[str, Callable[[], go.Figure]]:
    """The figures' builders for maps of ``pieces`` source pieces."""
    weights = rng.dirichlet(np.ones(pieces), size=(6, 8, pieces))
    tokens = [f"▁w{i}" for i in range(pieces)]
    return {
        "model view": lambda: plot_grid.model_view_grid(weights, tokens, tokens, "encoder"),
        "head heatmap": lambda: plot_attention.attention_heatmap(weights[4, 0], tokens, tokens, "encoder L5 H1"),
    }


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("pieces  figure         build ms  describe ms")
    for pieces in (20, 40, 96):
        for name, build in figures(pieces, rng).items():
            fig = build()
            described = median_ms(partial(describe, fig), args.repeats)
            print(f"{pieces:>6}  {name:<13} {median_ms(build, args.repeats):>9.1f}  {described:>11.1f}")


if __name__ == "__main__":
    main()
