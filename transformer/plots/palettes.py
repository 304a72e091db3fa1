"""The figures' discrete colours in one place, in two palettes, and what they look like to readers with a colour
vision deficiency.

Every builder draws in the ``"standard"`` palette; :func:`with_palette` re-colours a built figure into another one,
as :func:`transformer.plots.style.for_projector` re-styles one for a projector, so a page can offer the choice
without a builder knowing of it. Heatmaps keep their colour scales in every palette: Blues and Viridis run from
light to dark and stay ordered under every simulated deficiency, and RdBu, blue against red, keeps its two sides
apart under all three (red–green palettes would not); :func:`smallest_differences` measures the scales' ends too.

- ``"standard"``: the colours the app has used (Vega's Tableau 10 for the series of line and bar charts, D3's
  category 10 for the marks that single something out, ColorBrewer's blues and oranges for attributions), mended
  where a chart's own colours fell together for a colour-blind reader or did not reach 3:1 on white: the beam
  tree's finished hypotheses are orange, not a green a deuteranope reads as its red path; the series orange and
  teal are darker; three of the head atlas's eight group colours are others from D3's twenty; the line view's
  heads are eight colours and two dashes.
- ``"colour_blind"``: Okabe and Ito's eight colours (*Color Universal Design*, 2008; the vermillion a little
  darker, to read as text), which stay apart under deuteranopia, protanopia and tritanopia alike
  (:func:`smallest_differences`, ``tests/test_colour_vision.py``). Its orange, sky blue and yellow stay under 3:1
  on white: their lightness is what sets them apart for colour-blind readers.

Greys are the same in every palette (:data:`NEUTRALS`): a grey reads the same to every eye.

What readers see is measured by :func:`smallest_differences` with ``colorspacious`` (a development dependency,
imported only there): ``python scripts/colour_vision.py`` prints the table.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import plotly.graph_objects as go

from transformer.plots.colours import format_colour, parse_colour, unit_rgb

# ------------------------------------------------------------------------------------------------ the palettes
# Role → colour. Roles are named after the standard colour: the builders decide what each one means.
STANDARD: dict[str, str] = {
    # Series of line and bar charts (Tableau 10); orange and teal darkened to reach 3:1 on white.
    "blue": "#4c78a8",
    "orange": "#dd7a00",  # was #f58518 (2.5:1 on white); also the beam tree's finished hypotheses (were green)
    "red": "#e45756",
    "green": "#54a24b",
    "purple": "#b279a2",
    "teal": "#3f8f8a",  # was #72b7b2 (2.3:1 on white)
    # Marks that single something out (D3's category 10): kept and linked, chosen and flagged, bands.
    "mark_blue": "#1f77b4",
    "mark_red": "#d62728",
    "mark_green": "#2ca02c",
    # The head atlas's groups besides mark_blue and mark_red (D3's category 10 and 20). Orange, light green and
    # light brown replace olive, green and violet, which fell onto red and blue for deuteranopes and protanopes.
    "grey": "#7f7f7f",
    "cyan": "#17becf",
    "bright_orange": "#ff7f0e",
    "light_green": "#98df8a",
    "light_grey": "#c7c7c7",
    "light_brown": "#c49c94",
    # Attention beside attribution (ColorBrewer's Blues and Oranges).
    "light_blue": "#9ecae1",
    "deep_orange": "#e6550d",
    "deep_blue": "#3182bd",
}
OKABE_ITO = {
    "black": "#000000",
    "orange": "#e69f00",
    "sky_blue": "#56b4e9",
    "bluish_green": "#009e73",
    "yellow": "#f0e442",
    "blue": "#0072b2",
    "vermillion": "#d55e00",
    "reddish_purple": "#cc79a7",
}
# Okabe and Ito's vermillion darkened from 3.9:1 to 4.8:1 on white, so that the words it flags read as text; it stays
# as far from every other colour for every reader (the weakest pairs are elsewhere).
VERMILLION = "#c05000"
# Each standard role's Okabe–Ito colour, keeping its hue family where it can, so that "red", "green" and "light
# blue" in a caption still name what the reader sees.
COLOUR_BLIND: dict[str, str] = {
    "blue": OKABE_ITO["blue"],
    "orange": OKABE_ITO["orange"],
    "red": VERMILLION,
    "green": OKABE_ITO["bluish_green"],
    "purple": OKABE_ITO["reddish_purple"],
    "teal": OKABE_ITO["sky_blue"],
    "mark_blue": OKABE_ITO["blue"],
    "mark_red": VERMILLION,
    "mark_green": OKABE_ITO["bluish_green"],
    "grey": OKABE_ITO["black"],
    "cyan": OKABE_ITO["sky_blue"],
    "bright_orange": OKABE_ITO["yellow"],
    "light_green": OKABE_ITO["bluish_green"],
    "light_grey": "#c7c7c7",
    "light_brown": OKABE_ITO["reddish_purple"],
    "light_blue": OKABE_ITO["sky_blue"],
    "deep_orange": VERMILLION,
    "deep_blue": OKABE_ITO["blue"],
}
PALETTES: dict[str, dict[str, str]] = {"standard": STANDARD, "colour_blind": COLOUR_BLIND}

# The same in every palette. Text colours reach 4.5:1 on white except the deliberately faint one.
NEUTRALS: dict[str, str] = {
    "black": "#000000",  # marks on a diverging heatmap, whose dark ends a dark grey would meet
    "ink": "#222222",  # text and black marks
    "dark": "#444444",  # the beam tree's root, error bars, rims that give light markers their 3:1
    "muted": "#767676",  # text set back that must still be read (4.5:1 on white)
    "rule": "#888888",  # reference and link lines: warm-up, restarts, fine-tuning, n = d_model (3.5:1 on white)
    "faint_text": "#999999",  # deliberately faint text: pruned hypotheses
    "faint": "#c8c8c8",  # deliberately faint marks: pruned hypotheses, unlinked words, masked cells
    "hatch": "#8c8c8c",  # the hatching over masked cells
    "canvas": "#fafafa",  # the head atlas's plotting area
    "white": "#ffffff",  # the plotting area, and rims that set markers apart from each other
    "query_fill": "#fff3b0",  # behind the chosen query of the line view
    "gold": "#ffd700",  # translucent, behind the two words of the path figure
}

# The line view's heads: eight colours, then the same eight dashed (heads 9–16), so that heads stay apart by their
# dash where colours meet. The standard eight are from plotly's Dark24 (as before), chosen to stay apart under
# every simulated deficiency as far as eight can.
HEAD_COLOURS: dict[str, tuple[str, ...]] = {
    "standard": ("#2e91e5", "#fb0d0d", "#222a2a", "#b2828d", "#511cfb", "#af0038", "#778aae", "#750d86"),
    "colour_blind": tuple(
        VERMILLION if name == "vermillion" else OKABE_ITO[name]
        for name in ("blue", "vermillion", "black", "reddish_purple", "bluish_green", "orange", "sky_blue", "yellow")
    ),
}
HEAD_DASHES = ("solid", "dash")
# Traces without a colour of their own take the layout's colorway; in the standard palette that is the theme's.
COLORWAYS: dict[str, tuple[str, ...]] = {
    "colour_blind": tuple(
        VERMILLION if name == "vermillion" else OKABE_ITO[name]
        for name in ("blue", "orange", "bluish_green", "vermillion", "reddish_purple", "sky_blue", "yellow", "black")
    )
}


def colour(role: str) -> str:
    """The standard palette's colour for ``role`` (a key of :data:`STANDARD` or :data:`NEUTRALS`): what builders
    draw with."""
    return STANDARD[role] if role in STANDARD else NEUTRALS[role]


def head_style(head: int, palette: str = "standard") -> tuple[str, str]:
    """(colour, dash) of 0-based ``head`` in the line view: eight colours, then the same eight dashed; distinct for
    up to 16 heads."""
    colours = HEAD_COLOURS[palette]
    return colours[head % len(colours)], HEAD_DASHES[head // len(colours) % len(HEAD_DASHES)]


# ------------------------------------------------------------------------------------------------ re-colouring
# Where a trace keeps colours (its other properties, data included, are never read): what plotly.js draws.
TRACE_COLOUR_KEYS = (
    "line",
    "marker",
    "textfont",
    "fillcolor",
    "fillpattern",
    "error_x",
    "error_y",
    "colorscale",
    "insidetextfont",
    "outsidetextfont",
)
Change = Callable[[str, tuple], str | None]
SHAPE_TYPES = {"rect", "line", "circle", "path"}


def _recoloured(value, change: Change, path: tuple, keep: Callable[[dict], bool] | None):
    """``value`` with every colour under a key naming one (``color``, ``bgcolor``, ``fillcolor``, ``colorway``,
    ``colorscale``, …) replaced by ``change(colour, path)`` (None: kept); containers are copied only where something
    changed, and dicts ``keep`` accepts are left as they are."""
    if isinstance(value, dict):
        if keep is not None and keep(value):
            return value
        changed = {key: _recoloured(item, change, (*path, key), keep) for key, item in value.items()}
        return value if all(changed[key] is value[key] for key in value) else changed
    if isinstance(value, (list, tuple)):
        items = [_recoloured(item, change, (*path, index), keep) for index, item in enumerate(value)]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    if isinstance(value, str) and "color" in next((key for key in reversed(path) if isinstance(key, str)), ""):
        return change(value, path) or value
    return value


def recolour(fig: go.Figure, change: Change, keep_shape: Callable[[dict], bool] | None = None) -> go.Figure:
    """Every explicit colour of ``fig`` (traces, layout, the buttons' restyling arguments; not the template)
    replaced, in place, by ``change(colour, path)`` where it returns one: ``path`` is the colour's place, e.g.
    ``("marker", "line", "color")`` in a trace or ``("annotations", 0, "font", "color")`` in the layout.
    ``keep_shape``: layout shapes (as dicts) to leave alone. Returns ``fig``.

    Only the properties that hold colours are read and written, so the cost does not grow with a heatmap's cells."""
    for trace in fig.data:
        for key in TRACE_COLOUR_KEYS:
            if key not in trace:
                continue
            current = trace[key]
            if current is None:
                continue
            plain = current.to_plotly_json() if hasattr(current, "to_plotly_json") else current
            new = _recoloured(plain, change, (key,), None)
            if new is not plain:
                trace[key] = new
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)

    def keep(node: dict) -> bool:
        return keep_shape is not None and node.get("type") in SHAPE_TYPES and keep_shape(node)

    for key, value in layout.items():
        new = _recoloured(value, change, (key,), keep)
        if new is not value:
            fig.layout[key] = new
    return fig


