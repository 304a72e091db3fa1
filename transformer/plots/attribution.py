"""One output token's gradient attribution drawn beside its attention (:mod:`transformer.analysis.attribution`):
per source token, the share of the cross-attention and the share of the absolute attribution; per token already
written, its share of the attribution."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.style import base_layout, figure, safe_label

ATTENTION_COLOUR = "#9ecae1"
ATTRIBUTION_COLOUR = "#e6550d"
AGAINST_COLOUR = "#3182bd"


def shares(values: np.ndarray) -> np.ndarray:
    """Absolute values as parts of their sum (zeros stay zeros)."""
    magnitude = np.abs(np.asarray(values, dtype=float))
    total = magnitude.sum()
    return magnitude / total if total > 0 else magnitude


def _bars(tokens: Sequence[str], values: np.ndarray, name: str, colour, hover: str) -> dict:
    return {
        "type": "bar",
        "x": list(range(len(tokens))),
        "y": [round(float(v), 4) for v in values],
        "name": name,
        "marker": {"color": colour},
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
    """Bars per token: the share of the absolute attribution (orange where it raises the score, blue where it
    lowers it) and, when given, the share of attention beside it."""
    text = words(language, "plot_attribution")
    traces = []
    if attention is not None:
        traces.append(
            _bars(tokens, attention, text["attention"], ATTENTION_COLOUR, "%{customdata}: %{y:.2f}<extra></extra>")
        )
    colours = [ATTRIBUTION_COLOUR if value >= 0 else AGAINST_COLOUR for value in attribution]
    hover = "%{customdata}: %{y:.2f}<extra>" + safe_label(text["attribution"]) + "</extra>"
    traces.append(_bars(tokens, shares(attribution), text["attribution"], colours, hover))
    layout = {
        **base_layout(top=50, bottom=10),
        "title": {"text": safe_label(title), "x": 0.5},
        "barmode": "group",
        "height": 330,
        "xaxis": {
            "tickmode": "array",
            "tickvals": list(range(len(tokens))),
            "ticktext": [safe_label(token) for token in tokens],
            "tickangle": -45 if len(tokens) > 12 else 0,
        },
        "yaxis": {"title": {"text": text["share"]}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
    }
    return figure(traces, layout)
