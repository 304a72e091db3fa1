"""Plotly figures of the model, its attention heads, its positional encoding and its training run.

Every builder is a pure function from arrays (or an explicitly passed model) to a ``plotly.graph_objects.Figure``:
no Streamlit and no hidden model calls, so the same figures serve the app, notebooks and the tests. Attention
arrays are NumPy, shaped [layers, heads, queries, keys] as in :class:`transformer.analysis.AttentionMaps`.

Tokens are user text: plotly renders labels, hover text and titles as a subset of HTML, so every token, and every
title passed in (which may quote a token), goes through :func:`safe_label` before it reaches a figure: ``</b>`` in a
sentence is shown, not interpreted.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from transformer.model import Transformer
from transformer.train import learning_rate

ATTENTION_COLOURS = "Blues"
MASK_FILL = "#c8c8c8"
MASK_HATCH = "#8c8c8c"
MASKED_TEXT = "masked (future)"
HEAD_COLOURS = qualitative.Dark24  # enough distinct colours for the big model's 16 heads
OPACITY_LEVELS = 20  # lines are grouped into this many opacity steps instead of one trace per line
FONT = {"size": 12}


def safe_label(token: str) -> str:
    """A token as plotly shows it literally: ``&``, ``<`` and ``>`` escaped, since plotly parses labels as HTML."""
    return html.escape(token, quote=False)


def _labels(tokens: Sequence[str]) -> list[str]:
    return [safe_label(token) for token in tokens]


def _check_tokens(shape: tuple[int, ...], query_tokens: Sequence[str], key_tokens: Sequence[str]) -> None:
    if shape[-2:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"attention of shape {shape} does not match {len(query_tokens)} query and {len(key_tokens)} key tokens"
        )


def _future(num_queries: int, num_keys: int) -> np.ndarray:
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


def _finite_max(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def uniformity_note(matrix: np.ndarray, causal: bool = False) -> str:
    """ "≈ uniform: …" when a map's rows hardly prefer any key (the largest weight of a row is on average less than
    1.5 × the uniform weight 1 / visible keys); "" otherwise. A fitted colour scale makes such maps look as strong as
    sharp ones, so the figure says it in words."""
    matrix = np.asarray(matrix, dtype=float)
    num_queries, num_keys = matrix.shape
    if num_queries == 0 or num_keys < 2:
        return ""
    visible = np.minimum(np.arange(1, num_queries + 1), num_keys) if causal else np.full(num_queries, num_keys)
    masked = _future(num_queries, num_keys) if causal else np.zeros(matrix.shape, dtype=bool)
    largest = np.where(masked, -np.inf, np.nan_to_num(matrix)).max(axis=1)
    rows = visible >= 2  # a row with one visible key has nothing to choose
    if not rows.any() or (largest[rows] * visible[rows]).mean() >= 1.5:
        return ""
    keys = f"{num_keys} keys" if not causal else f"1–{int(visible.max())} keys"
    return (
        f"≈ uniform: the largest weight of a row is {largest[rows].mean():.2f} on average over {keys} "
        f"(uniform: {(1 / visible[rows]).mean():.2f})"
    )


def _tick_size(count: int) -> int:
    """Tick label size for ``count`` labels on one axis: smaller as they crowd."""
    return 12 if count <= 30 else 10 if count <= 60 else 8


def _heatmap_height(rows: int) -> int:
    return int(min(1100, max(380, 20 * rows + 200)))


def attention_heatmap(
    matrix: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    causal: bool = False,
    fitted: bool = False,
) -> go.Figure:
    """One head (or an average) as a [queries, keys] heatmap: rows are queries top to bottom, columns are keys.

    The axes are positions with the tokens as tick labels, so repeated tokens keep their own rows. With ``causal``
    (decoder self-attention) the future cells hold no weight at all: they are left empty and covered by a grey
    hatched polygon, and their hover says they are masked. The colour scale runs from 0 to 1 (weights are
    probabilities, and maps compare at a glance), or with ``fitted`` from 0 to the map's largest weight; a map whose
    rows are nearly uniform says so under its title (:func:`uniformity_note`).
    """
    matrix = np.asarray(matrix, dtype=float)
    _check_tokens(matrix.shape, query_tokens, key_tokens)
    num_queries, num_keys = matrix.shape
    queries, keys = _labels(query_tokens), _labels(key_tokens)
    masked = _future(num_queries, num_keys) if causal else np.zeros(matrix.shape, dtype=bool)
    shown = np.where(masked, np.nan, matrix)
    weight_text = np.where(masked, MASKED_TEXT, np.char.mod("%.3f", np.nan_to_num(matrix)))
    customdata = np.dstack(
        [
            np.repeat(np.array(queries, dtype=object)[:, None], num_keys, axis=1),
            np.repeat(np.array(keys, dtype=object)[None, :], num_queries, axis=0),
            weight_text.astype(object),
        ]
    )
    fig = go.Figure(
        go.Heatmap(
            z=shown,
            x=np.arange(num_keys),
            y=np.arange(num_queries),
            customdata=customdata,
            hovertemplate="query: %{customdata[0]}<br>key: %{customdata[1]}<br>weight: %{customdata[2]}<extra></extra>",
            colorscale=ATTENTION_COLOURS,
            zmin=0.0,
            zmax=_finite_max(shown) if fitted else 1.0,
            colorbar={"title": {"text": "weight"}, "thickness": 14},
            hoverongaps=True,
            name="attention",
        )
    )
    if causal:
        xs, ys = _mask_outline(num_queries, num_keys)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                fill="toself",
                mode="lines",
                line={"width": 0},
                fillcolor=MASK_FILL,
                fillpattern={"shape": "/", "fgcolor": MASK_HATCH, "bgcolor": MASK_FILL, "size": 8},
                name=MASKED_TEXT,
                hoverinfo="skip",  # the heatmap's own hover already names masked cells per query and key
                showlegend=True,
            )
        )
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(num_keys)),
        ticktext=keys,
        tickangle=-60 if num_keys <= 25 else -90,  # long sentences: upright labels, smaller, so they never overlap
        tickfont={"size": _tick_size(num_keys)},
        automargin=True,
        title_text="key",
        range=[-0.5, num_keys - 0.5],
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(num_queries)),
        ticktext=queries,
        tickfont={"size": _tick_size(num_queries)},
        automargin=True,  # the labels push the plot right instead of being cut at the left edge
        autorange="reversed",
        title_text="query",
        showgrid=False,
        zeroline=False,
    )
    note = uniformity_note(matrix, causal)
    fig.update_layout(
        title={"text": safe_label(title), "subtitle": {"text": note}} if note else {"text": safe_label(title)},
        height=_heatmap_height(num_queries),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        plot_bgcolor="white",
    )
    return fig


def model_view_grid(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    causal: bool = False,
    fitted: bool = False,
) -> go.Figure:
    """Every head of every layer at once: a layers × heads grid of small heatmaps on one colour scale (0 to 1, or
    to the largest weight with ``fitted``).

    ``weights`` is [L, H, queries, keys]. The tiles are drawn as one heatmap on a shared canvas, separated by empty
    rows and columns: a single trace builds and draws in a few milliseconds where L × H subplots take hundreds.
    Rows and columns are categories labelled "layer l · query (position)" and "head h · key (position)", so hover
    names layer, head, query, key and weight while each label is sent once, not once per cell. With ``causal``
    the future cells are empty and a grey layer behind them shows through.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 4:
        raise ValueError(f"expected weights shaped [layers, heads, queries, keys], got {weights.shape}")
    _check_tokens(weights.shape, query_tokens, key_tokens)
    num_layers, num_heads, num_queries, num_keys = weights.shape
    queries, keys = _labels(query_tokens), _labels(key_tokens)
    masked = _future(num_queries, num_keys) if causal else np.zeros((num_queries, num_keys), dtype=bool)
    height, width = num_layers * (num_queries + 1) - 1, num_heads * (num_keys + 1) - 1
    canvas = np.full((height, width), np.nan, dtype=np.float32)  # float32: half the bytes sent to the browser
    mask = np.full((height, width), np.nan, dtype=np.float32)
    for layer in range(num_layers):
        for head in range(num_heads):
            rows = slice(layer * (num_queries + 1), layer * (num_queries + 1) + num_queries)
            columns = slice(head * (num_keys + 1), head * (num_keys + 1) + num_keys)
            canvas[rows, columns] = np.where(masked, np.nan, weights[layer, head])
            mask[rows, columns] = np.where(masked, 1.0, np.nan)
    y = [
        f"layer {layer + 1} · query {queries[i]} ({i})" if i < num_queries else f"gap {layer}"
        for layer in range(num_layers)
        for i in range(num_queries + 1)
    ][:height]
    x = [
        f"head {head + 1} · key {keys[j]} ({j})" if j < num_keys else f"gap {head}"
        for head in range(num_heads)
        for j in range(num_keys + 1)
    ][:width]
    fig = go.Figure()
    if causal:
        fig.add_trace(
            go.Heatmap(
                z=mask,
                x=x,
                y=y,
                colorscale=[[0, MASK_FILL], [1, MASK_FILL]],
                showscale=False,
                hoverinfo="skip",
                name="masked (future)",
            )
        )
    fig.add_trace(
        go.Heatmap(
            z=canvas,
            x=x,
            y=y,
            colorscale=ATTENTION_COLOURS,
            zmin=0.0,
            zmax=_finite_max(canvas) if fitted else 1.0,
            hoverongaps=False,
            hovertemplate="%{y}<br>%{x}<br>weight: %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "weight"}, "thickness": 14},
            name="attention",
        )
    )
    fig.update_xaxes(
        type="category", side="top", showgrid=False, zeroline=False, tickangle=0,
        tickvals=[x[head * (num_keys + 1) + num_keys // 2] for head in range(num_heads)],
        ticktext=[f"H{head + 1}" for head in range(num_heads)],
    )  # fmt: skip
    fig.update_yaxes(
        type="category", showgrid=False, zeroline=False, autorange="reversed",
        tickvals=[y[layer * (num_queries + 1) + num_queries // 2] for layer in range(num_layers)],
        ticktext=[f"L{layer + 1}" for layer in range(num_layers)],
    )  # fmt: skip
    fig.update_layout(
        title={"text": safe_label(title) + (" (grey: masked future positions)" if causal else "")},
        height=int(min(1600, max(400, 130 * num_layers + 120))),
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
        font=FONT,
        plot_bgcolor="white",
    )
    return fig


def _head_colour(head: int) -> str:
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def token_lines(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    heads: list[int] | None = None,
    query_index: int | None = None,
    title: str = "",
    min_weight: float = 0.05,
    first: int = 1,
) -> go.Figure:
    """The paper's appendix figures (tensor2tensor style): queries on the left, keys on the right, one line per
    query–key pair whose opacity is the attention weight, one colour per head.

    ``weights`` is one layer, [H, queries, keys]. ``heads`` picks heads (0-based; None = all); ``query_index``
    shows only that query's lines and highlights it; the legend numbers heads from ``first``. Lines under
    ``min_weight`` are left out to keep the figure light, and opacities are rounded to 1/20 so that a head needs
    at most 20 traces rather than one per line.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3:
        raise ValueError(f"expected one layer's weights shaped [heads, queries, keys], got {weights.shape}")
    _check_tokens(weights.shape, query_tokens, key_tokens)
    num_heads, num_queries, num_keys = weights.shape
    heads = list(range(num_heads)) if heads is None else list(heads)
    if any(not 0 <= head < num_heads for head in heads):
        raise ValueError(f"heads must lie in 0…{num_heads - 1}, got {heads}")
    if query_index is not None and not 0 <= query_index < num_queries:
        raise ValueError(f"query_index must lie in 0…{num_queries - 1}, got {query_index}")
    query_rows = range(num_queries) if query_index is None else [query_index]

    fig = go.Figure()
    for head in heads:
        colour = _head_colour(head)
        # The legend entry is its own trace so every chosen head is listed at full opacity, even one with no line.
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                line={"color": colour, "width": 3},
                name=f"head {head + first}",
                legendgroup=f"head {head}",
            )
        )
        segments: dict[int, tuple[list[float | None], list[float | None]]] = {}
        for query in query_rows:
            for key in np.flatnonzero(weights[head, query] >= min_weight):
                level = max(1, round(weights[head, query, key] * OPACITY_LEVELS))
                xs, ys = segments.setdefault(level, ([], []))
                xs += [0.0, 1.0, None]
                ys += [query, int(key), None]
        for level, (xs, ys) in sorted(segments.items()):
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={"color": colour, "width": 2.5},
                    opacity=level / OPACITY_LEVELS,
                    legendgroup=f"head {head}",
                    showlegend=False,
                    hoverinfo="skip",
                )
            )

    queries, keys = _labels(query_tokens), _labels(key_tokens)
    if query_index is not None:
        queries[query_index] = f"<b>{queries[query_index]}</b>"
    query_colours = ["black" if query_index in (None, i) else "#9a9a9a" for i in range(num_queries)]
    fig.add_trace(
        go.Scatter(
            x=[-0.03] * num_queries,
            y=list(range(num_queries)),
            mode="text",
            text=queries,
            textposition="middle left",
            textfont={"color": query_colours, "size": 13},
            showlegend=False,
            hoverinfo="skip",
            cliponaxis=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[1.03] * num_keys,
            y=list(range(num_keys)),
            mode="text",
            text=keys,
            textposition="middle right",
            textfont={"color": "black", "size": 13},
            showlegend=False,
            hoverinfo="skip",
            cliponaxis=False,
        )
    )
    if query_index is not None:
        fig.add_shape(
            type="rect",
            x0=-0.9,
            x1=0,
            y0=query_index - 0.45,
            y1=query_index + 0.45,
            fillcolor="#fff3b0",
            line={"width": 0},
            layer="below",
        )
    rows = max(num_queries, num_keys)
    fig.update_xaxes(visible=False, range=[-0.9, 1.9], fixedrange=True)
    fig.update_yaxes(visible=False, range=[rows - 0.5, -0.5], fixedrange=True)
    fig.update_layout(
        title={"text": safe_label(title)},
        height=int(max(320, 24 * rows + 120)),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
        legend={"title": {"text": "colour = head, opacity = weight"}},
        plot_bgcolor="white",
    )
    return fig


def score_heatmap(
    values: np.ndarray, title: str, first: int = 1, fmt: str = ".2f", zrange: tuple[float, float] | None = None
) -> go.Figure:
    """A per-head score [layers, heads] as a heatmap with the value written in each cell; layers and heads are
    numbered from ``first``. Missing scores (NaN) stay blank. ``zrange`` fixes the colour scale (0–1 for shares, so
    that scores near zero look near zero); without it the scale is fitted to the values."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"expected a [layers, heads] table, got shape {values.shape}")
    layers = [f"layer {i + first}" for i in range(values.shape[0])]
    heads = [f"head {i + first}" for i in range(values.shape[1])]
    text = [["" if np.isnan(v) else format(v, fmt) for v in row] for row in values]
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=heads,
            y=layers,
            text=text,
            texttemplate="%{text}",
            colorscale="Viridis",
            zmin=None if zrange is None else zrange[0],
            zmax=None if zrange is None else zrange[1],
            hovertemplate="%{y}, %{x}: %{z:" + fmt + "}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title={"text": safe_label(title)},
        height=int(120 + 38 * values.shape[0]),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        font=FONT,
    )
    return fig


# --------------------------------------------------------------------------------------------- positional encoding
def positional_encoding_heatmap(pe: np.ndarray) -> go.Figure:
    """The §3.5 sinusoid table itself: one row per position, one column per dimension."""
    pe = np.asarray(pe)
    num_positions, d_model = pe.shape
    fig = go.Figure(
        go.Heatmap(
            z=pe,
            colorscale="RdBu",
            zmid=0.0,
            zmin=-1.0,
            zmax=1.0,
            colorbar={"title": {"text": "PE"}, "thickness": 14},
            hovertemplate="position %{y}<br>dimension %{x}<br>PE %{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="dimension (even: sin, odd: cos)")
    fig.update_yaxes(title_text="position", autorange="reversed")
    fig.update_layout(
        title={"text": f"Positional encoding: {num_positions} positions × d_model = {d_model}"},
        height=int(min(900, max(380, 3 * num_positions + 160))),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
    )
    return fig


def wavelength(dimension: int, d_model: int) -> float:
    """2π · 10000^(2i/d_model) for dimension 2i or 2i+1: from 2π at i = 0 up to nearly 10000 · 2π (§3.5)."""
    return 2 * math.pi * 10000 ** ((dimension - dimension % 2) / d_model)


def sinusoid_curves(pe: np.ndarray, dimensions: list[int]) -> go.Figure:
    """PE(pos, dimension) against position for the chosen dimensions: one sinusoid each, wavelengths in the legend."""
    pe = np.asarray(pe)
    num_positions, d_model = pe.shape
    fig = go.Figure()
    for dimension in dimensions:
        if not 0 <= dimension < d_model:
            raise ValueError(f"dimension {dimension} is outside 0…{d_model - 1}")
        kind = "sin" if dimension % 2 == 0 else "cos"
        fig.add_trace(
            go.Scatter(
                x=np.arange(num_positions),
                y=pe[:, dimension],
                mode="lines",
                name=f"dim {dimension} ({kind}, wavelength {wavelength(dimension, d_model):,.1f})",
                hovertemplate=f"dim {dimension}<br>position %{{x}}<br>PE %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="position")
    fig.update_yaxes(title_text="PE(pos, dim)", range=[-1.1, 1.1])
    fig.update_layout(
        title={"text": "Sinusoids of chosen dimensions: wavelengths grow geometrically with the dimension"},
        height=420,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def position_similarity(pe: np.ndarray) -> go.Figure:
    """PE(pos)·PE(pos′) for every pair of positions: it depends only on the distance |pos − pos′|, peaking at 0."""
    pe = np.asarray(pe, dtype=np.float64)
    similarity = pe @ pe.T  # (P, P)
    fig = go.Figure(
        go.Heatmap(
            z=similarity,
            colorscale="Viridis",
            colorbar={"title": {"text": "dot product"}, "thickness": 14},
            hovertemplate="position %{y} · position %{x}<br>PE·PE = %{z:.2f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="position", scaleanchor="y", constrain="domain")
    fig.update_yaxes(title_text="position", autorange="reversed", constrain="domain")
    fig.update_layout(
        title={"text": f"PE(pos)·PE(pos′): the diagonal is d_model/2 = {pe.shape[1] / 2:g}"},
        height=560,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
    )
    return fig


def offset_rotation(d_model: int, offset: int) -> np.ndarray:
    """The exact M with PE(pos + k) = PE(pos) · M: a 2×2 rotation by k·ω_i on each (sin, cos) pair (§3.5)."""
    frequencies = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # ω_i, (D/2,)
    cos, sin = np.cos(offset * frequencies), np.sin(offset * frequencies)
    rotation = np.zeros((d_model, d_model))
    # sin(ω(p+k)) = sin(ωp)cos(ωk) + cos(ωp)sin(ωk); cos(ω(p+k)) = cos(ωp)cos(ωk) − sin(ωp)sin(ωk)
    rotation[0::2, 0::2] = np.diag(cos)
    rotation[1::2, 0::2] = np.diag(sin)
    rotation[0::2, 1::2] = np.diag(-sin)
    rotation[1::2, 1::2] = np.diag(cos)
    return rotation


def _relative_residual(predicted: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.linalg.norm(predicted - target, axis=1) / np.maximum(np.linalg.norm(target, axis=1), 1e-12)


def offset_linearity(pe: np.ndarray, offset: int) -> tuple[go.Figure, dict[str, Any]]:
    """Check §3.5's claim that PE(pos + k) is a linear function of PE(pos), two ways.

    Fitted: a matrix M is fitted by least squares so that PE(pos + k) ≈ PE(pos) · M on the even positions and
    judged on the odd ones it never saw. (Fitting on a block of consecutive positions fails for a different
    reason: the low-frequency dimensions barely change over a block, so the fit is ill-conditioned there.) For the
    fit to span every sinusoid ``pe`` needs about 2 · d_model positions; with fewer, the held-out error grows.
    Exact: the block rotation of :func:`offset_rotation`, applied to every position.

    Residuals are relative, ‖PE(pos + k) − PE(pos) · M‖ / ‖PE(pos + k)‖. Returns the figure and
    ``{"offset", "max_residual", "mean_residual"}`` (held-out, fitted M) plus the exact rotation's
    ``rotation_max_residual`` and the position counts.
    """
    pe = np.asarray(pe, dtype=np.float64)
    num_positions, d_model = pe.shape
    if not 1 <= offset <= num_positions - 3:
        raise ValueError(f"offset must lie in 1…{num_positions - 3} for {num_positions} positions, got {offset}")
    source, target = pe[:-offset], pe[offset:]  # row p: PE(p) and PE(p + k)
    fit, held_out = np.arange(0, len(source), 2), np.arange(1, len(source), 2)
    fitted, *_ = np.linalg.lstsq(source[fit], target[fit], rcond=None)
    fitted_residual = _relative_residual(source[held_out] @ fitted, target[held_out])
    rotation_residual = _relative_residual(source @ offset_rotation(d_model, offset), target)
    stats = {
        "offset": offset,
        "max_residual": float(fitted_residual.max()),
        "mean_residual": float(fitted_residual.mean()),
        "rotation_max_residual": float(rotation_residual.max()),
        "rotation_mean_residual": float(rotation_residual.mean()),
        "fit_positions": len(fit),
        "test_positions": len(held_out),
    }
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=held_out,
            y=fitted_residual,
            mode="markers",
            name="least-squares M, held-out positions",
            hovertemplate="pos %{x}<br>residual %{y:.2e}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=np.arange(len(source)),
            y=rotation_residual,
            mode="lines",
            name="exact rotation, every position",
            hovertemplate="pos %{x}<br>residual %{y:.2e}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text="position pos")
    fig.update_yaxes(title_text="relative residual", type="log", exponentformat="e")
    fig.update_layout(
        title={
            "text": f"PE(pos + {offset}) ≈ PE(pos)·M: largest held-out residual {stats['max_residual']:.1e} "
            f"(exact rotation {stats['rotation_max_residual']:.1e})"
        },
        height=420,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig, stats


def embedding_norms(model: Transformer) -> go.Figure:
    """How large the two summands of the encoder/decoder input are (§3.4–3.5): ‖embedding · √d_model‖ of every
    token against ‖PE(pos)‖ of every position, which is √(d_model / 2) for all of them."""
    d_model = model.config.d_model
    embedding = model.embedding.weight.detach().float().cpu().numpy()  # (V, D)
    keep = np.arange(len(embedding)) != model.config.pad_id  # the padding row is all zeros by construction
    token_norms = np.linalg.norm(embedding[keep], axis=1) * math.sqrt(d_model)
    position_norms = np.linalg.norm(model.positional_encoding.float().cpu().numpy(), axis=1)
    low, median, high = np.percentile(token_norms, [5, 50, 95])
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["‖embedding · √d_model‖ of each token", "‖PE(pos)‖ at each position vs token norms"],
        horizontal_spacing=0.08,
    )
    fig.add_trace(go.Histogram(x=token_norms, nbinsx=60, name="token embeddings", marker_color="#4c78a8"), 1, 1)
    fig.add_vline(
        x=float(position_norms.mean()),
        line_dash="dash",
        line_color="#e45756",
        row=1,
        col=1,
        annotation_text=f"‖PE‖ = {position_norms.mean():.2f}",
    )
    positions = np.arange(len(position_norms))
    fig.add_trace(
        go.Scatter(
            x=np.concatenate([positions, positions[::-1]]),
            y=np.r_[[high] * len(positions), [low] * len(positions)],
            fill="toself",
            fillcolor="rgba(76,120,168,0.2)",
            line={"width": 0},
            hoverinfo="skip",
            name="token norms, 5–95th percentile",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=positions,
            y=[median] * len(positions),
            mode="lines",
            line={"color": "#4c78a8"},
            name=f"token norm, median {median:.2f}",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(x=positions, y=position_norms, mode="lines", line={"color": "#e45756"}, name="‖PE(pos)‖"), 1, 2
    )
    fig.update_xaxes(title_text="norm", row=1, col=1)
    fig.update_yaxes(title_text="tokens", row=1, col=1)
    fig.update_xaxes(title_text="position", row=1, col=2)
    fig.update_yaxes(title_text="norm", rangemode="tozero", row=1, col=2)
    fig.update_layout(
        title={"text": "Token embedding vs positional encoding: the two vectors added at the input"},
        height=420,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        font=FONT,
        legend={"orientation": "h", "y": -0.25},
        bargap=0.05,
    )
    return fig


# ------------------------------------------------------------------------------------------------------ training
def read_metrics(path: str | Path) -> list[dict]:
    """The records of a trainer's JSONL log; a missing file gives none, unreadable lines are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by an interrupted write, most likely the last one
        if isinstance(record, dict) and isinstance(record.get("step"), int | float):
            records.append(record)
    return records


def training_curves(records: list[dict]) -> go.Figure:
    """Training loss, dev loss and dev BLEU; buttons switch the x axis between steps and training hours.

    Both losses are label-smoothed cross-entropies per target token (§5.4), so they compare directly; BLEU sits on
    a second y axis.
    """
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    train = sorted((r for r in records if r.get("kind") == "train" and "loss" in r), key=lambda r: r["step"])
    dev = sorted((r for r in records if r.get("kind") == "dev"), key=lambda r: r["step"])
    series = [
        ("training loss", train, "loss", False, "lines", "#4c78a8"),
        ("dev loss", dev, "dev_loss", False, "lines+markers", "#f58518"),
        ("dev BLEU", dev, "dev_bleu", True, "lines+markers", "#54a24b"),
    ]
    by_step, by_hours = [], []
    for name, rows, field, secondary, mode, colour in series:
        steps = [r["step"] for r in rows]
        by_step.append(steps)
        by_hours.append([r.get("train_hours") for r in rows])
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=[r.get(field) for r in rows],
                mode=mode,
                name=name,
                line={"color": colour},
                hovertemplate=f"{name}: %{{y:.3f}}<extra></extra>",
            ),
            secondary_y=secondary,
        )
    starts = sorted((r for r in records if r.get("kind") == "init"), key=lambda r: r["step"])
    marks = {
        axis: [fine_tuning_mark(r, r["step"] if axis == "step" else r.get("train_hours")) for r in starts]
        for axis in ("step", "hours")
    }
    if not train and not dev:
        fig.add_annotation(
            text="No training records in the log yet",
            showarrow=False,
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
            font={"size": 16},
        )
    fig.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "x": 1.0,
                "xanchor": "right",
                "y": 1.12,
                "yanchor": "bottom",
                "showactive": True,
                "buttons": [
                    {
                        "label": "by step",
                        "method": "update",
                        "args": [{"x": by_step}, {"xaxis.title.text": "step", "shapes": marks["step"]}],
                    },
                    {
                        "label": "by training hours",
                        "method": "update",
                        "args": [{"x": by_hours}, {"xaxis.title.text": "training hours", "shapes": marks["hours"]}],
                    },
                ],
            }
        ],
        title={"text": "Training run: loss and dev BLEU"},
        shapes=marks["step"],
        hovermode="x unified",
        height=460,
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
        font=FONT,
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="loss (label-smoothed, per token)", secondary_y=False)
    fig.update_yaxes(title_text="dev BLEU", secondary_y=True, rangemode="tozero", showgrid=False)
    return fig


HEALTH_PANELS = (
    ("encoder_position_cosine", "Encoder: cosine between positions", "layer"),
    ("encoder_entropy_normalised", "Encoder self-attention entropy / uniform", "layer"),
    ("cross_entropy_normalised", "Cross-attention entropy / uniform", "layer"),
    ("cross_alignment_best", "Best cross head's dictionary alignment", None),
)


def health_records(records: list[dict]) -> list[dict]:
    """The dev records that carry the health measures (:mod:`transformer.health`), by step."""
    return sorted(
        (r for r in records if r.get("kind") == "dev" and isinstance(r.get("encoder_position_cosine"), list)),
        key=lambda r: r["step"],
    )


def health_curves(records: list[dict]) -> go.Figure:
    """The health measures over training: one line per layer (darker = higher layer) in each of four panels.

    Collapse reads as cosines near 1 in the upper encoder layers and entropies near 1 (uniform attention); a healthy
    run keeps the cosines low, sharpens the entropies and raises the best head's alignment."""
    rows = health_records(records)
    fig = make_subplots(rows=2, cols=2, subplot_titles=[title for _, title, _ in HEALTH_PANELS],
                        vertical_spacing=0.16, horizontal_spacing=0.08)  # fmt: skip
    steps = [r["step"] for r in rows]
    for index, (field, _, per) in enumerate(HEALTH_PANELS):
        row, col = divmod(index, 2)
        if per is None:
            values = [r.get(field) for r in rows]
            fig.add_trace(go.Scatter(x=steps, y=values, mode="lines+markers", name="best head", showlegend=False,
                                     line={"color": "#222"}, hovertemplate="alignment %{y:.3f}<extra></extra>"),
                          row=row + 1, col=col + 1)  # fmt: skip
            continue
        layers = max((len(r.get(field) or []) for r in rows), default=0)
        for layer in range(layers):
            shade = 0.25 + 0.75 * (layer + 1) / layers
            colour = f"rgba(31, 119, 180, {shade:.2f})" if col == 0 else f"rgba(214, 39, 40, {shade:.2f})"
            values = [(r.get(field) or [None] * layers)[layer] for r in rows]
            fig.add_trace(
                go.Scatter(x=steps, y=values, mode="lines+markers", name=f"{per} {layer + 1}", showlegend=False,
                           line={"color": colour}, marker={"size": 4},
                           hovertemplate=f"{per} {layer + 1}: %{{y:.3f}}<extra></extra>"),
                row=row + 1, col=col + 1,
            )  # fmt: skip
    if not rows:
        fig.add_annotation(text="No health records in the log", showarrow=False, x=0.5, y=0.5, xref="paper",
                           yref="paper", font={"size": 16})  # fmt: skip
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(title_text="step", row=2)
    fig.update_layout(title={"text": "Model health at each validation (darker line = higher layer)"}, height=620,
                      margin={"l": 10, "r": 10, "t": 90, "b": 10}, font=FONT)  # fmt: skip
    return fig


def fine_tuning_mark(record: dict, x: float | None) -> dict:
    """A dashed vertical line where a run started from a checkpoint (``--init-from``), labelled with what changed."""
    dev = f"; dev set {record['dev']}" if record.get("dev") else ""
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "xref": "x",
        "y0": 0,
        "y1": 1,
        "yref": "paper",
        "line": {"dash": "dash", "color": "#888", "width": 1},
        "label": {"text": f"fine-tuning: new data mix{dev}", "textposition": "end", "font": {"size": 11}},
    }


def learning_rate_curve(
    d_model: int,
    warmup: int,
    scale: float,
    steps: int,
    current_step: int | None = None,
    cooldown: int = 0,
    last_step: int = 0,
) -> go.Figure:
    """§5.3's schedule, lrate = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), over ``steps`` steps;
    with ``cooldown``, annealed linearly to zero over the ``cooldown`` steps ending at ``last_step``."""
    # The warm-up step (and the cool-down's start) join the sampled steps so the curve's corners are drawn in place.
    corners = [warmup] + ([last_step - cooldown + 1, last_step] if cooldown > 0 else [])
    grid = np.unique(np.r_[np.linspace(1, max(steps, 2), min(max(steps, 2), 1500)).round(), corners].astype(int))
    grid = grid[grid >= 1]

    def rate_at(step: int) -> float:
        return learning_rate(step, d_model, warmup, scale, cooldown=cooldown, last_step=last_step)

    rates = [rate_at(int(step)) for step in grid]
    peak = learning_rate(warmup, d_model, warmup, scale)
    fig = go.Figure(
        go.Scatter(
            x=grid, y=rates, mode="lines", name="learning rate", hovertemplate="step %{x}<br>lr %{y:.2e}<extra></extra>"
        )
    )
    fig.add_vline(
        x=warmup,
        line_dash="dot",
        line_color="#9a9a9a",
        annotation_text=f"warm-up ends at step {warmup:,}: peak {peak:.2e}",
    )
    if current_step is not None:
        rate = rate_at(current_step)
        fig.add_trace(
            go.Scatter(
                x=[current_step],
                y=[rate],
                mode="markers",
                marker={"size": 11, "color": "#e45756"},
                name=f"this checkpoint: step {current_step:,}, lr {rate:.2e}",
            )
        )
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="learning rate", exponentformat="e")
    fig.update_layout(
        title={
            "text": f"Learning-rate schedule: d_model = {d_model}, warm-up = {warmup:,}, scale = {scale:g}"
            + (f", cool-down = {cooldown:,} to step {last_step:,}" if cooldown > 0 else "")
        },
        height=400,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        font=FONT,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


# ----------------------------------------------------------------------------------------------------- parameters
# Parameter names look like "decoder_layers.3.cross_attention.query.weight"; the norms after each sub-layer are
# "…self_attention_norm…", which the ".self_attention." patterns do not match.
PARAMETER_GROUPS = (
    ("embedding (shared by source, target and output)", lambda name: name.startswith("embedding.")),
    ("encoder self-attention", lambda name: name.startswith("encoder_layers.") and ".self_attention." in name),
    ("encoder feed-forward", lambda name: name.startswith("encoder_layers.") and ".feed_forward." in name),
    ("decoder masked self-attention", lambda name: name.startswith("decoder_layers.") and ".self_attention." in name),
    ("encoder–decoder (cross) attention", lambda name: ".cross_attention." in name),
    ("decoder feed-forward", lambda name: name.startswith("decoder_layers.") and ".feed_forward." in name),
    ("layer norms", lambda name: "_norm." in name),
)


def parameter_table(model: Transformer) -> list[dict]:
    """Parameter counts per component with each one's share of the total, ending with the total.

    Anything a future model adds outside these groups appears as "other" rather than vanishing from the sum.
    """
    counts = dict.fromkeys([label for label, _ in PARAMETER_GROUPS], 0)
    for name, parameter in model.named_parameters():
        group = next((label for label, matches in PARAMETER_GROUPS if matches(name)), "other")
        counts[group] = counts.get(group, 0) + parameter.numel()
    total = sum(counts.values())
    rows = [{"component": label, "parameters": count, "share": count / total} for label, count in counts.items()]
    return [*rows, {"component": "total", "parameters": total, "share": 1.0}]