def palette_map(name: str) -> dict[tuple[int, int, int], tuple[int, int, int]]:
    """Each standard colour (as red, green, blue) → its colour in palette ``name``; heads included."""
    if name not in PALETTES:
        raise ValueError(f"unknown palette {name!r}; choose one of {', '.join(PALETTES)}")
    pairs = [(STANDARD[role], PALETTES[name][role]) for role in STANDARD]
    pairs += list(zip(HEAD_COLOURS["standard"], HEAD_COLOURS[name], strict=True))
    mapping: dict[tuple[int, int, int], tuple[int, int, int]] = {}
    for standard, other in pairs:
        key, value = rgb(standard), rgb(other)
        if mapping.setdefault(key, value) != value:
            raise ValueError(f"{standard} has two colours in the {name} palette")
    return mapping


def rgb(colour: str) -> tuple[int, int, int]:
    """A colour's (red, green, blue), 0–255; ValueError for what :func:`parse_colour` cannot read."""
    rgba = parse_colour(colour)
    if rgba is None:
        raise ValueError(f"not a colour: {colour!r}")
    return rgba[0], rgba[1], rgba[2]


def with_palette(fig: go.Figure, name: str) -> go.Figure:
    """``fig`` (drawn in the standard palette, as every builder draws) re-coloured, in place, into palette
    ``name``: every standard colour becomes its counterpart, at the same opacity, and traces without a colour of
    their own take the palette's colorway. ``"standard"`` returns ``fig`` untouched. Greys and colour scales stay.
    Returns ``fig``."""
    if name == "standard":
        return fig
    mapping = palette_map(name)

    def change(colour: str, path: tuple) -> str | None:
        rgba = parse_colour(colour)
        if rgba is None or rgba[:3] not in mapping:
            return None
        return format_colour((*mapping[rgba[:3]], rgba[3]))

    recolour(fig, change)
    fig.layout.colorway = list(COLORWAYS[name])
    return fig


