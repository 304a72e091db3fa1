"""Every chart in words, for a reader who cannot see it (a screen reader's user, or anyone who wants the numbers): a
short summary of what the chart shows and its strongest values, and the chart's data as titled tables.

Worked out from the figure itself, not from the arrays that built it: the traces' data, the axes' tick labels and
titles, the subplots' titles and the annotations. So one function serves every figure the app shows, and a figure
added later gets its words without a describer of its own. What each kind of trace says:

* a heatmap (attention: rows are queries, columns are keys): its size and its strongest cells, masked (NaN) cells
  never among them; on a diverging map (values of both signs) the cells largest in size;
* a line: where it starts and ends, and its highest and lowest values and where they are;
* bars: the largest (and smallest) bars; a histogram: how many values, their range and median;
* lines drawn between two columns of words (the paper-style token lines, a word alignment): the strongest links,
  per head;
* anything else (a Sankey diagram, parallel coordinates, a table, an empty figure that only says why): what it holds,
  and the text written on the chart.

Labels are plotly's: HTML-escaped (:func:`transformer.plots.style.safe_label`) and sometimes marked up, so they are
turned back into plain text here. The words are ``describe.*`` messages of :mod:`transformer.features.i18n`.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words

TOP_CELLS = 5  # strongest cells named for a figure with one heatmap
TOP_CELLS_PER_PANEL = 3  # and for each of several
TOP_BARS = 3
TOP_LINKS = 4
ALL_BARS = 4  # bar series this short are read out whole, in their order
MOST_TRACES = 8  # traces described per panel; the rest are counted
MOST_NOTES = 5
EXAMPLES = 4  # texts of a trace of points read out as examples
YES = "✓"  # how a table shows a true value (never "True"/"false")
LOG = logging.getLogger(__name__)

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


def describe(fig: go.Figure, language: str = DEFAULT_LANGUAGE) -> Description:
    """``fig`` in words (:class:`Description`), in ``language``."""
    return _Describer(fig, language).run()


def describe_for_page(fig: go.Figure, language: str = DEFAULT_LANGUAGE) -> Description:
    """:func:`describe` for a page: a figure that cannot be described (a bug here, or a kind of figure nothing here
    expects) gets its title as the summary and no tables, and a warning in the log, instead of breaking the page
    that shows it."""
    try:
        return describe(fig, language)
    except Exception:  # a missing caption must never cost the reader the chart itself
        LOG.warning("could not describe a figure", exc_info=True)
        title = plain(fig.layout.title.text) if fig.layout.title else ""
        return Description(title or words(language, "describe")["no_data"], [])


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


def _sentence(text: str, capital: bool = True) -> str:
    """``text`` as a sentence: a full stop at its end and (with ``capital``) its first letter a capital."""
    text = text.strip()
    if not text:
        return ""
    if capital and text[0].isascii() and text[0].islower():
        text = text[0].upper() + text[1:]
    return text if text[-1] in SENTENCE_END else text + "."


def _floats(values: Any) -> np.ndarray | None:
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


def _values(values: Any) -> list:
    """A data array as a list (None for none; a single value, such as one text for every point, as one item)."""
    if values is None:
        return []
    if isinstance(values, (str, int, float)):
        return [values]
    if isinstance(values, Mapping) and "bdata" in values:
        return list(_floats(values))
    return list(values.tolist() if isinstance(values, np.ndarray) else values)


def _unique(names: Sequence[str]) -> list[str]:
    """Table labels that are all different (a sentence may hold the same token twice): repeated ones get their
    position (1-based), as in "the (2)", "the (4)"."""
    counts = Counter(names)
    return [f"{name} ({index + 1})" if counts[name] > 1 else name for index, name in enumerate(names)]


def _unique_text(labels: Sequence) -> list:
    """:func:`_unique` for the text labels among ``labels`` (numbers, such as steps, are left as they are)."""
    counts = Counter(label for label in labels if isinstance(label, str))
    return [
        f"{label} ({index + 1})" if isinstance(label, str) and counts[label] > 1 else label
        for index, label in enumerate(labels)
    ]


def _numbered(titles: Sequence[str]) -> list[str]:
    """Table titles that are all different: repeated ones numbered in order, "title (1)", "title (2)"."""
    counts, seen = Counter(titles), Counter()
    numbered = []
    for title in titles:
        seen[title] += 1
        numbered.append(f"{title} ({seen[title]})" if counts[title] > 1 else title)
    return numbered


def _no_booleans(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every true value shown as ✓ and every false one as nothing, never as "True"/"false"."""

    def shown(value: object) -> object:
        return (YES if value else "") if isinstance(value, (bool, np.bool_)) else value

    for position, dtype in enumerate(table.dtypes):
        if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
            table.isetitem(position, table.iloc[:, position].map(shown))
    return table


# ------------------------------------------------------------------------------------------------------ labels
@dataclass
class _Labels:
    """Labels of one axis's positions: ``spoken`` as the summary says them (tokens in quotes, numbers with the axis
    title), ``shown`` as a table shows them."""

    spoken: list[str]
    shown: list
    tokens: bool = False  # the labels are text the figure wrote as tick labels (tokens): cells read as links


