"""How a chart is read: plotly's labels back to plain text, numbers as a reader says them, and what a figure holds (its
axes, panels and traces)."""

from __future__ import annotations

import base64
import html
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

TOP_CELLS = 5  # strongest cells named for a figure with one heatmap
TOP_CELLS_PER_PANEL = 3  # and for each of several
TOP_BARS = 3
TOP_LINKS = 4
ALL_BARS = 4  # bar series this short are read out whole, in their order
MOST_TRACES = 8  # traces described per panel; the rest are counted
MOST_NOTES = 5
EXAMPLES = 4  # texts of a trace of points read out as examples
YES = "✓"  # how a table shows a true value (never "True"/"false")
TAG = re.compile(r"<[^<>]*>")
LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
SENTENCE_END = ".!?…:。"
DOMAIN_PANEL = "domain"  # traces placed by a domain rather than axes (pie, table, sankey, parcoords)


@dataclass(frozen=True)
class Description:
    """A chart in words: ``summary``, one to a few sentences in the interface language (what the chart shows and its
    strongest values), and ``tables``, its data as (title, table) pairs for the reader who asks for them."""

    summary: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------- text and numbers
def plain(label: object) -> str:
    """A plotly label as text: line breaks as spaces, markup dropped, HTML entities unescaped (``&lt;/s&gt;`` is the
    token ``</s>``, which plotly shows literally)."""
    if label is None:
        return ""
    text = TAG.sub("", LINE_BREAK.sub(" ", str(label)))
    return " ".join(html.unescape(text).split())


def number(value: float) -> str:
    """A number as a person reads it: whole numbers with thousands separators (steps: 9,000), others to three
    significant digits (0.625 → 0.625, 24.83 → 24.8, 0.000698 → 0.000698, 1.7e-07 → 1.7e-7)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    shown = f"{value:.3g}"
    if "e" in shown:
        mantissa, exponent = shown.split("e")
        shown = f"{mantissa}e{int(exponent)}"
    return shown


def quoted(token: str) -> str:
    """A token as the summary names it: in quotes, so that "." or "," is heard as a token, not as punctuation."""
    return f"“{token}”"


def as_sentence(text: str, capital: bool = True) -> str:
    """``text`` as a sentence: a full stop at its end and (with ``capital``) its first letter a capital."""
    text = text.strip()
    if not text:
        return ""
    if capital and text[0].isascii() and text[0].islower():
        text = text[0].upper() + text[1:]
    return text if text[-1] in SENTENCE_END else text + "."


def floats_of(values: Any) -> np.ndarray | None:
    """``values`` as floats (None → NaN), also plotly's base64 typed arrays; None when they are not numbers."""
    if values is None:
        return None
    if isinstance(values, Mapping) and "bdata" in values:
        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).astype(float)
        shape = values.get("shape")
        return array.reshape([int(size) for size in str(shape).split(",")]) if shape else array
    try:
        return np.array(values, dtype=float)
    except (TypeError, ValueError):
        return None


def values_of(values: Any) -> list:
    """A data array as a list (None for none; a single value, such as one text for every point, as one item)."""
    if values is None:
        return []
    if isinstance(values, (str, int, float)):
        return [values]
    if isinstance(values, Mapping) and "bdata" in values:
        return list(floats_of(values))
    return list(values.tolist() if isinstance(values, np.ndarray) else values)


def unique_names(names: Sequence[str]) -> list[str]:
    """Table labels that are all different (a sentence may hold the same token twice): repeated ones get their
    position (1-based), as in "the (2)", "the (4)"."""
    counts = Counter(names)
    return [f"{name} ({index + 1})" if counts[name] > 1 else name for index, name in enumerate(names)]


def unique_labels(labels: Sequence) -> list:
    """:func:`unique_names` for the text labels among ``labels`` (numbers, such as steps, are left as they are)."""
    counts = Counter(label for label in labels if isinstance(label, str))
    return [
        f"{label} ({index + 1})" if isinstance(label, str) and counts[label] > 1 else label
        for index, label in enumerate(labels)
    ]


