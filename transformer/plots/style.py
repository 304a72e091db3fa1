"""What every figure shares: the font, and labels that show user text as text."""

from __future__ import annotations

import html

import plotly.graph_objects as go

FONT = {"size": 12}
# Presenter mode (a projector in a classroom): large type, tall charts, and instead of the pale sequential scales
# one that runs from white through yellow and red to black, with no grey (grey marks masked cells).
PRESENTER_FONT = {"size": 20}
PRESENTER_HEIGHT = 760
PRESENTER_SCALE = "Hot_r"
SEQUENTIAL_SCALES = ("Blues", "Viridis")


def safe_label(token: str) -> str:
    """A token as plotly shows it literally: ``&``, ``<`` and ``>`` escaped, since plotly parses labels as HTML."""
    return html.escape(token, quote=False)


def _resolved(name: str) -> tuple:
    return tuple(map(tuple, go.Heatmap(colorscale=name).colorscale))


def for_projector(fig: go.Figure) -> go.Figure:
    """The same figure for a projector: larger type, at least :data:`PRESENTER_HEIGHT` tall, and the sequential
    colour scales replaced by the high-contrast :data:`PRESENTER_SCALE` (diverging and mask scales are kept)."""
    sequential = {_resolved(name) for name in SEQUENTIAL_SCALES}
    for trace in fig.data:
        scale = getattr(trace, "colorscale", None)
        if scale is not None and tuple(map(tuple, scale)) in sequential:
            trace.colorscale = PRESENTER_SCALE
    fig.update_layout(font=PRESENTER_FONT, height=max(fig.layout.height or 0, PRESENTER_HEIGHT))
    fig.update_annotations(font_size=PRESENTER_FONT["size"])
    return fig
