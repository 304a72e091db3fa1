"""Attention as figures: one head as a heatmap, the paper's token lines, and per-head score maps (every layer and
head at once as a grid: :mod:`transformer.plots.grid`).

Tokens are user text: plotly renders labels, hover text and titles as a subset of HTML, so every token, and every
title passed in (which may quote a token), goes through :func:`safe_label` before it reaches a figure: ``</b>`` in a
sentence is shown, not interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, message, words
from transformer.plots.palettes import HEAD_COLOURS as PALETTE_HEAD_COLOURS
from transformer.plots.palettes import colour, head_style
from transformer.plots.style import base_layout, colour_scale, figure, label_width, safe_label

ATTENTION_COLOURS = "Blues"
MASK_FILL = colour("faint")
MASK_HATCH = colour("hatch")
# Eight colours, then the same eight dashed (:func:`transformer.plots.palettes.head_style`): 16 heads stay apart
# by colour and dash, also for a reader who tells fewer colours apart.
HEAD_COLOURS = PALETTE_HEAD_COLOURS["standard"]
# What every attention heatmap shares; a figure adds its cells, colour bar and upper bound.
ATTENTION_TRACE = {"type": "heatmap", "colorscale": colour_scale(ATTENTION_COLOURS), "zmin": 0.0, "name": "attention"}
OPACITY_LEVELS = 20  # lines are grouped into this many opacity steps instead of one trace per line


def token_labels(tokens: Sequence[str]) -> list[str]:
    return [safe_label(token) for token in tokens]


def check_tokens(shape: tuple[int, ...], query_tokens: Sequence[str], key_tokens: Sequence[str]) -> None:
    if shape[-2:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"attention of shape {shape} does not match {len(query_tokens)} query and {len(key_tokens)} key tokens"
        )


def checked_weights(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    leading: tuple[str, ...] = ("layers", "heads"),
    what: str = "weights",
) -> np.ndarray:
    """``weights`` as floats, checked to be [*leading, queries, keys] with one query and one key per token (the error
    calls them ``what``)."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != len(leading) + 2:
        raise ValueError(f"expected {what} shaped [{', '.join(leading)}, queries, keys], got {weights.shape}")
    check_tokens(weights.shape, query_tokens, key_tokens)
    return weights


def future_cells(num_queries: int, num_keys: int) -> np.ndarray:
    """True where the key comes after the query: what the decoder's causal mask hides (§3.2.3)."""
    return np.arange(num_keys)[None, :] > np.arange(num_queries)[:, None]


def _mask_outline(num_queries: int, num_keys: int) -> tuple[list[float], list[float]]:
    """Corners of the staircase polygon covering the future cells, in cell coordinates (cell centres at integers)."""
    rows = min(num_queries, num_keys - 1)  # query rows with at least one future key
    if rows <= 0:
        return [], []
    xs, ys = [0.5, num_keys - 0.5, num_keys - 0.5], [-0.5, -0.5, rows - 0.5]
    for row in range(rows - 1, -1, -1):
        xs += [row + 0.5, row + 0.5]
        ys += [row + 0.5, row - 0.5]
    return xs, ys


