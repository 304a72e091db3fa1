"""Lines and points in words: where a line starts and ends, its highest and lowest values and where they are; a few
points read out as examples; the series as tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer.plots.describe.reading import (
    EXAMPLES,
    Panel,
    floats_of,
    invisible,
    monotonic,
    number,
    plain,
    quoted,
    sort_key,
    table_cell,
    unique_names,
    values_of,
    without_booleans,
)


class LineReading:
    """The describer's methods for these figures: they read its ``fig``, ``text``, ``context`` and panels."""

    # ----------------------------------------------------------------------------------------------- scatter
    def _scatter(self, panel: Panel, trace, series: list) -> None:
        x, y = values_of(trace.x), values_of(trace.y)
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
        if decoration or invisible(trace, mode):
            return  # a masked area, a band behind a line, edges of a tree, click targets
        values = floats_of(y)
        hidden = self.context.hidden(trace.xaxis, "x") or self.context.hidden(trace.yaxis, "y")
        ordered = monotonic([x[i] for i in present])
        if values is not None and not hidden and ("lines" in mode or ordered):
            self._line(panel, trace, x, values, series)
        else:
            self._points(panel, trace, x, y, present)

    def _line(self, panel: Panel, trace, x: list, values: np.ndarray, series: list) -> None:
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

    def _points(self, panel: Panel, trace, x: list, y: list, present: list[int]) -> None:
        name = self._name(trace) or self.text["points_name"]
        count = len(present)
        clause = self.text["point" if count == 1 else "points"].format(name=name, count=number(count))
        labels = [plain(label) for label in values_of(trace.text)] or [
            plain(label) for label in values_of(trace.hovertext)
        ]
        examples = [labels[i] for i in present if i < len(labels) and labels[i]]
        if examples and values_of(trace.text):
            shown = ", ".join(quoted(label) for label in list(dict.fromkeys(examples))[:EXAMPLES])
            clause += " " + self.text["examples"].format(items=shown)
        panel.parts.append(clause)
        table = {
            self.text["label"]: [labels[i] if i < len(labels) else "" for i in present] if labels else None,
            self.context.axis_title(trace.xaxis, "x") or "x": [table_cell(x[i]) for i in present],
            self.context.axis_title(trace.yaxis, "y") or "y": [table_cell(y[i]) for i in present],
        }
        frame = pd.DataFrame({key: column for key, column in table.items() if column is not None})
        panel.tables.append((name, frame))

    def _series_table(self, panel: Panel, series: list) -> None:
        """The panel's lines as one table, a row per x (a column per line) where every line has each x once; else a
        table per line."""
        heading = self.context.axis_title(panel.traces[0].xaxis, "x") or self.text["label"]
        if all(len(set(map(sort_key, xs))) == len(xs) for _, xs, _ in series):
            self._wide_table(panel, series, heading)
            return
        for name, xs, ys in series:
            frame = pd.DataFrame({heading: [table_cell(value) for value in xs], name: ys})
            panel.tables.append((name, frame))

    def _wide_table(self, panel: Panel, series: list, heading: str) -> None:
        """Series of (name, labels, values) as one table: a row per label, a column per series."""
        names = unique_names([name for name, _, _ in series])
        columns = [
            pd.Series(ys, index=pd.Index([table_cell(x) for x in xs]), name=name)
            for name, (_, xs, ys) in zip(names, series, strict=True)
        ]
        numeric = all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for column in columns for x in column.index
        )
        if any(column.index.has_duplicates for column in columns):  # labels that read alike (two "▁" pieces)
            for name, column in zip(names, columns, strict=True):
                frame = pd.DataFrame({heading: list(column.index), name: list(column)})
                panel.tables.append((name, without_booleans(frame)))
            return
        table = pd.concat(columns, axis=1, sort=numeric)
        table = table.rename_axis(heading).reset_index()
        panel.tables.append(("", without_booleans(table)))
