"""Figures of heads measured: every head's score as a layers × heads heatmap (with the notable heads marked and the
heads the best one is not clearly ahead of), and the heads that link a word pair, ranked."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, colour_scale, figure, safe_label


def score_heatmap(
    values: np.ndarray,
    title: str,
    first: int = 1,
    fmt: str = ".2f",
    zrange: tuple[float, float] | None = None,
    language: str = DEFAULT_LANGUAGE,
    low: np.ndarray | None = None,
    high: np.ndarray | None = None,
    near_best: np.ndarray | None = None,
) -> go.Figure:
    """A per-head score [layers, heads] as a heatmap with the value written in each cell; layers and heads are
    numbered from ``first``. Missing scores (NaN) stay blank. ``zrange`` fixes the colour scale (0–1 for shares, so
    that scores near zero look near zero); without it the scale is fitted to the values. With ``low``/``high``
    [layers, heads], each cell's hover gives its 95% interval; ``near_best`` [layers, heads] (booleans) frames the
    heads the best one is not clearly ahead of."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"expected a [layers, heads] table, got shape {values.shape}")
    text = words(language, "plot_scores")
    layers = [text["layer"].format(layer=i + first) for i in range(values.shape[0])]
    heads = [text["head"].format(head=i + first) for i in range(values.shape[1])]
    cells = [["" if np.isnan(v) else format(v, fmt) for v in row] for row in values]
    hover = "%{y}, %{x}: %{z:" + fmt + "}"
    customdata = None
    if low is not None and high is not None:
        customdata = np.stack([np.asarray(low, dtype=float), np.asarray(high, dtype=float)], axis=-1)
        hover += " [%{customdata[0]:" + fmt + "}, %{customdata[1]:" + fmt + "}] (95%)"
    trace = {
        "type": "heatmap",
        "z": values,
        "x": heads,
        "y": layers,
        "text": cells,
        "texttemplate": "%{text}",
        "customdata": customdata,
        "colorscale": colour_scale("Blues"),  # the scale of every attention map: dark means more
        "zmin": None if zrange is None else zrange[0],
        "zmax": None if zrange is None else zrange[1],
        "hovertemplate": hover + "<extra></extra>",
    }
    traces = [{key: value for key, value in trace.items() if value is not None}]
    layout = {
        "yaxis": {"autorange": "reversed"},
        "title": {"text": safe_label(title)},
        "height": int(120 + 38 * values.shape[0]),
        **base_layout(50),
    }
    if near_best is not None and np.asarray(near_best).any():
        rows, columns = np.nonzero(np.asarray(near_best, dtype=bool))
        bottom, top = zrange if zrange is not None else (np.nanmin(values), np.nanmax(values))
        scaled = (values[rows, columns] - bottom) / max(top - bottom, 1e-12)
        layout["shapes"] = [  # a frame inside the cell, dark on a bright cell and light on a dark one
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": column - 0.46,
                "x1": column + 0.46,
                "y0": row - 0.42,
                "y1": row + 0.42,
                "line": {"width": 3, "color": colour("black") if share >= 0.5 else colour("white")},
            }
            for row, column, share in zip(rows.tolist(), columns.tolist(), scaled.tolist(), strict=True)
        ]
        layout["annotations"] = [
            {
                "text": "▢ " + safe_label(text["near_best"]),
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": 0,
                "yshift": -40,
                "xanchor": "left",
                "yanchor": "top",
                "showarrow": False,
            }
        ]
        layout["height"] += 54
        layout["margin"] = {**layout["margin"], "b": 64}
    return figure(traces, layout)


LINK_COLOURS = {"encoder": "blue", "decoder": "green", "cross": "orange"}  # roles of the palette, by kind


def linking_heads(links: Sequence, labels: Sequence[str], title: str, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The heads that link two words, strongest at the top: one bar per head (``links``: its kind, layer, head and
    weight, :class:`transformer.analysis.linking.Link`), labelled by ``labels`` (the kind's short name, layer and
    head), coloured by the attention kind."""
    text = words(language, "plot_links")
    weights = [link.weight for link in links]
    trace = {
        "type": "bar",
        "orientation": "h",
        "x": weights,
        "y": [safe_label(label) for label in labels],
        "marker": {"color": [colour(LINK_COLOURS[link.kind]) for link in links]},
        "text": [f"{weight:.2f}" for weight in weights],
        "textposition": "outside",
        "hovertemplate": "%{y}: %{x:.3f}<extra></extra>",
    }
    layout = {
        "title": {"text": safe_label(title)},
        "xaxis": {"title": {"text": text["weight"]}, "range": [0, max(1.0, *weights) * 1.12] if weights else [0, 1]},
        "yaxis": {"autorange": "reversed", "automargin": True},
        "height": int(110 + 26 * max(1, len(links))),
        **base_layout(50, 40),
    }
    return figure([trace], layout)