@dataclass
class _Context:
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
    ) -> _Labels:
        """Labels of ``count`` positions drawn at ``values`` (None: 0, 1, …) on an axis: its tick labels where it
        names every position drawn, else the values (categories as they are, in quotes with ``quote``; numbers with
        the axis title, or where it has none as ``kind`` "row" or "column" n)."""
        raw = _values(values)[:count] if values is not None else list(range(count))
        raw += list(range(len(raw), count))
        axis = self.axis(axis_name, letter)
        ticks = _tick_texts(axis)
        if ticks and raw and all(_key(value) in ticks for value in raw):
            return _Labels([ticks[_key(value)][0] for value in raw], [ticks[_key(value)][1] for value in raw], True)
        title = self.axis_title(axis_name, letter)
        spoken, shown = [], []
        for value in raw:
            if isinstance(value, str) and not _numeric(value):
                spoken.append(quoted(plain(value)) if quote else plain(value))
                shown.append(plain(value))
            elif value is None:
                spoken.append("")
                shown.append(None)
            else:
                figure = number(float(value))
                spoken.append(f"{title} {figure}" if title else self.text[kind].format(number=figure))
                shown.append(value)
        return _Labels(_told_apart(spoken, shown), _unique_text(shown))

    def hidden(self, axis_name: str | None, letter: str) -> bool:
        """Whether an axis is hidden, so that positions on it mean nothing to a reader (a tree's columns)."""
        axis = self.axis(axis_name, letter)
        return axis.get("visible") is False or axis.get("showticklabels") is False


def _told_apart(spoken: list[str], names: list) -> list[str]:
    """Spoken labels of text that occurs more than once (a sentence's two "the") with their position (1-based), as
    the tables write them: “the” (2), “the” (4)."""
    counts = Counter(name for name in names if isinstance(name, str))
    return [
        f"{said} ({index + 1})" if isinstance(name, str) and counts[name] > 1 else said
        for index, (said, name) in enumerate(zip(spoken, names, strict=True))
    ]


def _numeric(text: str) -> bool:
    """Whether a category is a number written as text (a dimension "251"), read as a number is."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _key(value: object) -> object:
    """A tick value as a key that a trace's value of the same position matches (1 and 1.0 alike)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return str(value)


def _tick_texts(axis: Mapping) -> dict[object, tuple[str, str]]:
    """An axis's tick labels (spoken, as a table shows them) by tick value, where it sets them
    (``tickmode="array"``); a label the axis holds twice (a sentence's two "the") is told apart by its position."""
    values, texts = _values(axis.get("tickvals")), _values(axis.get("ticktext"))
    if not values or not texts:
        return {}
    names = [plain(text) for text in texts[: len(values)]]
    spoken = _told_apart([quoted(name) for name in names], names)
    return {_key(value): pair for value, *pair in zip(values, spoken, _unique_text(names), strict=False)}


# ------------------------------------------------------------------------------------------------------ panels
@dataclass
class _Panel:
    """One subplot: its traces' clauses and tables."""

    key: str
    traces: list = field(default_factory=list)
    title: str = ""
    parts: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


