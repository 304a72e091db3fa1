"""A model trained live (:mod:`transformer.features.toy`) as figures: its loss and held-out accuracy over the steps so
far, and the attention of every head on the probe example, one small heatmap per layer and head.

Both are built as plain dicts (:func:`transformer.plots.style.figure`): the page redraws them every few training
steps while a class watches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.features.toy import ToySnapshot
from transformer.plots.attention import ATTENTION_TRACE, checked_weights, token_labels
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, figure

LOSS_COLOUR = colour("blue")
EXACT_COLOUR = colour("green")
TOKEN_COLOUR = colour("orange")
COLUMNS = 4  # heads per row of tiles
COLUMN_GAP = 0.04  # between tiles, as a fraction of the plotting width
TILE_PX = 170  # a row of tiles, and the room between rows for tick labels and the next tiles' names
ROW_GAP_PX = 60
TILE_AXIS = {"tickmode": "array", "tickfont": {"size": 10}, "automargin": True, "showgrid": False, "zeroline": False}


def training_curve(snapshots: Sequence[ToySnapshot], language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Training loss per token (left axis) and, on the right axis in percent, the held-out exact match and the
    share of symbols written in the right place, against the step."""
    text = words(language, "plot_toy")
    trained = [snapshot for snapshot in snapshots if "loss" in snapshot.metrics]  # none before the first step
    steps = [snapshot.step for snapshot in snapshots]
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": text["loss"],
            "x": [snapshot.step for snapshot in trained],
            "y": [snapshot.metrics["loss"] for snapshot in trained],
            "line": {"color": LOSS_COLOUR},
            "hovertemplate": f"{text['loss']}: %{{y:.3f}}<extra></extra>",
        },
        *(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": text[name],
                "x": steps,
                "y": [100 * snapshot.metrics[name] for snapshot in snapshots],
                "yaxis": "y2",
                "line": {"color": colour, "dash": dash},
                "marker": {"size": 4},
                "hovertemplate": f"{text[name]}: %{{y:.1f}}%<extra></extra>",
            }
            for name, colour, dash in (("exact_match", EXACT_COLOUR, "solid"), ("token_accuracy", TOKEN_COLOUR, "dot"))
        ),
    ]
    layout = {
        **base_layout(60),
        "title": {"text": text["curve_title"]},
        "height": 360,
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": text["step"]}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": text["loss_axis"]}, "rangemode": "tozero", "automargin": True},
        "yaxis2": {
            "title": {"text": text["accuracy_axis"]},
            "automargin": True,
            "overlaying": "y",
            "side": "right",
            "range": [0, 102],
            "tick0": 0,
            "dtick": 20,
            "showgrid": False,
        },
    }
    return figure(traces, layout)


def head_tiles(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    kind: str,
    step: int,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Every head of one attention kind ("cross" or "encoder"), weights [L, H, queries, keys]: one heatmap per
    layer and head on one 0-to-1 colour scale, keys (the input tokens) across and queries down, at most
    :data:`COLUMNS` heads to a row so that a class can read them. Cross-attention rows are labelled by the output
    token each decoder position writes, so copying shows as the diagonal and reversing as the anti-diagonal."""
    text = words(language, "plot_toy")
    weights = checked_weights(weights, query_tokens, key_tokens)
    if kind not in ("cross", "encoder"):
        raise ValueError(f"unknown attention kind {kind!r}; choose cross or encoder")
    num_layers, num_heads, num_queries, num_keys = weights.shape
    queries, keys = token_labels(query_tokens), token_labels(key_tokens)
    query_word, key_word = text[f"{kind}_query"], text[f"{kind}_key"]
    hover = [[f"{query_word} {q} · {key_word} {k}" for k in keys] for q in queries]
    rows_per_layer = -(-num_heads // COLUMNS)
    rows = num_layers * rows_per_layer
    plot_height = rows * TILE_PX + (rows - 1) * ROW_GAP_PX
    width = (1 - COLUMN_GAP * (COLUMNS - 1)) / COLUMNS  # one or two heads keep a quarter of the width each
    traces, layout, annotations = [], {}, []
    for layer in range(num_layers):
        for head in range(num_heads):
            number = layer * num_heads + head + 1
            suffix = "" if number == 1 else str(number)
            row, column = layer * rows_per_layer + head // COLUMNS, head % COLUMNS
            left = column * (width + COLUMN_GAP)
            top = 1 - row * (TILE_PX + ROW_GAP_PX) / plot_height
            traces.append(
                dict(
                    ATTENTION_TRACE,
                    z=weights[layer, head],
                    x=list(range(num_keys)),
                    y=list(range(num_queries)),
                    zmax=1.0,
                    text=hover,
                    hovertemplate=f"%{{text}}<br>{text['weight']}: %{{z:.2f}}<extra></extra>",
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    showscale=number == 1,
                    colorbar={"title": {"text": text["weight"]}, "thickness": 12, "len": min(1.0, 400 / plot_height)},
                )
            )
            layout[f"xaxis{suffix}"] = {
                **TILE_AXIS,
                "domain": [left, left + width],
                "anchor": f"y{suffix}",
                "tickvals": list(range(num_keys)),
                "ticktext": keys,
                "tickangle": -90,
                "constrain": "domain",
                "constraintoward": "left",
            }
            layout[f"yaxis{suffix}"] = {
                **TILE_AXIS,
                "domain": [top - TILE_PX / plot_height, top],
                "anchor": f"x{suffix}",
                "tickvals": list(range(num_queries)),
                "ticktext": queries,
                "showticklabels": column == 0,
                "ticks": "outside" if column == 0 else "",
                "autorange": "reversed",
                "scaleanchor": f"x{suffix}",  # square cells: the tile shrinks inside its share of the figure
                "constrain": "domain",
                "constraintoward": "top",
            }
            tile = text["tile"].format(layer=layer + 1, head=head + 1)
            annotations.append(
                {
                    "text": tile,
                    "x": left,
                    "y": top,
                    "xref": "paper",
                    "yref": "paper",
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "showarrow": False,
                }
            )
    layout.update(
        base_layout(90),
        title={"text": text[f"{kind}_title"].format(step=step)},
        height=plot_height + 150,
        plot_bgcolor=colour("white"),
        annotations=annotations,
    )
    return figure(traces, layout)
