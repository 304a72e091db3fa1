"""What every figure shares: the font, and labels that show user text as text; and what re-styles a built figure for
a projector (:func:`for_projector`) or a dark page (:func:`for_dark`)."""

from __future__ import annotations

import functools
import html
import math
import unicodedata
from collections.abc import Sequence

import plotly.graph_objects as go

from transformer.plots.colours import (
    Rgba,
    contrast_ratio,
    format_colour,
    is_grey,
    lightness,
    parse_colour,
    relative_luminance,
    with_lightness,
)
from transformer.plots.palettes import recolour

FONT = {"size": 12}
# Presenter mode (a projector in a classroom): large type, tall charts, and instead of the pale sequential scales
# one that runs from white through yellow and red to black, with no grey (grey marks masked cells).
PRESENTER_FONT = {"size": 20}
PRESENTER_HEIGHT = 760
PRESENTER_SCALE = "Hot_r"
SEQUENTIAL_SCALES = ("Blues", "Viridis")
# The backgrounds the figures are drawn on: the light page, and Streamlit's dark theme. What must be read there:
# text 4.5:1 (WCAG 1.4.3), lines and marks that carry meaning 3:1 (WCAG 1.4.11).
LIGHT_BACKGROUND = "#ffffff"
DARK_BACKGROUND = "#171614"
TEXT_CONTRAST = 4.5
MARK_CONTRAST = 3.0


# Advance widths of the printable ASCII characters (space to "~") in the charts' font as the app draws them (Source
# Sans, Streamlit's), in thousandths of the font size, measured with a canvas in Chromium and rounded up.
ASCII_WIDTHS = (
    200, 289, 426, 497, 497, 824, 609, 249, 303, 303, 418, 497, 249, 311, 249, 350, 497, 497, 497, 497, 497, 497, 497,
    497, 497, 497, 249, 249, 497, 497, 497, 425, 847, 543, 588, 571, 615, 527, 494, 617, 652, 263, 479, 579, 486, 727,
    647, 664, 566, 664, 569, 534, 536, 645, 515, 786, 513, 476, 539, 303, 350, 303, 497, 500, 542, 504, 553, 456, 555,
    496, 292, 504, 544, 246, 247, 495, 255, 829, 547, 542, 555, 555, 347, 419, 338, 544, 467, 719, 446, 467, 425, 303,
    241, 303, 497,
)  # fmt: skip
WIDE_WIDTH = 1050  # CJK ideographs and emoji are about one em wide (1000 and 1042 measured)
OTHER_WIDTH = 850  # any other character: the widest Latin letter measured ("Æ", 847), so an estimate errs wide


@functools.lru_cache(maxsize=4096)
def _character_width(character: str) -> int:
    code = ord(character)
    if 32 <= code < 127:
        return ASCII_WIDTHS[code - 32]
    base = unicodedata.normalize("NFD", character)[:1]  # "ä" → "a" and its dots
    if base and 32 <= ord(base) < 127:
        return ASCII_WIDTHS[ord(base) - 32]
    return WIDE_WIDTH if unicodedata.east_asian_width(character) in "WF" else OTHER_WIDTH


def label_width(label: str, size: float) -> float:
    """Estimated width in pixels of a plotly label (HTML-escaped, as :func:`safe_label` makes it) at font ``size``
    in the app's chart font: exact for printable ASCII and letters with accents, wide for anything else."""
    return size * sum(map(_character_width, html.unescape(label))) / 1000


def base_layout(top: int = 60, bottom: int = 10) -> dict:
    """What every figure's layout shares: narrow side margins, room above for its title (``top`` px) and below for
    its axis (``bottom``), and the font."""
    return {"margin": {"l": 10, "r": 10, "t": top, "b": bottom}, "font": FONT}


def lay_out(
    fig: go.Figure,
    title: str,
    height: int,
    *,
    top: int = 60,
    bottom: int = 10,
    legend_y: float | None = None,
    **layout,
) -> go.Figure:
    """``fig`` laid out as most figures are: :func:`base_layout` (``top``, ``bottom``), its ``title`` and ``height``,
    with ``legend_y`` a horizontal legend at that height (below the plot when negative), and any other ``layout``
    properties. Returns ``fig``."""
    if legend_y is not None:
        layout["legend"] = {"orientation": "h", "y": legend_y}
    fig.update_layout(**base_layout(top, bottom), title={"text": title}, height=height, **layout)
    return fig


