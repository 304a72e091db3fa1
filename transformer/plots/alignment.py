"""A word alignment drawn between the two sentences: English words down the left, German words down the right, one
line per link, darker for more attention (:mod:`transformer.analysis.word_alignment`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.i18n import DEFAULT_LANGUAGE, message
from transformer.plots.style import base_layout, figure, safe_label

ROW = 26  # pixels per word of the longer sentence
LINK_COLOUR = "31, 119, 180"  # plotly's first colour, as r, g, b for a translucent line


def _words(side: float, words: Sequence[str], position: str, linked: set[int]) -> dict:
    return {
        "type": "scatter",
        "x": [side] * len(words),
        "y": [-i for i in range(len(words))],
        "mode": "markers+text",
        "text": [safe_label(word) for word in words],
        "textposition": position,
        "textfont": {"size": 14, "color": ["#222" if i in linked else "#999" for i in range(len(words))]},
        "marker": {"size": 7, "color": ["#1f77b4" if i in linked else "#ccc" for i in range(len(words))]},
        "hoverinfo": "skip",
        "showlegend": False,
        "cliponaxis": False,
    }


def alignment_figure(
    english: Sequence[str],
    german: Sequence[str],
    links: Sequence[tuple[int, int]],
    scores: np.ndarray,
    title: str,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """``links`` are (english, german) word positions; ``scores`` [German words, English words] sets each line's
    strength (its share of the strongest link's score). Unlinked words are grey."""
    strongest = max((float(scores[g, e]) for e, g in links), default=1.0) or 1.0
    traces = []
    for e, g in links:
        share = float(scores[g, e]) / strongest
        traces.append(
            {
                "type": "scatter",
                "x": [0, 1],
                "y": [-e, -g],
                "mode": "lines",
                "line": {"color": f"rgba({LINK_COLOUR}, {0.25 + 0.75 * share:.2f})", "width": 1.5 + 3 * share},
                "hovertemplate": safe_label(
                    message(language, "plot_alignment.hover", english=english[e], german=german[g], weight=scores[g, e])
                )
                + "<extra></extra>",
                "showlegend": False,
            }
        )
    traces.append(_words(0, english, "middle left", {e for e, _ in links}))
    traces.append(_words(1, german, "middle right", {g for _, g in links}))
    rows = max(len(english), len(german), 1)
    hidden = {"visible": False, "fixedrange": True}
    layout = {
        **base_layout(top=40),
        "title": {"text": safe_label(title), "x": 0.5},
        "height": 90 + ROW * rows,
        "xaxis": {**hidden, "range": [-0.9, 1.9]},
        "yaxis": {**hidden, "range": [-rows + 0.5, 0.6]},
        "plot_bgcolor": "white",
        "hovermode": "closest",
    }
    return figure(traces, layout)
