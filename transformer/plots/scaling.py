"""Why attention divides by √d_k (§3.2.1): the spread of q·k grows with d_k and saturates the softmax; the figures
of the step-by-step view's *Why √d_k* tab (:func:`transformer.analysis.steps.scaling_demo`, :func:`head_scaling`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer.analysis.steps import HeadSteps, ScalingDemo
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.palettes import colour
from transformer.plots.steps import BAR, HIGHLIGHT, head_name, position_labels, say
from transformer.plots.style import lay_out

WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
UNSCALED, SCALED = HIGHLIGHT, BAR


def scaling_figure(demo: ScalingDemo, curve: Sequence[ScalingDemo], language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Random q, k of width d_k: the spread of q·k with and without ÷√d_k, one row's softmax both ways, and the
    mean softmax entropy against d_k (``curve``: demos of several widths)."""
    text = words(language, "plot")
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.08,
        subplot_titles=(
            say(text, "demo_dots", variance=demo.variance),
            text["demo_row"],
            text["demo_entropy"],
        ),
    )
    fig.add_trace(go.Histogram(x=demo.dots, name="q·k", marker_color=UNSCALED, opacity=0.6, nbinsx=60), 1, 1)
    fig.add_trace(
        go.Histogram(x=demo.dots / np.sqrt(demo.d_k), name="q·k / √d_k", marker_color=SCALED, opacity=0.6, nbinsx=60),
        1,
        1,
    )
    keys = [say(text, "key", number=i + 1) for i in range(demo.rows_scaled.shape[1])]
    fig.add_trace(go.Bar(x=keys, y=demo.rows_unscaled[0], name="softmax(q·k)", marker_color=UNSCALED), 1, 2)
    fig.add_trace(go.Bar(x=keys, y=demo.rows_scaled[0], name="softmax(q·k / √d_k)", marker_color=SCALED), 1, 2)
    widths = [item.d_k for item in curve]
    for scaled, name, shade in ((False, text["without_scaling"], UNSCALED), (True, text["with_scaling"], SCALED)):
        entropies = [item.entropy(scaled) for item in curve]
        fig.add_trace(go.Scatter(x=widths, y=entropies, name=name, mode="lines+markers", line={"color": shade}), 1, 3)
    fig.add_vline(x=demo.d_k, line={"dash": "dot", "color": colour("rule")}, row=1, col=3)
    fig.update_xaxes(type="log", title_text="d_k", row=1, col=3)
    fig.update_yaxes(range=[0, np.log2(demo.rows_scaled.shape[1]) * 1.05], row=1, col=3)
    title = say(text, "demo_title", d_k=demo.d_k)
    return lay_out(fig, title, 420, top=90, bottom=40, legend_y=-0.2, barmode="group")


def head_scaling_figure(values: dict[str, np.ndarray], steps: HeadSteps, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The loaded head's scores with and without ÷√d_k, and each query's softmax entropy both ways."""
    text = words(language, "plot")
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(text["head_scores"], text["head_entropy"])
    )
    fig.add_trace(go.Histogram(x=values["unscaled_scores"], name="Q Kᵀ", marker_color=UNSCALED, opacity=0.6), 1, 1)
    fig.add_trace(
        go.Histogram(x=values["scaled_scores"], name=text["model_scaled"], marker_color=SCALED, opacity=0.6), 1, 1
    )
    queries = position_labels(steps.query_tokens)
    fig.add_trace(go.Bar(x=queries, y=values["entropy_unscaled"], name="softmax(Q Kᵀ)", marker_color=UNSCALED), 1, 2)
    fig.add_trace(go.Bar(x=queries, y=values["entropy_scaled"], name="softmax(Q Kᵀ / √d_k)", marker_color=SCALED), 1, 2)
    fig.add_trace(
        go.Scatter(
            x=queries,
            y=values["uniform"],
            name=text["uniform"],
            mode="markers",
            marker={"symbol": "line-ew-open", "size": 18, "color": colour("ink")},
        ),
        1,
        2,
    )
    fig.update_xaxes(type="category", tickangle=-45, row=1, col=2)
    title = say(text, "head_title", head=head_name(text, steps), kind=text[f"kind_{steps.kind}"])
    return lay_out(fig, title, 420, top=90, bottom=40, legend_y=-0.3, barmode="group")