def empty_note(fig: go.Figure, message: str) -> None:
    """``message`` in large type in the middle of a figure that has nothing to draw."""
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font={"size": 16})


def token_ticks(tokens: Sequence[str]) -> dict:
    """An axis's ticks for ``tokens`` drawn at positions 0, 1, …: each token shown literally (:func:`safe_label`)."""
    return {
        "tickmode": "array",
        "tickvals": list(range(len(tokens))),
        "ticktext": [safe_label(token) for token in tokens],
    }


def safe_label(token: str) -> str:
    """A token as plotly shows it literally: ``&``, ``<`` and ``>`` escaped, since plotly parses labels as HTML."""
    return html.escape(token, quote=False)


def figure(traces: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, as plotly.js reads them, without plotly.py checking every
    property on the way in: that check is most of the time it takes to build an attention heatmap, per figure and
    page run, for every visitor. The JSON sent to the browser is the same;
    ``tests/test_plots.py`` passes every figure built this way through the checking constructor as well, so a
    misspelt property still fails there. Colour scales must be given resolved (:func:`colour_scale`)."""
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


@functools.lru_cache(maxsize=32)
def _named_scale(name: str) -> tuple:
    return tuple(map(tuple, go.Heatmap(colorscale=name).colorscale))


def _resolved(scale) -> tuple:
    """A colour scale as plotly.py resolves it: ((position, colour), …). Names must be resolved here, before a
    figure built with :func:`figure` reaches the browser: plotly.js knows some of the same names with other colours
    ("Blues" there runs from dark blue to grey)."""
    return _named_scale(scale) if isinstance(scale, str) else tuple(map(tuple, scale))


def colour_scale(name: str) -> list[list]:
    """The named plotly.py colour scale as the list of [position, colour] pairs that :func:`figure` needs."""
    return [list(pair) for pair in _named_scale(name)]


def for_projector(fig: go.Figure) -> go.Figure:
    """The same figure for a projector: larger type, at least :data:`PRESENTER_HEIGHT` tall, and the sequential
    colour scales replaced by the high-contrast :data:`PRESENTER_SCALE` (diverging and mask scales are kept)."""
    sequential = {_resolved(name) for name in SEQUENTIAL_SCALES}
    for trace in fig.data:
        scale = getattr(trace, "colorscale", None)
        if scale is not None and _resolved(scale) in sequential:
            trace.colorscale = colour_scale(PRESENTER_SCALE)
    fig.update_layout(font=PRESENTER_FONT, height=max(fig.layout.height or 0, PRESENTER_HEIGHT))
    fig.update_annotations(font_size=PRESENTER_FONT["size"])
    # Axes that size their own tick labels (a heatmap's tokens) would keep them small on the projector.
    size = PRESENTER_FONT["size"]
    fig.for_each_xaxis(lambda axis: axis.update(tickfont_size=max(axis.tickfont.size or 0, size)))
    fig.for_each_yaxis(lambda axis: axis.update(tickfont_size=max(axis.tickfont.size or 0, size)))
    return fig


def for_dark(fig: go.Figure) -> go.Figure:
    """The same figure, in place, readable on a dark page (:data:`DARK_BACKGROUND`, Streamlit's dark theme), whose
    theme already lightens the default text and axes: only the figure's explicit colours change.

    - Greys keep their contrast, mirrored: a grey that stood k:1 against white stands k:1 against the dark page, so
      dark text turns light, a faint (pruned, masked) grey stays faint, and a white rim turns into the page.
    - A light plotting area becomes transparent (the page shows through); a grey one (masked cells) is mirrored.
    - A coloured line, mark or text keeps its hue, lightened just enough to reach 3:1 (text: 4.5:1); most already do.
    - A light, opaque fill behind something (the chosen query's row) becomes its hue, saturated, at 30% opacity;
      translucent fills stay as they are.
    - Heatmaps keep their colour scales, and outlines drawn on a heatmap's cells keep the colours they were chosen
      with against those cells (the page never shows behind them).

    Applied once: a figure already made dark (``layout.meta`` says so) is returned as it is, since mirroring its
    greys again would turn them back. Returns ``fig``."""
    meta = fig.layout.meta
    if isinstance(meta, dict) and meta.get("theme") == "dark":
        return fig
    if meta is None or isinstance(meta, dict):
        fig.layout.meta = {**(meta or {}), "theme": "dark"}
    heatmap_axes = {(_axis(trace.xaxis, "x"), _axis(trace.yaxis, "y")) for trace in fig.data if trace.type == "heatmap"}

    def on_cells(shape: dict) -> bool:
        return (_axis(shape.get("xref"), "x"), _axis(shape.get("yref"), "y")) in heatmap_axes

    for trace in fig.data:  # a one-colour scale (the grey layer of masked cells) is a fill, not a scale
        scale = getattr(trace, "colorscale", None)
        stops = {colour for _, colour in scale} if isinstance(scale, (list, tuple)) else set()
        if len(stops) == 1:
            mirrored = dark_colour(stops.pop(), "fill")
            if mirrored is not None:
                trace.colorscale = [[0, mirrored], [1, mirrored]]
    return recolour(fig, _dark_change, keep_shape=on_cells)


def _axis(reference: str | None, default: str) -> str:
    """The axis a trace or shape is drawn on: "x2 domain" → "x2"; "paper" stays "paper"."""
    return (reference or default).split(" ")[0]


def colour_role(path: tuple) -> str:
    """What the colour at ``path`` (as :func:`transformer.plots.palettes.recolour` gives it) paints: "text" (any
    font), "background" (the plotting area, the paper, a legend's box), "fill" (filled areas, hatching, colour scales)
    or "mark" (lines, markers, bars, outlines)."""
    keys = [key for key in path if isinstance(key, str)]
    if any(key.endswith("font") for key in keys):
        return "text"
    if keys[-1] in ("plot_bgcolor", "paper_bgcolor") or (keys[:1] == ["legend"] and keys[-1] == "bgcolor"):
        return "background"
    if keys[-1] in ("fillcolor", "colorscale") or "fillpattern" in keys:
        return "fill"
    return "mark"


def _dark_change(colour: str, path: tuple) -> str | None:
    return None if "colorscale" in path else dark_colour(colour, colour_role(path))


def dark_colour(colour: str, role: str) -> str | None:
    """``colour`` as :func:`for_dark` paints it on the dark page, for ``role`` (see :func:`colour_role`); None when it
    stays as it is."""
    rgba = parse_colour(colour)
    if rgba is None or rgba[3] == 0:
        return None
    if role == "background" and relative_luminance(rgba) > 0.8:
        return "rgba(0, 0, 0, 0)"
    if is_grey(rgba):
        return format_colour(_mirrored_grey(rgba))
    if role in ("fill", "background"):
        if rgba[3] < 1 or relative_luminance(rgba) <= 0.6:
            return None
        return format_colour((*with_lightness(rgba, 0.5)[:3], 0.3))
    return _lightened(rgba, TEXT_CONTRAST if role == "text" else MARK_CONTRAST)


def _mirrored_grey(rgba: Rgba) -> Rgba:
    """The grey that stands against the dark page as ``rgba`` stands against white (as far as white goes)."""
    ratio = contrast_ratio(rgba, LIGHT_BACKGROUND)
    luminance = min(1.0, ratio * (relative_luminance(DARK_BACKGROUND) + 0.05) - 0.05)
    value = 12.92 * luminance if luminance <= 0.0031308 else 1.055 * luminance ** (1 / 2.4) - 0.055
    level = min(255, math.ceil(255 * value))  # rounded up: lighter, so never under the ratio
    return level, level, level, rgba[3]


def _lightened(rgba: Rgba, contrast: float) -> str | None:
    """``rgba``'s hue lightened (HLS) to the least lightness that stands ``contrast``:1 against the dark page; None
    when it already does."""
    if contrast_ratio(rgba, DARK_BACKGROUND) >= contrast:
        return None
    low, high = lightness(rgba), 1.0
    for _ in range(20):
        middle = (low + high) / 2
        if contrast_ratio(with_lightness(rgba, middle), DARK_BACKGROUND) >= contrast:
            high = middle
        else:
            low = middle
    return format_colour(with_lightness(rgba, high))