class _Describer:
    """Works out one figure's :class:`Description`."""

    def __init__(self, fig: go.Figure, language: str) -> None:
        self.fig = fig
        self.text = words(language, "describe")
        self.layout = fig.layout.to_plotly_json()
        self.context = _Context(self.layout, self.text)
        title = self.layout.get("title") or {}
        self.title = plain(title.get("text") if isinstance(title, Mapping) else title)
        subtitle = title.get("subtitle") if isinstance(title, Mapping) else None
        self.subtitle = plain(subtitle.get("text")) if isinstance(subtitle, Mapping) else ""
        self.traces = [trace for trace in fig.data if trace.visible not in (False, "legendonly")]
        self.used_annotations: set[int] = set()

    # -------------------------------------------------------------------------------------------- the whole
    def run(self) -> Description:
        links, consumed = self._links()
        panels = self._panels([trace for index, trace in enumerate(self.traces) if index not in consumed])
        heatmaps = [trace for trace in self.traces if _kind(trace) == "heatmap" and not _decorative(trace)]
        shapes = {_shape(trace) for trace in heatmaps}
        self.heatmap_size_said = len(heatmaps) > 1 and len(shapes) == 1
        self.top_cells = TOP_CELLS if len(heatmaps) <= 1 else TOP_CELLS_PER_PANEL
        for panel in panels:
            self._describe_panel(panel)
        self._name_panels(panels)
        notes = self._notes(panels)
        sentences = [_sentence(self.title, capital=False), _sentence(self.subtitle, capital=False)]
        if self.heatmap_size_said:
            rows, columns = shapes.pop()
            sentences.append(
                _sentence(self.text["heatmaps"].format(count=len(heatmaps), rows=number(rows), columns=number(columns)))
            )
        said = [panel for panel in panels if panel.parts]
        for panel in said:
            clauses = "; ".join(_limited(panel.parts, self.text))
            if panel.title and len(said) > 1:  # a subplot's title is kept as written, like the chart's
                sentences.append(_sentence(f"{panel.title}: {clauses}", capital=False))
            else:
                sentences.append(_sentence(clauses))
        sentences += [_sentence(part) for part in links.parts]
        tables = [table for panel in panels for table in self._titled(panel.title, panel.tables)]
        tables += self._titled("", links.tables)
        titles = _numbered([title for title, _ in tables])
        tables = [(title, table) for title, (_, table) in zip(titles, tables, strict=True)]
        if notes:
            if said or links.parts:
                sentences.append(_sentence(self.text["notes"].format(notes="; ".join(notes))))
            else:  # an empty figure says on it why it is empty
                sentences.append(_sentence("; ".join(notes), capital=False))
        if not said and not links.parts and not notes:
            sentences.append(_sentence(self.text["no_data"]))
        if not tables:
            tables.append((self.title or self.text["chart"], self._text_table(notes)))
        return Description(" ".join(sentence for sentence in sentences if sentence), tables)

    def _titled(self, heading: str, tables: list[tuple[str, pd.DataFrame]]) -> list[tuple[str, pd.DataFrame]]:
        """Tables of one panel (or the links) as (what, table) titled for the reader: the panel's title (the chart's
        where it has none), and what each holds where there are several."""
        base = heading or self.title or self.text["chart"]
        return [
            (f"{base} — {what}" if what and (len(tables) > 1 or (not heading and not self.title)) else base, table)
            for what, table in tables
        ]

    def _text_table(self, notes: list[str]) -> pd.DataFrame:
        """What a figure without data says: its title and the text written on it."""
        lines = [line for line in [self.title, self.subtitle, *notes] if line]
        return pd.DataFrame({self.text["text_column"]: lines or [self.text["no_data"]]})

    def _panels(self, traces: list) -> list[_Panel]:
        """The traces grouped by subplot (their x axis; traces without axes together), in the order drawn."""
        panels: dict[str, _Panel] = {}
        for trace in traces:
            key = (trace.xaxis or "x") if _has_axes(trace) else DOMAIN_PANEL
            panels.setdefault(key, _Panel(key)).traces.append(trace)
        return list(panels.values())

    def _name_panels(self, panels: list[_Panel]) -> None:
        """Each panel's title: the subplot title written above it (an annotation at the top of its domain), else
        "panel n" where there are several."""
        said = [panel for panel in panels if panel.parts and panel.key != DOMAIN_PANEL]
        if len(said) < 2:
            return
        annotations = self.layout.get("annotations") or []
        for number_, panel in enumerate(said, 1):
            trace = panel.traces[0]
            x_domain = self.context.axis(trace.xaxis, "x").get("domain") or [0.0, 1.0]
            y_axis = self.context.axis(trace.yaxis, "y")
            if y_axis.get("overlaying"):
                y_axis = self.context.axis(y_axis["overlaying"], "y")
            top = (y_axis.get("domain") or [0.0, 1.0])[1]
            best, distance = None, math.inf
            for index, annotation in enumerate(annotations):
                if index in self.used_annotations or not _on_paper(annotation) or not plain(annotation.get("text")):
                    continue
                x, y = annotation.get("x"), annotation.get("y")
                if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
                    continue
                if x_domain[0] - 0.02 <= x <= x_domain[1] + 0.02 and top - 0.02 <= y <= top + 0.12:
                    gap = abs(y - top) + 0.1 * abs(x - (x_domain[0] + x_domain[1]) / 2)
                    if gap < distance:
                        best, distance = index, gap
            if best is not None:
                self.used_annotations.add(best)
                panel.title = plain(annotations[best]["text"])
            else:
                panel.title = self.text["panel"].format(number=number_)

    def _notes(self, panels: list[_Panel]) -> list[str]:
        """The text written on the chart besides the titles: annotations (a marked step, a floor, why the figure is
        empty) and labelled shapes, and the cells framed on a heatmap."""
        notes = []
        for index, annotation in enumerate(self.layout.get("annotations") or []):
            if index not in self.used_annotations and plain(annotation.get("text")):
                notes.append(plain(annotation["text"]))
        for shape in self.layout.get("shapes") or []:
            label = shape.get("label") or {}
            if plain(label.get("text")):
                notes.append(plain(label["text"]))
        notes += self._framed(panels)
        unique = list(dict.fromkeys(notes))
        if len(unique) > MOST_NOTES:
            unique = [*unique[:MOST_NOTES], self.text["more"].format(count=len(unique) - MOST_NOTES)]
        return unique

    def _framed(self, panels: list[_Panel]) -> list[str]:
        """Cells and rows of a heatmap outlined by a rectangle (the heads near the best, the chosen query's row)."""
        heatmaps = {
            panel.key: trace
            for panel in panels
            for trace in panel.traces
            if _kind(trace) == "heatmap" and not _decorative(trace)
        }
        cells, rows = [], []
        for shape in self.layout.get("shapes") or []:
            xref, yref = str(shape.get("xref") or "x"), str(shape.get("yref") or "y")
            trace = heatmaps.get(xref)
            corners = [shape.get(corner) for corner in ("x0", "x1", "y0", "y1")]
            if shape.get("type") != "rect" or trace is None or not yref.startswith("y"):
                continue
            if not all(isinstance(corner, (int, float)) for corner in corners):
                continue
            x0, x1, y0, y1 = corners
            z = _matrix(trace)
            row, column = round((y0 + y1) / 2), round((x0 + x1) / 2)
            if not (0 <= row < z.shape[0] and 0 <= column < z.shape[1]) or abs(y1 - y0) > 1.5:
                continue
            row_labels = self.context.labels(trace.y, z.shape[0], trace.yaxis, "y", "row").spoken
            if abs(x1 - x0) <= 1.5:
                column_labels = self.context.labels(trace.x, z.shape[1], trace.xaxis, "x", "column").spoken
                cells.append(f"{row_labels[row]}, {column_labels[column]}")
            else:
                rows.append(row_labels[row])
        notes = []
        if cells:
            notes.append(self.text["framed"].format(items="; ".join(dict.fromkeys(cells))))
        if rows:
            notes.append(self.text["outlined_row"].format(items="; ".join(dict.fromkeys(rows))))
        return notes

    # ------------------------------------------------------------------------------------------- one panel
    def _describe_panel(self, panel: _Panel) -> None:
        series, bars, distributions = [], [], []
        for trace in panel.traces:
            kind = _kind(trace)
            if kind == "heatmap":
                self._heatmap(panel, trace)
            elif kind == "scatter":
                self._scatter(panel, trace, series)
            elif kind == "bar":
                self._bars(panel, trace, bars)
            elif kind == "distribution":
                self._distribution(panel, trace, distributions)
            else:
                self._other(panel, trace)
        if bars:
            first = next(trace for trace in panel.traces if _kind(trace) == "bar")
            label_axis = (first.yaxis, "y") if first.orientation == "h" else (first.xaxis, "x")
            label_heading = self.context.axis_title(*label_axis) or self.text["label"]
            bar_labels = {label for _, labels, _ in bars for label in labels}
            if series and all(label in bar_labels for _, labels, _ in series for label in labels):
                self._wide_table(panel, bars + series, label_heading)  # marks over bars (uniform entropies)
                series = []
            else:
                self._wide_table(panel, bars, label_heading)
        if series:
            self._series_table(panel, series)
        if distributions:
            statistics = [self.text[key] for key in ("count", "minimum", "median", "mean", "maximum")]
            names = _unique([name for name, _ in distributions])
            columns = {name: values for name, (_, values) in zip(names, distributions, strict=True)}
            table = pd.DataFrame(columns, index=statistics)
            panel.tables.append(("", table.rename_axis(self.text["statistic"]).reset_index()))

    def _name(self, trace, axis: str = "y") -> str:
        """What a trace is called: its name (its legend entry), else its value axis's title, else nothing."""
        return plain(trace.name) or self.context.axis_title(getattr(trace, f"{axis}axis"), axis)

    # ----------------------------------------------------------------------------------------------- heatmap
    def _heatmap(self, panel: _Panel, trace) -> None:
        if _decorative(trace):
            return
        z = _matrix(trace)
        rows = self.context.labels(trace.y, z.shape[0], trace.yaxis, "y", "row")
        columns = self.context.labels(trace.x, z.shape[1], trace.xaxis, "x", "column")
        finite = np.isfinite(z)
        kept_rows, kept_columns = finite.any(axis=1), finite.any(axis=0)  # rows and columns wholly empty are gaps
        clauses = []
        if not self.heatmap_size_said:
            row_axis = self.context.axis_title(trace.yaxis, "y")
            column_axis = self.context.axis_title(trace.xaxis, "x")
            size = {"rows": number(kept_rows.sum()), "columns": number(kept_columns.sum())}
            if row_axis and column_axis:
                clauses.append(self.text["heatmap_axes"].format(**size, row_axis=row_axis, column_axis=column_axis))
            else:
                clauses.append(self.text["heatmap"].format(**size))
        empty = int((~finite[np.ix_(kept_rows, kept_columns)]).sum())
        if empty and finite.any():
            clauses[-1:] = [", ".join([*clauses[-1:], self.text["empty_cells"].format(count=number(empty))])]
        if not finite.any():
            clauses.append(self.text["no_values"])
        else:
            signed = bool((z[finite] < 0).any() and (z[finite] > 0).any())
            # The strongest cells, ties in reading order: only the cells at or above the k-th value are sorted (a
            # long sentence's model view has hundreds of thousands).
            strength = np.where(finite, np.abs(z) if signed else z, -np.inf).ravel()
            count = min(self.top_cells, int(finite.sum()))
            threshold = np.partition(strength, strength.size - count)[strength.size - count]
            contenders = np.flatnonzero(strength >= threshold)
            top = contenders[np.argsort(-strength[contenders], kind="stable")][:count]
            items = []
            for index in top:
                row, column = np.unravel_index(index, z.shape)
                value = number(z[row, column])
                if rows.tokens and columns.tokens:
                    items.append(f"{rows.spoken[row]} → {columns.spoken[column]} {value}")
                else:
                    items.append(f"{rows.spoken[row]}, {columns.spoken[column]}: {value}")
            key = "largest_size" if signed else "strongest_links" if rows.tokens and columns.tokens else "strongest"
            separator = ", " if rows.tokens and columns.tokens else "; "
            clauses.append(self.text[key].format(items=separator.join(items)))
        name = plain(trace.name)
        heatmaps_in_panel = sum(_kind(other) == "heatmap" and not _decorative(other) for other in panel.traces)
        prefix = f"{name}: " if name and heatmaps_in_panel > 1 else ""
        panel.parts.append(prefix + "; ".join(clauses))
        row_names = _unique([str(label) for label, kept in zip(rows.shown, kept_rows, strict=True) if kept])
        column_names = _unique([str(label) for label, kept in zip(columns.shown, kept_columns, strict=True) if kept])
        heading = self.context.axis_title(trace.yaxis, "y") or self.text["row_column"]
        while heading in column_names:
            heading += " "  # the rows' heading must not be a column's name as well
        values = pd.DataFrame(z[np.ix_(kept_rows, kept_columns)], index=row_names, columns=column_names)
        panel.tables.append((name, values.rename_axis(heading).reset_index()))
        written = _cell_text(trace, z.shape)
        if written is not None:
            cells = pd.DataFrame(written[np.ix_(kept_rows, kept_columns)], index=row_names, columns=column_names)
            panel.tables.append((self.text["cell_text"], cells.rename_axis(heading).reset_index()))

    # ----------------------------------------------------------------------------------------------- scatter
    def _scatter(self, panel: _Panel, trace, series: list) -> None:
        x, y = _values(trace.x), _values(trace.y)
        if not y and not x:
            return
        if not x:
            x = list(range(len(y)))
        if not y:
            y = list(range(len(x)))
        present = [i for i, (a, b) in enumerate(zip(x, y, strict=False)) if a is not None and b is not None]
        if not present:
            return  # a legend entry with no points
        mode = trace.mode or ("lines+markers" if len(y) < 20 else "lines")
        decoration = trace.hoverinfo == "skip" and (trace.fill not in (None, "none") or not plain(trace.name))
        if decoration or _invisible(trace, mode):
            return  # a masked area, a band behind a line, edges of a tree, click targets
        values = _floats(y)
        hidden = self.context.hidden(trace.xaxis, "x") or self.context.hidden(trace.yaxis, "y")
        ordered = _monotonic([x[i] for i in present])
        if values is not None and not hidden and ("lines" in mode or ordered):
            self._line(panel, trace, x, values, series)
        else:
            self._points(panel, trace, x, y, present)

    def _line(self, panel: _Panel, trace, x: list, values: np.ndarray, series: list) -> None:
        name = self._name(trace) or self.text["values"]
        labels = self.context.labels(x, len(x), trace.xaxis, "x", "column", quote=True)
        valid = [i for i in range(min(len(x), len(values))) if x[i] is not None and np.isfinite(values[i])]
        if not valid:
            return
        series.append((name, [labels.shown[i] for i in valid], [float(values[i]) for i in valid]))
        where = [labels.spoken[i] for i in valid]
        ys = values[valid]
        if len(valid) == 1:
            panel.parts.append(self.text["one_point"].format(name=name, value=number(ys[0]), at=where[0]))
            return
        first, last = ys[0], ys[-1]
        high, low = int(np.argmax(ys)), int(np.argmin(ys))
        if np.isclose(ys[high], ys[low], rtol=1e-6, atol=0):
            panel.parts.append(self.text["constant"].format(name=name, value=number(first)))
            return
        trend = "returns" if number(first) == number(last) else "rises" if last > first else "falls"
        clauses = [self.text[trend].format(name=name, first=number(first), last=number(last))]
        # The extremes the start and the end do not already give, with where they are.
        for key, index in (("highest", high), ("lowest", low)):
            if ys[index] not in (first, last):
                clauses.append(self.text[key].format(value=number(ys[index]), at=where[index]))
        panel.parts.append(", ".join(clauses))

    def _points(self, panel: _Panel, trace, x: list, y: list, present: list[int]) -> None:
        name = self._name(trace) or self.text["points_name"]
        count = len(present)
        clause = self.text["point" if count == 1 else "points"].format(name=name, count=number(count))
        labels = [plain(label) for label in _values(trace.text)] or [plain(label) for label in _values(trace.hovertext)]
        examples = [labels[i] for i in present if i < len(labels) and labels[i]]
        if examples and _values(trace.text):
            shown = ", ".join(quoted(label) for label in list(dict.fromkeys(examples))[:EXAMPLES])
            clause += " " + self.text["examples"].format(items=shown)
        panel.parts.append(clause)
        table = {
            self.text["label"]: [labels[i] if i < len(labels) else "" for i in present] if labels else None,
            self.context.axis_title(trace.xaxis, "x") or "x": [_cell(x[i]) for i in present],
            self.context.axis_title(trace.yaxis, "y") or "y": [_cell(y[i]) for i in present],
        }
        frame = pd.DataFrame({key: column for key, column in table.items() if column is not None})
        panel.tables.append((name, frame))

    def _series_table(self, panel: _Panel, series: list) -> None:
        """The panel's lines as one table, a row per x (a column per line) where every line has each x once; else a
        table per line."""
        heading = self.context.axis_title(panel.traces[0].xaxis, "x") or self.text["label"]
        if all(len(set(map(_key, xs))) == len(xs) for _, xs, _ in series):
            self._wide_table(panel, series, heading)
            return
        for name, xs, ys in series:
            frame = pd.DataFrame({heading: [_cell(value) for value in xs], name: ys})
            panel.tables.append((name, frame))

    def _wide_table(self, panel: _Panel, series: list, heading: str) -> None:
        """Series of (name, labels, values) as one table: a row per label, a column per series."""
        names = _unique([name for name, _, _ in series])
        columns = [
            pd.Series(ys, index=pd.Index([_cell(x) for x in xs]), name=name)
            for name, (_, xs, ys) in zip(names, series, strict=True)
        ]
        numeric = all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for column in columns for x in column.index
        )
        if any(column.index.has_duplicates for column in columns):  # labels that read alike (two "▁" pieces)
            for name, column in zip(names, columns, strict=True):
                frame = pd.DataFrame({heading: list(column.index), name: list(column)})
                panel.tables.append((name, _no_booleans(frame)))
            return
        table = pd.concat(columns, axis=1, sort=numeric)
        table = table.rename_axis(heading).reset_index()
        panel.tables.append(("", _no_booleans(table)))

    # -------------------------------------------------------------------------------------------------- bars
    def _bars(self, panel: _Panel, trace, bars: list) -> None:
        horizontal = trace.orientation == "h"
        values = _floats(trace.x if horizontal else trace.y)
        if values is None or not values.size:
            return
        values = values.ravel()
        axis_name, letter = (trace.yaxis, "y") if horizontal else (trace.xaxis, "x")
        labels = self.context.labels(
            trace.y if horizontal else trace.x, len(values), axis_name, letter, "column", quote=True
        )
        shown = _unique([str(label) for label in labels.shown])  # a table's row per bar, the same for every series
        valid = [i for i in range(len(values)) if np.isfinite(values[i])]
        if not valid:
            return
        name = self._name(trace, "x" if horizontal else "y")
        bars.append((name or self.text["values"], [shown[i] for i in valid], [float(values[i]) for i in valid]))
        prefix = f"{name}: " if name else ""
        drawn = [i for i in valid if values[i] != 0]  # a bar of 0 is not drawn (the other sign's share, say)
        if len(valid) > ALL_BARS and drawn:
            valid = drawn
        items = [f"{labels.spoken[i]} {number(values[i])}" for i in valid]
        if len(valid) <= ALL_BARS:
            panel.parts.append(prefix + ", ".join(items))
            return
        if len({number(values[i]) for i in valid}) == 1:  # bars all of one height (the masked keys)
            same = self.text["same_bars"].format(count=number(len(valid)), value=number(values[valid[0]]))
            panel.parts.append(prefix + same)
            return
        order = sorted(range(len(valid)), key=lambda i: -values[valid[i]])
        largest = self.text["largest"].format(items=", ".join(items[i] for i in order[:TOP_BARS]))
        panel.parts.append(f"{prefix}{largest}, {self.text['smallest'].format(items=items[order[-1]])}")

    def _distribution(self, panel: _Panel, trace, distributions: list) -> None:
        horizontal = trace.orientation == "h"
        values = _floats(trace.y if (horizontal or trace.x is None) and trace.y is not None else trace.x)
        if values is None:
            return
        values = values[np.isfinite(values)]
        if not values.size:
            return
        name = self._name(trace, "y" if horizontal else "x") or self.text["values"]
        middle = float(np.median(values))
        statistics = [float(values.size), float(values.min()), middle, float(values.mean()), float(values.max())]
        distributions.append((name, statistics))
        panel.parts.append(
            self.text["distribution"].format(
                name=name,
                count=number(values.size),
                low=number(values.min()),
                high=number(values.max()),
                median=number(middle),
            )
        )

    # ------------------------------------------------------------------------------------------------- other
    def _other(self, panel: _Panel, trace) -> None:
        """Traces of other kinds: what the common ones hold; for the rest their kind and any data arrays."""
        spec = trace.to_plotly_json()
        kind = spec.get("type", "")
        name = plain(spec.get("name")) or kind
        if kind == "pie":
            labels = [plain(label) for label in _values(spec.get("labels"))]
            values = _floats(spec.get("values"))
            if values is not None and len(values):
                labels += [str(i) for i in range(len(labels), len(values))]
                order = np.argsort(-values, kind="stable")[:TOP_BARS]
                items = ", ".join(f"{quoted(labels[i])} {number(values[i])}" for i in order)
                panel.parts.append(f"{name}: {self.text['largest'].format(items=items)}")
                table = pd.DataFrame({self.text["label"]: labels[: len(values)], name: values})
                panel.tables.append((name, table))
                return
        if kind == "table":
            header = [plain(value) for value in _values((spec.get("header") or {}).get("values"))]
            cells = [_values(column) for column in _values((spec.get("cells") or {}).get("values"))]
            if cells:
                rows = max(len(column) for column in cells)
                header = _unique(header + [str(i + 1) for i in range(len(header), len(cells))])[: len(cells)]
                table = pd.DataFrame(
                    {
                        name_: [plain(c) if isinstance(c, str) else c for c in column] + [None] * (rows - len(column))
                        for name_, column in zip(header, cells, strict=True)
                    }
                )
                panel.parts.append(
                    self.text["table"].format(rows=number(rows), columns=number(len(cells)), header=", ".join(header))
                )
                panel.tables.append((name, _no_booleans(table)))
                return
        if kind == "sankey":
            nodes = [plain(label) for label in _values((spec.get("node") or {}).get("label"))]
            link = spec.get("link") or {}
            sources, targets = _values(link.get("source")), _values(link.get("target"))
            values = _floats(link.get("value"))
            if values is not None and len(values) and sources and targets:

                def node(index: int) -> str:
                    return nodes[int(index)] if 0 <= int(index) < len(nodes) else str(index)

                flows = list(zip(map(node, sources), map(node, targets), values.tolist(), strict=False))
                order = sorted(range(len(flows)), key=lambda i: -flows[i][2])[:TOP_BARS]
                items = ", ".join(f"{quoted(flows[i][0])} → {quoted(flows[i][1])} {number(flows[i][2])}" for i in order)
                panel.parts.append(self.text["flows"].format(items=items))
                table = pd.DataFrame(flows, columns=[self.text["from"], self.text["to"], self.text["strength"]])
                panel.tables.append((name, table))
                return
        if kind == "parcoords":
            dimensions = spec.get("dimensions") or []
            columns = {
                plain(dimension.get("label")) or str(i + 1): _values(dimension.get("values"))
                for i, dimension in enumerate(dimensions)
            }
            if columns and all(len(column) == len(next(iter(columns.values()))) for column in columns.values()):
                count = len(next(iter(columns.values())))
                panel.parts.append(self.text["parcoords"].format(count=number(count), dimensions=", ".join(columns)))
                panel.tables.append((name, _no_booleans(pd.DataFrame(columns))))
                return
        arrays = {
            key: _values(spec[key])
            for key in ("labels", "x", "y", "z", "values", "r", "theta", "lat", "lon", "a", "b", "c")
            if isinstance(spec.get(key), (list, tuple, np.ndarray)) and np.ndim(spec[key]) == 1
        }
        panel.parts.append(self.text["other"].format(name=name, kind=kind))
        if arrays and len({len(column) for column in arrays.values()}) == 1:
            panel.tables.append((name, _no_booleans(pd.DataFrame(arrays))))

    # ---------------------------------------------------------------------------------------- link diagrams
    def _links(self) -> tuple[_Parts, set[int]]:
        """Lines drawn between two columns of words (queries and keys, English and German): the strongest links,
        per legend group (a head). The line's opacity is its strength where set; else lines are ranked by width."""
        found = _Parts()
        columns: dict[float, dict[object, tuple[str, str]]] = {}  # per column, by row: (spoken, shown)
        column_traces = []
        for index, trace in enumerate(self.traces):
            if _kind(trace) != "scatter" or "text" not in (trace.mode or ""):
                continue
            xs, ys, texts = _values(trace.x), _values(trace.y), _values(trace.text)
            if not xs or len(set(map(_key, xs))) != 1 or len(texts) != len(ys) or not isinstance(xs[0], (int, float)):
                continue
            names = [plain(label) for label in texts]
            spoken = _told_apart([quoted(name) for name in names], names)
            shown = _unique(names)
            columns[float(xs[0])] = {_key(y): pair for y, *pair in zip(ys, spoken, shown, strict=True)}
            column_traces.append(index)
        if len(columns) < 2:
            return found, set()
        places = sorted(columns)
        spread = places[-1] - places[0]

        def column_at(x: object) -> float | None:
            if not isinstance(x, (int, float)):
                return None
            nearest = min(places, key=lambda place: abs(place - x))
            return nearest if abs(nearest - x) <= 0.1 * spread else None

        groups: dict[str, list[tuple[tuple[str, str], tuple[str, str], float | None, float]]] = {}
        consumed = set(column_traces)
        for index, trace in enumerate(self.traces):
            if _kind(trace) != "scatter" or "text" in (trace.mode or "") or index in consumed:
                continue
            xs, ys = _values(trace.x), _values(trace.y)
            links = []
            for start in range(len(xs) - 1):
                ends = (xs[start], ys[start]), (xs[start + 1], ys[start + 1])
                if any(value is None for end in ends for value in end):
                    continue
                left, right = column_at(ends[0][0]), column_at(ends[1][0])
                if left is None or right is None or left == right:
                    continue
                source = columns[left].get(_key(ends[0][1]))
                target = columns[right].get(_key(ends[1][1]))
                if source is not None and target is not None:
                    links.append((source, target) if left < right else (target, source))
            if not links:
                continue
            consumed.add(index)
            strength = trace.opacity
            width = trace.line.width if trace.line and trace.line.width is not None else 1.0
            group = groups.setdefault(trace.legendgroup or "", [])
            group += [(source, target, strength, width) for source, target in links]
        if not groups:
            return found, set()
        names = {}
        for index, trace in enumerate(self.traces):
            if trace.legendgroup and plain(trace.name) and trace.legendgroup not in names:
                names[trace.legendgroup] = plain(trace.name)
                if not [value for value in _values(trace.x) if value is not None]:
                    consumed.add(index)  # the group's legend entry
        heading = [self.text["from"], self.text["to"]]
        for key, links in groups.items():
            links.sort(key=lambda link: (-(link[2] if link[2] is not None else 1.0), -link[3]))
            weighed = any(link[2] is not None for link in links)
            items = [
                f"{source[0]} → {target[0]}" + (f" {number(strength)}" if strength is not None else "")
                for source, target, strength, _ in links[:TOP_LINKS]
            ]
            clause = self.text["strongest_links" if weighed else "links_by_width"].format(items=", ".join(items))
            name = names.get(key, "")
            found.parts.append(f"{name}: {clause}" if name else clause)
            rows = [[source[1], target[1], *([strength] if weighed else [])] for source, target, strength, _ in links]
            table = pd.DataFrame(rows, columns=heading + ([self.text["strength"]] if weighed else []))
            found.tables.append((name, table))
        found.parts += self._marked(column_traces)
        return found, consumed

    def _marked(self, column_traces: list[int]) -> list[str]:
        """Words of a column drawn with a marker unlike the rest (a warning), and what the legend says it means."""
        marked = []
        symbols_used = set()
        for index in column_traces:
            trace = self.traces[index]
            symbols = _values(trace.marker.symbol) if trace.marker else []
            if len(set(map(str, symbols))) < 2:
                continue
            usual = Counter(map(str, symbols)).most_common(1)[0][0]
            texts = [plain(label) for label in _values(trace.text)]
            for position, symbol in enumerate(symbols):
                if str(symbol) != usual and position < len(texts):
                    marked.append(quoted(texts[position]))
                    symbols_used.add(str(symbol))
        if not marked:
            return []
        meanings = [
            plain(trace.name)
            for trace in self.traces
            if plain(trace.name)
            and trace.marker
            and str(trace.marker.symbol) in symbols_used
            and not [value for value in _values(getattr(trace, "x", None)) if value is not None]
        ]
        return [self.text["marked"].format(meaning=" / ".join(meanings) or "—", items=", ".join(marked))]


