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

import logging
import math
from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.describe.bars import BarReading
from transformer.plots.describe.heatmaps import HeatmapReading
from transformer.plots.describe.lines import LineReading
from transformer.plots.describe.links import LinkReading
from transformer.plots.describe.reading import (
    DOMAIN_PANEL,
    MOST_NOTES,
    TOP_CELLS,
    TOP_CELLS_PER_PANEL,
    Context,
    Description,
    Panel,
    as_sentence,
    decorative,
    has_axes,
    limited,
    matrix_of,
    number,
    numbered_titles,
    on_paper,
    plain,
    shape_of,
    trace_kind,
    unique_names,
)

LOG = logging.getLogger(__name__)


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


class _Describer(HeatmapReading, LineReading, BarReading, LinkReading):
    """Works out one figure's :class:`Description`."""

    def __init__(self, fig: go.Figure, language: str) -> None:
        self.fig = fig
        self.text = words(language, "describe")
        self.layout = fig.layout.to_plotly_json()
        self.context = Context(self.layout, self.text)
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
        heatmaps = [trace for trace in self.traces if trace_kind(trace) == "heatmap" and not decorative(trace)]
        shapes = {shape_of(trace) for trace in heatmaps}
        self.heatmap_size_said = len(heatmaps) > 1 and len(shapes) == 1
        self.top_cells = TOP_CELLS if len(heatmaps) <= 1 else TOP_CELLS_PER_PANEL
        for panel in panels:
            self._describe_panel(panel)
        self._name_panels(panels)
        notes = self._notes(panels)
        sentences = [as_sentence(self.title, capital=False), as_sentence(self.subtitle, capital=False)]
        if self.heatmap_size_said:
            rows, columns = shapes.pop()
            sentences.append(
                as_sentence(
                    self.text["heatmaps"].format(count=len(heatmaps), rows=number(rows), columns=number(columns))
                )
            )
        said = [panel for panel in panels if panel.parts]
        for panel in said:
            clauses = "; ".join(limited(panel.parts, self.text))
            if panel.title and len(said) > 1:  # a subplot's title is kept as written, like the chart's
                sentences.append(as_sentence(f"{panel.title}: {clauses}", capital=False))
            else:
                sentences.append(as_sentence(clauses))
        sentences += [as_sentence(part) for part in links.parts]
        tables = [table for panel in panels for table in self._titled(panel.title, panel.tables)]
        tables += self._titled("", links.tables)
        titles = numbered_titles([title for title, _ in tables])
        tables = [(title, table) for title, (_, table) in zip(titles, tables, strict=True)]
        if notes:
            if said or links.parts:
                sentences.append(as_sentence(self.text["notes"].format(notes="; ".join(notes))))
            else:  # an empty figure says on it why it is empty
                sentences.append(as_sentence("; ".join(notes), capital=False))
        if not said and not links.parts and not notes:
            sentences.append(as_sentence(self.text["no_data"]))
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

    def _panels(self, traces: list) -> list[Panel]:
        """The traces grouped by subplot (their x axis; traces without axes together), in the order drawn."""
        panels: dict[str, Panel] = {}
        for trace in traces:
            key = (trace.xaxis or "x") if has_axes(trace) else DOMAIN_PANEL
            panels.setdefault(key, Panel(key)).traces.append(trace)
        return list(panels.values())

    def _name_panels(self, panels: list[Panel]) -> None:
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
                if index in self.used_annotations or not on_paper(annotation) or not plain(annotation.get("text")):
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

    def _notes(self, panels: list[Panel]) -> list[str]:
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

    def _framed(self, panels: list[Panel]) -> list[str]:
        """Cells and rows of a heatmap outlined by a rectangle (the heads near the best, the chosen query's row)."""
        heatmaps = {
            panel.key: trace
            for panel in panels
            for trace in panel.traces
            if trace_kind(trace) == "heatmap" and not decorative(trace)
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
            z = matrix_of(trace)
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
    def _describe_panel(self, panel: Panel) -> None:
        series, bars, distributions = [], [], []
        for trace in panel.traces:
            kind = trace_kind(trace)
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
            first = next(trace for trace in panel.traces if trace_kind(trace) == "bar")
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
            names = unique_names([name for name, _ in distributions])
            columns = {name: values for name, (_, values) in zip(names, distributions, strict=True)}
            table = pd.DataFrame(columns, index=statistics)
            panel.tables.append(("", table.rename_axis(self.text["statistic"]).reset_index()))

    def _name(self, trace, axis: str = "y") -> str:
        """What a trace is called: its name (its legend entry), else its value axis's title, else nothing."""
        return plain(trace.name) or self.context.axis_title(getattr(trace, f"{axis}axis"), axis)