# ------------------------------------------------------------------------------------------------ measuring
# The head atlas's eight groups, in the order of its group keys (transformer/plots/atlas.py).
ATLAS_GROUP_ROLES = (
    "grey",
    "mark_blue",
    "cyan",
    "bright_orange",
    "mark_red",
    "light_green",
    "light_grey",
    "light_brown",
)
# The colours each chart shows together (roles of a palette, NEUTRALS or "head"), that a reader must tell apart.
CHARTS: dict[str, tuple[str, ...]] = {
    "training curves": ("blue", "orange", "green"),
    "training smoothing": ("blue", "orange", "green"),
    "training schedule": ("blue", "red", "rule"),
    "training health": ("mark_blue", "mark_red", "ink"),
    "smoothed target": ("rule", "blue"),
    "toy curve": ("blue", "green", "orange"),
    "complexity path": ("red", "orange", "purple", "teal", "blue"),
    "complexity timing": ("blue", "red", "rule"),
    "positional norms": ("blue", "red"),
    "scaling": ("red", "blue", "ink"),
    "attribution": ("light_blue", "deep_orange", "deep_blue"),
    "faithfulness": ("deep_orange", "light_blue", "dark"),
    "head atlas": ATLAS_GROUP_ROLES,
    "line view heads": ("head",),
    # Marks: what singles something out against the ordinary colours around it.
    "beam tree": ("dark", "mark_blue", "orange", "faint", "mark_red"),
    "alignment marks": ("mark_red", "mark_blue", "faint"),
    "step bars": ("red", "blue", "faint"),
    "opened head outline": ("mark_red", "faint"),
    "logit lens ring": ("mark_red",),
    "query row outline": ("red",),
    "signed query row outline": ("black",),
}
MARKS = (
    "beam tree",
    "alignment marks",
    "step bars",
    "opened head outline",
    "logit lens ring",
    "query row outline",
    "signed query row outline",
)
# Heatmap cells a chart's marks are drawn on: (colour scale, positions sampled). Only pairs with a mark count.
BACKDROPS: dict[str, tuple[str, tuple[float, ...]]] = {
    "opened head outline": ("Blues", (0.0, 0.25, 0.5, 0.75, 1.0)),
    "logit lens ring": ("Blues", (0.0, 0.25, 0.5, 0.75, 1.0)),
    "query row outline": ("Blues", (0.0, 0.25, 0.5, 0.75, 1.0)),
    "signed query row outline": ("RdBu_r", (0.0, 0.25, 0.5, 0.75, 1.0)),
}
# Diverging scales: their two ends and their centre must stay three different colours.
DIVERGING = ("RdBu",)
VISIONS = {"normal": None, "deuteranopia": "deuteranomaly", "protanopia": "protanomaly", "tritanopia": "tritanomaly"}


