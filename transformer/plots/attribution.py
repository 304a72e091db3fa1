"""One output token's gradient attribution drawn beside its attention (:mod:`transformer.analysis.attribution`):
per source token, the share of the cross-attention and the share of the absolute attribution; per token already
written, its share of the attribution."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, figure, safe_label, token_ticks

ATTENTION_COLOUR = colour("light_blue")
ATTRIBUTION_COLOUR = colour("deep_orange")
AGAINST_COLOUR = colour("deep_blue")
# Light blue bars are edged in the dark blue: the edge gives them 3:1 on white (WCAG 1.4.11), the fill stays light.
ATTENTION_EDGE = {"color": AGAINST_COLOUR, "width": 1}


def shares(values: np.ndarray) -> np.ndarray:
    """Absolute values as parts of their sum (zeros stay zeros)."""
    magnitude = np.abs(np.asarray(values, dtype=float))
    total = magnitude.sum()
    return magnitude / total if total > 0 else magnitude


def _bars(tokens: Sequence[str], values: np.ndarray, name: str, fill: str, hover: str) -> dict:
    return {
        "type": "bar",
        "x": list(range(len(tokens))),
        "y": [round(float(v), 4) for v in values],
        "name": name,
        "marker": {"color": fill, "line": ATTENTION_EDGE} if fill == ATTENTION_COLOUR else {"color": fill},
        "customdata": [safe_label(token) for token in tokens],
        "hovertemplate": hover,
    }


def attribution_figure(
    tokens: Sequence[str],
    attribution: np.ndarray,
    title: str,
    attention: np.ndarray | None = None,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Bars per token: the share of the absolute attribution (orange where the token raises the score, dark blue
    where it lowers it) and, when given, the share of attention beside it."""
    text = words(language, "plot_attribution")
    traces = []
    if attention is not None:
        traces.append(
            _bars(tokens, attention, text["attention"], ATTENTION_COLOUR, "%{customdata}: %{y:.2f}<extra></extra>")
        )
    share = shares(attribution)
    signs = np.sign(np.asarray(attribution, dtype=float))
    for sign, key, fill in ((1, "raises", ATTRIBUTION_COLOUR), (-1, "lowers", AGAINST_COLOUR)):
        if (signs == sign).any():
            hover = "%{customdata}: %{y:.2f}<extra>" + safe_label(text[key]) + "</extra>"
            values = np.where(signs == sign, share, 0.0)
            traces.append(_bars(tokens, values, text[key], fill, hover))
    layout = {
        **base_layout(top=50, bottom=10),
        "title": {"text": safe_label(title), "x": 0.5, "xanchor": "center"},
        "barmode": "relative" if attention is None else "group",
        "height": 330,
        "xaxis": {**token_ticks(tokens), "tickangle": -45 if len(tokens) > 12 else 0},
        "yaxis": {"title": {"text": text["share"]}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
    }
    return figure(traces, layout)


def faithfulness_figure(
    names: Sequence[str],
    top_one: Sequence[float],
    top_three: Sequence[float],
    title: str,
    language: str = DEFAULT_LANGUAGE,
    intervals: Sequence[Sequence[tuple[float, float] | None]] | None = None,
) -> go.Figure:
    """The deletion test's table as horizontal bars: per explanation, the token's log-probability drop when its top 1
    and top 3 source tokens are deleted (the chance row is one of the explanations); with ``intervals`` (per k, per
    row: its 95% interval, or None) each bar carries its interval as an error bar."""
    text = words(language, "plot_attribution")
    labels = [safe_label(name) for name in names]
    traces = []
    for number, (values, key, fill) in enumerate(
        ((top_three, "top_three", ATTRIBUTION_COLOUR), (top_one, "top_one", ATTENTION_COLOUR))
    ):
        trace = {
            "type": "bar",
            "orientation": "h",
            "y": labels,
            "x": [round(float(v), 3) for v in values],
            "name": text[key],
            "marker": {"color": fill, "line": ATTENTION_EDGE} if fill == ATTENTION_COLOUR else {"color": fill},
            "hovertemplate": "%{y}: %{x:.2f}<extra>" + safe_label(text[key]) + "</extra>",
        }
        if intervals is not None:
            bounds = intervals[1 - number]  # intervals come as (top one, top three)
            trace["error_x"] = {
                "type": "data",
                "symmetric": False,
                "array": [0.0 if b is None else round(float(b[1] - v), 3) for b, v in zip(bounds, values, strict=True)],
                "arrayminus": [
                    0.0 if b is None else round(float(v - b[0]), 3) for b, v in zip(bounds, values, strict=True)
                ],
                "color": colour("dark"),
                "thickness": 1,
            }
        traces.append(trace)
    layout = {
        **base_layout(top=50, bottom=40),
        "title": {"text": safe_label(title), "x": 0.5, "xanchor": "center"},
        "barmode": "group",
        "height": 120 + 34 * len(names),
        "xaxis": {"title": {"text": text["drop"]}, "rangemode": "tozero"},
        "yaxis": {"autorange": "reversed", "automargin": True},
        "legend": {"orientation": "h", "y": 1.08, "x": 1, "xanchor": "right"},
    }
    return figure(traces, layout)
