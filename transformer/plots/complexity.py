"""§4's Table 1 as figures: the path a signal takes between two words of a sentence through each kind of layer, and
the measured time of one self-attention layer against one recurrent layer as the sequence grows."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from transformer.analysis.complexity import PATH_KINDS, LayerTimes, path_length, route
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.colours import translucent
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, figure, safe_label, token_ticks

COLOURS = {
    "recurrent": colour("red"),
    "convolutional": colour("orange"),
    "dilated": colour("purple"),
    "restricted": colour("teal"),
    "self_attention": colour("blue"),
}
DASHES = {"convolutional": "solid", "dilated": "dot", "restricted": "dash"}
# Each route's own marker too: red and orange meet for a reader without red–green vision.
SYMBOLS = {
    "recurrent": "circle",
    "convolutional": "square",
    "dilated": "diamond",
    "restricted": "triangle-up",
    "self_attention": "star",
}


def kind_names(language: str = DEFAULT_LANGUAGE, k: int = 3, r: int = 4) -> dict[str, str]:
    """Each path kind's name as the figures write it, with its kernel width or neighbourhood."""
    text = words(language, "plot_complexity")
    return {kind: text[f"kind_{kind}"].format(k=k, r=r) for kind in PATH_KINDS}


def path_figure(
    tokens: list[str], first: int, second: int, k: int = 3, r: int = 4, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """The sentence's tokens along x; for each kind of layer, the route a signal takes from token ``first`` to token
    ``second``, one rise per layer (recurrent: per step) it passes through: the height a route ends at is its path
    length (:func:`transformer.analysis.complexity.path_length`)."""
    if not tokens:
        raise ValueError("no tokens to draw")
    if not (0 <= first < len(tokens) and 0 <= second < len(tokens)):
        raise ValueError(f"positions {first} and {second} must lie in 0…{len(tokens) - 1}")
    text = words(language, "plot_complexity")
    names = kind_names(language, k, r)
    traces = []
    for kind in PATH_KINDS:
        positions = route(kind, first, second, k, r)
        length = path_length(kind, first, second, k, r)
        traces.append(
            {
                "type": "scatter",
                "x": positions,
                "y": list(range(len(positions))),
                "mode": "lines+markers",
                "name": text["route"].format(kind=names[kind], length=length),
                "line": {"color": COLOURS[kind], "dash": DASHES.get(kind, "solid"), "width": 2.5},
                "marker": {"size": 8, "symbol": SYMBOLS[kind]},
                "customdata": [safe_label(tokens[p]) for p in positions],
                "hovertemplate": f"{names[kind]}<br>{text['after']} %{{y}}: %{{customdata}} (%{{x}})<extra></extra>",
            }
        )
    highest = path_length("recurrent", first, second)
    marks = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": position - 0.45,
            "x1": position + 0.45,
            "y0": 0,
            "y1": 1,
            "fillcolor": translucent(colour("gold"), 0.25),
            "line": {"width": 0},
            "layer": "below",
        }
        for position in {first, second}
    ]
    layout = {
        **base_layout(70, 10),
        "title": {
            "text": text["path_title"].format(
                first=safe_label(tokens[first]), second=safe_label(tokens[second]), distance=abs(first - second)
            )
        },
        "xaxis": {
            **token_ticks(tokens),
            "tickangle": -45 if len(tokens) > 12 else 0,
            "range": [-0.6, len(tokens) - 0.4],
        },
        "yaxis": {"title": {"text": text["height_axis"]}, "range": [-0.3, max(highest, 1) + 0.5]},
        "shapes": marks,
        "height": 440,
        "legend": {"orientation": "h", "y": -0.3},
        "hovermode": "closest",
    }
    if first == second:
        layout["annotations"] = [
            {"text": text["same_word"], "showarrow": False, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper"}
        ]
    return figure(traces, layout)


def timing_figure(times: LayerTimes, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Median milliseconds of one layer's forward pass against n, on log-log axes: self-attention against the
    recurrent layer, with n = d_model marked (Table 1: n²·d < n·d² while n < d)."""
    text = words(language, "plot_complexity")
    series = (
        ("self_attention", times.self_attention_ms, COLOURS["self_attention"]),
        ("recurrent", times.recurrent_ms, COLOURS["recurrent"]),
    )
    traces = [
        {
            "type": "scatter",
            "x": list(times.lengths),
            "y": list(milliseconds),
            "mode": "lines+markers",
            "name": text[f"timed_{kind}"],
            "line": {"color": line},
            "marker": {"symbol": SYMBOLS[kind]},
            "hovertemplate": f"{text[f'timed_{kind}']}<br>n = %{{x}}: %{{y:.3g}} ms<extra></extra>",
        }
        for kind, milliseconds, line in series
    ]
    layout = {
        **base_layout(70, 10),
        "title": {"text": text["timing_title"].format(d_model=times.d_model, threads=times.threads)},
        "xaxis": {"type": "log", "title": {"text": text["length_axis"]}},
        "yaxis": {"type": "log", "title": {"text": text["time_axis"]}},
        "shapes": [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": times.d_model,
                "x1": times.d_model,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": colour("rule"), "width": 1},
            }
        ],
        "annotations": [
            {
                "text": text["n_equals_d"].format(d_model=times.d_model),
                "x": math.log10(times.d_model),  # a log axis places annotations at log10(x)
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
            }
        ],
        "height": 420,
        "legend": {"orientation": "h", "y": -0.25},
    }
    return figure(traces, layout)