def numbered_titles(titles: Sequence[str]) -> list[str]:
    """Table titles that are all different: repeated ones numbered in order, "title (1)", "title (2)"."""
    counts, seen = Counter(titles), Counter()
    numbered = []
    for title in titles:
        seen[title] += 1
        numbered.append(f"{title} ({seen[title]})" if counts[title] > 1 else title)
    return numbered


def without_booleans(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every true value shown as ✓ and every false one as nothing, never as "True"/"false"."""

    def shown(value: object) -> object:
        return (YES if value else "") if isinstance(value, (bool, np.bool_)) else value

    for position, dtype in enumerate(table.dtypes):
        if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
            table.isetitem(position, table.iloc[:, position].map(shown))
    return table


# ------------------------------------------------------------------------------------------------------ labels
@dataclass
class AxisLabels:
    """Labels of one axis's positions: ``spoken`` as the summary says them (tokens in quotes, numbers with the axis
    title), ``shown`` as a table shows them."""

    spoken: list[str]
    shown: list
    tokens: bool = False  # the labels are text the figure wrote as tick labels (tokens): cells read as links


@dataclass
class Context:
    layout: dict
    text: Mapping[str, str]

    def axis(self, name: str | None, letter: str) -> dict:
        """The layout of axis ``name`` ("x", "x2", "y3"; None: the first of ``letter``)."""
        name = name or letter
        return self.layout.get(f"{letter}axis{name[1:]}") or {}

    def axis_title(self, name: str | None, letter: str) -> str:
        title = self.axis(name, letter).get("title")
        return plain(title.get("text") if isinstance(title, Mapping) else title)

    def labels(
        self, values: Any, count: int, axis_name: str | None, letter: str, kind: str, quote: bool = False
    ) -> AxisLabels:
        """Labels of ``count`` positions drawn at ``values`` (None: 0, 1, …) on an axis: its tick labels where it
        names every position drawn, else the values (categories as they are, in quotes with ``quote``; numbers with
        the axis title, or where it has none as ``kind`` "row" or "column" n)."""
        raw = values_of(values)[:count] if values is not None else list(range(count))
        raw += list(range(len(raw), count))
        axis = self.axis(axis_name, letter)
        ticks = tick_texts(axis)
        if ticks and raw and all(sort_key(value) in ticks for value in raw):
            return AxisLabels(
                [ticks[sort_key(value)][0] for value in raw], [ticks[sort_key(value)][1] for value in raw], True
            )
        title = self.axis_title(axis_name, letter)
        spoken, shown = [], []
        for value in raw:
            if isinstance(value, str) and not is_numeric(value):
                spoken.append(quoted(plain(value)) if quote else plain(value))
                shown.append(plain(value))
            elif value is None:
                spoken.append("")
                shown.append(None)
            else:
                figure = number(float(value))
                spoken.append(f"{title} {figure}" if title else self.text[kind].format(number=figure))
                shown.append(value)
        return AxisLabels(told_apart(spoken, shown), unique_labels(shown))

    def hidden(self, axis_name: str | None, letter: str) -> bool:
        """Whether an axis is hidden, so that positions on it mean nothing to a reader (a tree's columns)."""
        axis = self.axis(axis_name, letter)
        return axis.get("visible") is False or axis.get("showticklabels") is False


def told_apart(spoken: list[str], names: list) -> list[str]:
    """Spoken labels of text that occurs more than once (a sentence's two "the") with their position (1-based), as
    the tables write them: “the” (2), “the” (4)."""
    counts = Counter(name for name in names if isinstance(name, str))
    return [
        f"{said} ({index + 1})" if isinstance(name, str) and counts[name] > 1 else said
        for index, (said, name) in enumerate(zip(spoken, names, strict=True))
    ]


def is_numeric(text: str) -> bool:
    """Whether a category is a number written as text (a dimension "251"), read as a number is."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def sort_key(value: object) -> object:
    """A tick value as a key that a trace's value of the same position matches (1 and 1.0 alike)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return str(value)


def tick_texts(axis: Mapping) -> dict[object, tuple[str, str]]:
    """An axis's tick labels (spoken, as a table shows them) by tick value, where it sets them
    (``tickmode="array"``); a label the axis holds twice (a sentence's two "the") is told apart by its position."""
    values, texts = values_of(axis.get("tickvals")), values_of(axis.get("ticktext"))
    if not values or not texts:
        return {}
    names = [plain(text) for text in texts[: len(values)]]
    spoken = told_apart([quoted(name) for name in names], names)
    return {sort_key(value): pair for value, *pair in zip(values, spoken, unique_labels(names), strict=False)}


# ------------------------------------------------------------------------------------------------------ panels
@dataclass
class Panel:
    """One subplot: its traces' clauses and tables."""

    key: str
    traces: list = field(default_factory=list)
    title: str = ""
    parts: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


@dataclass
class Parts:
    parts: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------------ helpers
def trace_kind(trace) -> str:
    kind = trace.type
    if kind in ("heatmap", "contour", "heatmapgl"):
        return "heatmap"
    if kind in ("scatter", "scattergl"):
        return "scatter"
    if kind in ("bar", "funnel", "waterfall"):
        return "bar"
    if kind in ("histogram", "box", "violin"):
        return "distribution"
    return kind or "other"


def has_axes(trace) -> bool:
    return trace_kind(trace) in ("heatmap", "scatter", "bar", "distribution") or hasattr(trace, "xaxis")


def on_paper(annotation: Mapping) -> bool:
    return str(annotation.get("xref", "paper")).startswith("paper") and str(annotation.get("yref", "paper")).startswith(
        "paper"
    )


def decorative(trace) -> bool:
    """A heatmap of one colour only (the grey behind masked cells): it carries no values to read."""
    scale = trace.colorscale
    if scale is None or isinstance(scale, str):
        return False
    return len({str(colour) for _, colour in scale}) == 1


def matrix_of(trace) -> np.ndarray:
    z = floats_of(trace.z)
    if z is None:
        return np.full((0, 0), np.nan)
    return z.reshape(1, -1) if z.ndim == 1 else z.reshape(z.shape[0], -1)


def shape_of(trace) -> tuple[int, int]:
    z = matrix_of(trace)
    finite = np.isfinite(z)
    return int(finite.any(axis=1).sum()), int(finite.any(axis=0).sum())


def cell_texts(trace, shape: tuple[int, ...]) -> np.ndarray | None:
    """The words written in a heatmap's cells (the logit lens's predictions) when they say more than the values."""
    written = values_of(trace.text)
    if not written or not trace.texttemplate:
        return None
    try:
        cells = np.array([[plain(cell) for cell in row] for row in written], dtype=object)
    except TypeError:
        return None
    if cells.shape != tuple(shape):
        return None
    try:
        [float(cell) for cell in cells.ravel() if cell]
    except ValueError:
        return cells
    return None  # the values themselves, as the cells already hold them


def invisible(trace, mode: str) -> bool:
    """Whether a trace draws nothing a reader sees: transparent, or markers only, all transparent (targets for
    clicks)."""
    if trace.opacity == 0:
        return True
    opacity = trace.marker.opacity if trace.marker else None
    return "lines" not in mode and "text" not in mode and isinstance(opacity, (int, float)) and opacity == 0


def monotonic(values: list) -> bool:
    """Whether positions run one way (a series along its axis) rather than scatter (a cloud of points)."""
    numbers = floats_of(values)
    if numbers is None:
        return True  # categories, in the order drawn
    steps = np.diff(numbers[np.isfinite(numbers)])
    return bool((steps >= 0).all() or (steps <= 0).all())


def table_cell(value: object) -> object:
    """A value as a table holds it: plain text for a label, Python numbers for NumPy's."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def limited(parts: list[str], text: Mapping[str, str]) -> list[str]:
    if len(parts) <= MOST_TRACES:
        return parts
    return [*parts[:MOST_TRACES], text["more"].format(count=len(parts) - MOST_TRACES)]