def chart_colours(chart: str, palette: str) -> list[str]:
    """The colours ``chart`` shows together in ``palette`` (its backdrop's cells not included)."""
    colours = []
    for role in CHARTS[chart]:
        if role == "head":
            colours += HEAD_COLOURS[palette]
        else:
            colours.append(PALETTES[palette][role] if role in PALETTES[palette] else NEUTRALS[role])
    return colours


def backdrop_colours(chart: str) -> list[str]:
    """The cells of the heatmap ``chart``'s marks lie on (empty for a chart without one)."""
    if chart not in BACKDROPS:
        return []
    from plotly.colors import sample_colorscale

    scale, positions = BACKDROPS[chart]
    return list(sample_colorscale(scale, list(positions)))


def _appearance(colours: list[str], vision: str):
    """CAM02-UCS coordinates of ``colours`` as a reader with ``vision`` sees them (a full dichromacy, severity 100,
    simulated after Machado et al. 2009, as colorspacious does)."""
    import numpy as np
    from colorspacious import cspace_convert

    values = np.array([unit_rgb((*rgb(c), 1.0)) for c in colours])
    deficiency = VISIONS[vision]
    if deficiency is not None:
        space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
        values = np.clip(cspace_convert(values, space, "sRGB1"), 0, 1)
    return cspace_convert(values, "sRGB1", "CAM02-UCS")


