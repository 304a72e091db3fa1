"""Every head of every layer at once: a layers × heads grid of small heatmaps on one colour scale, each tile a target
to click (the main page's *Model view*)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.attention import (
    ATTENTION_TRACE,
    MASK_FILL,
    checked_weights,
    finite_max,
    future_cells,
    token_labels,
)
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, figure, safe_label

OPENED_OUTLINE = colour("mark_red")  # the tile of the head that is open below the grid
AXIS = {"type": "category", "showgrid": False, "zeroline": False}  # ranges fixed: autorange pads round markers
MASK_TRACE = {
    "type": "heatmap",
    "colorscale": [[0, MASK_FILL], [1, MASK_FILL]],
    "showscale": False,
    "hoverinfo": "skip",
}


def model_view_grid(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    causal: bool = False,
    fitted: bool = False,
    language: str = DEFAULT_LANGUAGE,
    opened: tuple[int, int] | None = None,
) -> go.Figure:
    """Every head of every layer at once: a layers × heads grid of small heatmaps on one colour scale (0 to 1, or
    to the largest weight with ``fitted``), each tile a target to click.

    ``weights`` is [L, H, queries, keys]. The tiles are drawn as one heatmap on a shared canvas, separated by empty
    rows and columns: a single trace builds and draws in a few milliseconds where L × H subplots take hundreds.
    Rows and columns are categories ("layer l · query (position)", "head h · key (position)"). With ``causal`` the
    future cells are empty and a grey layer behind them shows through.

    Plotly reports no clicks on a heatmap, so an invisible marker sits on each tile's centre, carrying
    ``customdata`` [layer, head] (1-based): with no hover cut-off, a click anywhere selects the marker nearest to
    the pointer (the centre of the tile it is on), which the page reads as "open this head"; hovering a tile names
    it and says so (a tile's single weights are read on the large heatmap of the head it opens). ``opened``
    (0-based layer, head) outlines the tile that is open.
    """
    text = words(language, "plot_attention")
    weights = checked_weights(weights, query_tokens, key_tokens)
    canvas, mask = _canvas(weights, causal)
    x, y = _categories(weights.shape, token_labels(query_tokens), token_labels(key_tokens), text)
    num_layers, num_heads, num_queries, num_keys = weights.shape
    head_centres = [x[head * (num_keys + 1) + num_keys // 2] for head in range(num_heads)]
    layer_centres = [y[layer * (num_queries + 1) + num_queries // 2] for layer in range(num_layers)]
    heatmap = dict(
        ATTENTION_TRACE,
        hoverinfo="skip",  # the tiles' markers answer the pointer
        z=canvas,
        x=x,
        y=y,
        zmax=finite_max(canvas) if fitted else 1.0,
        colorbar={"title": {"text": text["weight"]}, "thickness": 14},
    )
    mask_layer = [dict(MASK_TRACE, z=mask, x=x, y=y, name=text["masked_future"])] if causal else []
    # Drawn in this order: the grey of masked cells behind the weights, the clickable markers on top.
    traces = [*mask_layer, heatmap, _tile_markers(head_centres, layer_centres, text["open_head"])]
    layout = {
        "xaxis": dict(
            AXIS,
            side="top",
            tickangle=0,
            tickvals=head_centres,
            range=[-0.5, len(x) - 0.5],
            ticktext=[f"H{head + 1}" for head in range(num_heads)],
        ),
        "yaxis": dict(
            AXIS,
            tickvals=layer_centres,
            range=[len(y) - 0.5, -0.5],  # L1 on top
            ticktext=[f"L{layer + 1}" for layer in range(num_layers)],
        ),
        "hovermode": "closest",
        "hoverdistance": -1,  # the pointer always answers to the nearest tile centre: the tile it is on
        "title": {"text": safe_label(title) + (text["grey_masked"] if causal else "")},
        "height": int(min(1600, max(400, 130 * num_layers + 120))),
        **base_layout(90),
        "plot_bgcolor": colour("white"),
    }
    if opened is not None and None not in opened:
        layout["shapes"] = [_outline(opened, num_queries, num_keys)]
    return figure(traces, layout)


def _canvas(weights: np.ndarray, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """The tiles on one canvas with an empty row and column between them, and the masked cells' grey layer."""
    num_layers, num_heads, num_queries, num_keys = weights.shape
    masked = future_cells(num_queries, num_keys) if causal else np.zeros((num_queries, num_keys), dtype=bool)
    shape = (num_layers * (num_queries + 1) - 1, num_heads * (num_keys + 1) - 1)
    canvas = np.full(shape, np.nan, dtype=np.float32)  # float32: half the bytes sent to the browser
    mask = np.full(shape, np.nan, dtype=np.float32)
    for layer in range(num_layers):
        for head in range(num_heads):
            rows = slice(layer * (num_queries + 1), layer * (num_queries + 1) + num_queries)
            columns = slice(head * (num_keys + 1), head * (num_keys + 1) + num_keys)
            canvas[rows, columns] = np.where(masked, np.nan, weights[layer, head])
            mask[rows, columns] = np.where(masked, 1.0, np.nan)
    return canvas, mask


def _categories(
    shape: tuple[int, ...], queries: list[str], keys: list[str], text: dict[str, str]
) -> tuple[list[str], list[str]]:
    """The canvas's column and row names, in the interface language (a text alternative reads them out): "head h ·
    key k (j)" and "layer l · query q (i)", gaps in between."""
    num_layers, num_heads = shape[:2]
    return _blocks(text["grid_column"], num_heads, keys), _blocks(text["grid_row"], num_layers, queries)


def _blocks(template: str, count: int, labels: list[str]) -> list[str]:
    """``count`` blocks of one category per label (``template`` with {block} and {token}, then the label's
    position) with a gap category between."""
    names = [
        f"{template.format(block=b + 1, token=labels[i])} ({i})" if i < len(labels) else f"gap {b}"
        for b in range(count)
        for i in range(len(labels) + 1)
    ]
    return names[:-1]


def _tile_markers(head_centres: list[str], layer_centres: list[str], hover: str) -> dict:
    """One invisible, clickable point per tile, on its centre, carrying [layer, head] (1-based)."""
    tiles = [(layer, head) for layer in range(len(layer_centres)) for head in range(len(head_centres))]
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "heads",
        "showlegend": False,
        "x": [head_centres[head] for _, head in tiles],
        "y": [layer_centres[layer] for layer, _ in tiles],
        "customdata": [[layer + 1, head + 1] for layer, head in tiles],
        "marker": {"size": 4, "opacity": 0},
        "selected": {"marker": {"opacity": 0}},
        "unselected": {"marker": {"opacity": 0}},
        "hovertemplate": hover.replace("{layer}", "%{customdata[0]}").replace("{head}", "%{customdata[1]}")
        + "<extra></extra>",
    }


def _outline(opened: tuple[int, int], num_queries: int, num_keys: int) -> dict:
    """A rectangle round the tile of ``opened`` (0-based layer, head)."""
    first_row, first_column = opened[0] * (num_queries + 1), opened[1] * (num_keys + 1)
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "line": {"color": OPENED_OUTLINE, "width": 3},
        "x0": first_column - 0.5,
        "x1": first_column + num_keys - 0.5,
        "y0": first_row - 0.5,
        "y1": first_row + num_queries - 0.5,
    }