def finite_max(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def uniformity_note(matrix: np.ndarray, causal: bool = False, language: str = DEFAULT_LANGUAGE) -> str:
    """ "≈ uniform: …" when a map's rows hardly prefer any key (the largest weight of a row is on average less than
    1.5 × the uniform weight 1 / visible keys); "" otherwise. A fitted colour scale makes such maps look as strong as
    sharp ones, so the figure says it in words."""
    matrix = np.asarray(matrix, dtype=float)
    num_queries, num_keys = matrix.shape
    if num_queries == 0 or num_keys < 2:
        return ""
    visible = np.minimum(np.arange(1, num_queries + 1), num_keys) if causal else np.full(num_queries, num_keys)
    masked = future_cells(num_queries, num_keys) if causal else np.zeros(matrix.shape, dtype=bool)
    largest = np.where(masked, -np.inf, np.nan_to_num(matrix)).max(axis=1)
    rows = visible >= 2  # a row with one visible key has nothing to choose
    if not rows.any() or (largest[rows] * visible[rows]).mean() >= 1.5:
        return ""
    keys = (
        message(language, "plot_attention.keys", count=num_keys)
        if not causal
        else message(language, "plot_attention.keys_range", most=int(visible.max()))
    )
    return message(
        language, "plot_attention.uniform", largest=largest[rows].mean(), keys=keys, uniform=(1 / visible[rows]).mean()
    )


def _tick_size(count: int) -> int:
    """Tick label size for ``count`` labels on one axis: smaller as they crowd, never below 10 px."""
    return 12 if count <= 30 else 10


def heatmap_height(rows: int) -> int:
    """The height of a heatmap with ``rows`` token rows: 20 px a row up to 45 rows (1,100 px), then 14 px a row
    (a long sentence's pieces), so that every row keeps room for its 10 px label; at least 380 px."""
    return int(max(380, min(20 * rows, max(900, 14 * rows)) + 200))


def attention_heatmap(
    matrix: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    causal: bool = False,
    fitted: bool = False,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """One head (or an average) as a [queries, keys] heatmap: rows are queries top to bottom, columns are keys.

    The axes are positions with the tokens as tick labels, so repeated tokens keep their own rows. With ``causal``
    (decoder self-attention) the future cells hold no weight at all: they are left empty and covered by a grey
    hatched polygon, and their hover says they are masked. The colour scale runs from 0 to 1 (weights are
    probabilities, and maps compare at a glance), or with ``fitted`` from 0 to the map's largest weight; a map whose
    rows are nearly uniform says so under its title (:func:`uniformity_note`).
    """
    text = words(language, "plot_attention")
    matrix = np.asarray(matrix, dtype=float)
    check_tokens(matrix.shape, query_tokens, key_tokens)
    num_queries, num_keys = matrix.shape
    queries, keys = token_labels(query_tokens), token_labels(key_tokens)
    masked = future_cells(num_queries, num_keys) if causal else np.zeros(matrix.shape, dtype=bool)
    shown = np.where(masked, np.nan, matrix)
    heatmap = dict(
        ATTENTION_TRACE,
        z=shown,
        x=np.arange(num_keys),
        y=np.arange(num_queries),
        customdata=_cell_hover(queries, keys, np.where(masked, text["masked_future"], _weights_text(matrix)), text),
        hovertemplate="%{customdata}<extra></extra>",
        hoverongaps=True,
        zmax=finite_max(shown) if fitted else 1.0,
        colorbar={"title": {"text": text["weight"]}, "thickness": 14},
    )
    traces = [heatmap, _mask_polygon(num_queries, num_keys, text["masked_future"])] if causal else [heatmap]
    note = uniformity_note(matrix, causal, language)
    key_angle = -60 if num_keys <= 25 else -90
    layout = {
        "title": {"text": safe_label(title), "subtitle": {"text": note}} if note else {"text": safe_label(title)},
        "height": heatmap_height(num_queries),
        **base_layout(),
        "margin": _token_margins(queries, keys, key_angle),
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        "plot_bgcolor": colour("white"),
        # Long sentences: upright, smaller labels that never overlap.
        "xaxis": dict(_token_axis(keys, text["key"]), tickangle=key_angle, range=[-0.5, num_keys - 0.5]),
        "yaxis": dict(_token_axis(queries, text["query"]), autorange="reversed"),
    }
    return figure(traces, layout)


def _weights_text(matrix: np.ndarray) -> np.ndarray:
    return np.char.mod("%.3f", np.nan_to_num(matrix))


def _cell_hover(queries: list[str], keys: list[str], weights: np.ndarray, text: dict) -> list[list[str]]:
    """One hover string per cell: a cell as [query, key, weight] is four objects for plotly.py to copy twice and
    walk twice more on the way to the browser: about half the time from building a heatmap to sending it."""
    return [
        [
            f"{text['query']}: {query}<br>{text['key']}: {key}<br>{text['weight']}: {weight}"
            for key, weight in zip(keys, row, strict=True)
        ]
        for query, row in zip(queries, weights.tolist(), strict=True)
    ]


def _mask_polygon(num_queries: int, num_keys: int, name: str) -> dict:
    """The grey hatched staircase over the decoder's future cells (no hover: the heatmap's names them)."""
    xs, ys = _mask_outline(num_queries, num_keys)
    return {
        "type": "scatter",
        "x": xs,
        "y": ys,
        "fill": "toself",
        "mode": "lines",
        "line": {"width": 0},
        "fillcolor": MASK_FILL,
        "fillpattern": {"shape": "/", "fgcolor": MASK_HATCH, "bgcolor": MASK_FILL, "size": 8},
        "name": name,
        "hoverinfo": "skip",
        "showlegend": True,
    }


def _token_margins(queries: list[str], keys: list[str], key_angle: int) -> dict:
    """Margins wide enough for the token labels (queries on the left, keys below at ``key_angle`` degrees) and the
    axis titles, estimated from the characters (:func:`label_width`).

    The axes still push their margins out when the labels need more (``automargin``), but plotly.js finds that
    out only after drawing the whole figure, and then draws it again: with margins that already fit, the browser
    drew a heatmap in 12 instead of 31 ms. The constants are what plotly.js added to the widest label of 44 figures
    of tokens (59–61 px beside the queries; below the keys, 60–62 px at 60°, 57–59 px upright), rounded up."""
    left = max((label_width(label, _tick_size(len(queries))) for label in queries), default=0.0)
    below = max((label_width(label, _tick_size(len(keys))) for label in keys), default=0.0)
    angle = np.radians(abs(key_angle))
    size = _tick_size(len(keys))
    return {
        **base_layout()["margin"],
        "l": int(np.ceil(left + 62)),
        "b": int(np.ceil(below * np.sin(angle) + size * np.cos(angle) + (63 if abs(key_angle) < 90 else 60))),
    }


def _token_axis(labels: list[str], title: str) -> dict:
    """An axis of positions labelled with their tokens; the labels push the plot aside instead of being cut."""
    return {
        "tickmode": "array",
        "tickvals": list(range(len(labels))),
        "ticktext": labels,
        "tickfont": {"size": _tick_size(len(labels))},
        "automargin": True,
        # Labels are never hidden for reaching past the figure's edge: the margins make room for them. (Finding
        # which would reach past measured every label in the browser: a third of the heatmap's drawing time.)
        "ticklabeloverflow": "allow",
        "title": {"text": title},
        "showgrid": False,
        "zeroline": False,
    }


def token_lines(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    heads: list[int] | None = None,
    query_index: int | None = None,
    title: str = "",
    min_weight: float = 0.05,
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """The paper's appendix figures (tensor2tensor style): queries on the left, keys on the right, one line per
    query–key pair whose opacity is the attention weight, one colour and dash per head (eight colours, solid for
    heads 1–8 and dashed for 9–16).

    ``weights`` is one layer, [H, queries, keys]. ``heads`` picks heads (0-based; None = all); ``query_index``
    shows only that query's lines and highlights it; the legend numbers heads from ``first``. Lines under
    ``min_weight`` are left out to keep the figure light, and opacities are rounded to 1/20 so that a head needs
    at most 20 traces rather than one per line.
    """
    weights = checked_weights(weights, query_tokens, key_tokens, ("heads",), "one layer's weights")
    num_heads, num_queries, num_keys = weights.shape
    heads = list(range(num_heads)) if heads is None else list(heads)
    if any(not 0 <= head < num_heads for head in heads):
        raise ValueError(f"heads must lie in 0…{num_heads - 1}, got {heads}")
    if query_index is not None and not 0 <= query_index < num_queries:
        raise ValueError(f"query_index must lie in 0…{num_queries - 1}, got {query_index}")
    query_rows = range(num_queries) if query_index is None else [query_index]
    traces = []
    for head in heads:
        name = message(language, "plot_scores.head", head=head + first)
        traces += _head_lines(weights[head], head, name, query_rows, min_weight)
    queries, keys = token_labels(query_tokens), token_labels(key_tokens)
    if query_index is not None:
        queries[query_index] = f"<b>{queries[query_index]}</b>"
    query_colours = [colour("ink") if query_index in (None, i) else colour("muted") for i in range(num_queries)]
    traces += [
        _token_column(-0.03, queries, query_colours, "middle left"),
        _token_column(1.03, keys, colour("ink"), "middle right"),
    ]
    rows = max(num_queries, num_keys)
    layout = {
        "xaxis": {"visible": False, "range": [-0.9, 1.9], "fixedrange": True},
        "yaxis": {"visible": False, "range": [rows - 0.5, -0.5], "fixedrange": True},
        "title": {"text": safe_label(title)},
        "height": int(max(320, 24 * rows + 120)),
        **base_layout(),
        "legend": {"title": {"text": message(language, "plot_attention.legend")}},
        "plot_bgcolor": colour("white"),
    }
    if query_index is not None:  # the chosen query's row, highlighted behind its label
        layout["shapes"] = [
            {
                "type": "rect",
                "x0": -0.9,
                "x1": 0,
                "y0": query_index - 0.45,
                "y1": query_index + 0.45,
                "fillcolor": colour("query_fill"),
                "line": {"width": 0},
                "layer": "below",
            }
        ]
    return figure(traces, layout)


def _head_lines(weights: np.ndarray, head: int, name: str, query_rows, min_weight: float) -> list[dict]:
    """One head's lines [queries, keys] ≥ ``min_weight``, grouped by opacity level, after their legend entry."""
    head_colour, dash = head_style(head)
    # The legend entry is its own trace so every chosen head is listed at full opacity, even one with no line.
    legend = {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "lines",
        "line": {"color": head_colour, "dash": dash, "width": 3},
        "name": name,
        "legendgroup": f"head {head}",
    }
    segments: dict[int, tuple[list[float | None], list[float | None]]] = {}
    for query in query_rows:
        for key in np.flatnonzero(weights[query] >= min_weight):
            level = max(1, round(weights[query, key] * OPACITY_LEVELS))
            xs, ys = segments.setdefault(level, ([], []))
            xs += [0.0, 1.0, None]
            ys += [query, int(key), None]
    lines = [
        {
            "type": "scatter",
            "x": xs,
            "y": ys,
            "mode": "lines",
            "line": {"color": head_colour, "dash": dash, "width": 2.5},
            "opacity": level / OPACITY_LEVELS,
            "legendgroup": f"head {head}",
            "showlegend": False,
            "hoverinfo": "skip",
        }
        for level, (xs, ys) in sorted(segments.items())
    ]
    return [legend, *lines]


def _token_column(side: float, labels: list[str], colours, position: str) -> dict:
    """The tokens of one side of :func:`token_lines`, as text beside the lines' ends."""
    return {
        "type": "scatter",
        "x": [side] * len(labels),
        "y": list(range(len(labels))),
        "mode": "text",
        "text": labels,
        "textposition": position,
        "textfont": {"color": colours, "size": 13},
        "showlegend": False,
        "hoverinfo": "skip",
        "cliponaxis": False,
    }