def smallest_difference(colours: list[str], vision: str, backdrop: list[str] = ()) -> float:
    """The smallest CAM02-UCS ΔE (Euclidean distance in J'a'b') between two of ``colours``, or between one of them
    and a ``backdrop`` colour, as a reader with ``vision`` (a key of :data:`VISIONS`) sees them; inf for fewer than
    two colours."""
    points = _appearance([*colours, *backdrop], vision)
    pairs = itertools.chain(
        itertools.combinations(range(len(colours)), 2),
        itertools.product(range(len(colours)), range(len(colours), len(points))),
    )
    return min((float(((points[a] - points[b]) ** 2).sum() ** 0.5) for a, b in pairs), default=float("inf"))


def smallest_differences(palette: str) -> dict[str, dict[str, float]]:
    """Chart → vision → the smallest ΔE between colours the chart shows together (and between its marks and the
    heatmap cells under them), for every chart of :data:`CHARTS` in ``palette``; plus each diverging scale's ends
    and centre (``"RdBu scale"``), the same in every palette. Needs colorspacious."""
    table = {
        chart: {
            vision: smallest_difference(chart_colours(chart, palette), vision, backdrop_colours(chart))
            for vision in VISIONS
        }
        for chart in CHARTS
    }
    from plotly.colors import sample_colorscale

    for scale in DIVERGING:
        ends = list(sample_colorscale(scale, [0.0, 0.5, 1.0]))
        table[f"{scale} scale"] = {vision: smallest_difference(ends, vision) for vision in VISIONS}
    return table


def colour_vision_rows(palettes: Sequence[str] = tuple(PALETTES)) -> Iterator[tuple[str, str, str, float]]:
    """(palette, chart, vision, smallest ΔE) for each of ``palettes`` and every chart and vision."""
    for palette in palettes:
        for chart, by_vision in smallest_differences(palette).items():
            for vision, difference in by_vision.items():
                yield palette, chart, vision, difference


def colour_vision_table() -> str:
    """The measure as a text table: a row per palette and chart, a column per vision (smallest ΔE)."""
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for palette, chart, vision, difference in colour_vision_rows():
        rows.setdefault((palette, chart), {})[vision] = difference
    width = max(len(chart) for _, chart in rows) + 2
    lines = [f"{'palette':14}{'chart':{width}}" + "".join(f"{vision:>14}" for vision in VISIONS)]
    for (palette, chart), by_vision in rows.items():
        marks = " *" if chart in MARKS else ""
        cells = "".join(f"{by_vision[vision]:>14.1f}" for vision in VISIONS)
        lines.append(f"{palette:14}{chart + marks:{width}}" + cells)
    lines.append("smallest CAM02-UCS ΔE between colours shown together (marks: also against the cells under them)")
    lines.append("* marks: what singles something out")
    return "\n".join(lines)