@dataclass
class _Parts:
    parts: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------------ helpers
def _kind(trace) -> str:
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


def _has_axes(trace) -> bool:
    return _kind(trace) in ("heatmap", "scatter", "bar", "distribution") or hasattr(trace, "xaxis")


def _on_paper(annotation: Mapping) -> bool:
    return str(annotation.get("xref", "paper")).startswith("paper") and str(annotation.get("yref", "paper")).startswith(
        "paper"
    )


def _decorative(trace) -> bool:
    """A heatmap of one colour only (the grey behind masked cells): it carries no values to read."""
    scale = trace.colorscale
    if scale is None or isinstance(scale, str):
        return False
    return len({str(colour) for _, colour in scale}) == 1


def _matrix(trace) -> np.ndarray:
    z = _floats(trace.z)
    if z is None:
        return np.full((0, 0), np.nan)
    return z.reshape(1, -1) if z.ndim == 1 else z.reshape(z.shape[0], -1)


def _shape(trace) -> tuple[int, int]:
    z = _matrix(trace)
    finite = np.isfinite(z)
    return int(finite.any(axis=1).sum()), int(finite.any(axis=0).sum())


def _cell_text(trace, shape: tuple[int, ...]) -> np.ndarray | None:
    """The words written in a heatmap's cells (the logit lens's predictions) when they say more than the values."""
    written = _values(trace.text)
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


def _invisible(trace, mode: str) -> bool:
    """Whether a trace draws nothing a reader sees: transparent, or markers only, all transparent (targets for
    clicks)."""
    if trace.opacity == 0:
        return True
    opacity = trace.marker.opacity if trace.marker else None
    return "lines" not in mode and "text" not in mode and isinstance(opacity, (int, float)) and opacity == 0


def _monotonic(values: list) -> bool:
    """Whether positions run one way (a series along its axis) rather than scatter (a cloud of points)."""
    numbers = _floats(values)
    if numbers is None:
        return True  # categories, in the order drawn
    steps = np.diff(numbers[np.isfinite(numbers)])
    return bool((steps >= 0).all() or (steps <= 0).all())


def _cell(value: object) -> object:
    """A value as a table holds it: plain text for a label, Python numbers for NumPy's."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _limited(parts: list[str], text: Mapping[str, str]) -> list[str]:
    if len(parts) <= MOST_TRACES:
        return parts
    return [*parts[:MOST_TRACES], text["more"].format(count=len(parts) - MOST_TRACES)]
