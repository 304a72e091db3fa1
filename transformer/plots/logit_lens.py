"""The decoder's logit lens as a figure (:mod:`transformer.analysis.logit_lens`): decoder layers down, the tokens the
model wrote across; each cell the probability the layer's output, projected as if it were the last, gives the token
written there, with the layer's own top prediction written in the cell; a dot marks where each token becomes the top
prediction for good."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer.analysis.logit_lens import LogitLens
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, colour_scale, figure, safe_label


def _shown(piece: str) -> str:
    return safe_label(piece.replace("▁", " ").strip() or piece)


def lens_figure(lens: LogitLens, title: str, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    text = words(language, "plot_lens")
    layers = lens.probability.shape[0]
    columns = [f"{index + 1}. {_shown(token)}" for index, token in enumerate(lens.tokens)]
    rows = [text["layer"].format(layer=layer + 1) for layer in range(layers)]
    hover = [
        [
            text["hover"].format(
                layer=layer + 1,
                token=_shown(lens.tokens[position]),
                probability=lens.probability[layer, position],
                rank=int(lens.rank[layer, position]) + 1,
                top=_shown(lens.top[layer][position]),
            )
            for position in range(len(lens.tokens))
        ]
        for layer in range(layers)
    ]
    traces = [
        {
            "type": "heatmap",
            "z": np.round(lens.probability, 4),
            "x": columns,
            "y": rows,
            "text": [[_shown(piece) for piece in row] for row in lens.top],
            "texttemplate": "%{text}",
            "textfont": {"size": 10},
            "hovertext": hover,
            "hovertemplate": "%{hovertext}<extra></extra>",
            "colorscale": colour_scale("Blues"),
            "zmin": 0.0,
            "zmax": 1.0,
            "colorbar": {"title": {"text": safe_label(text["colour"])}},
        }
    ]
    settled = lens.settled()
    marked = [(columns[i], rows[layer]) for i, layer in enumerate(settled) if layer is not None]
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [x for x, _ in marked],
            "y": [y for _, y in marked],
            "marker": {"symbol": "circle-open", "size": 16, "color": colour("mark_red"), "line": {"width": 2}},
            "name": safe_label(text["settled"]),
            "hoverinfo": "skip",
        }
    )
    layout = {
        **base_layout(top=50, bottom=10),
        "title": {"text": safe_label(title), "x": 0.5, "xanchor": "center"},
        "height": 160 + 44 * layers,
        "yaxis": {"autorange": "reversed"},
        "xaxis": {"tickangle": -45},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    }
    return figure(traces, layout)
