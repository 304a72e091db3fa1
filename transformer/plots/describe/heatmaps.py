"""A heatmap in words: its size and strongest cells (masked cells never among them; on a diverging map, the cells
largest in size), and its cells as a table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer.plots.describe.reading import (
    Panel,
    cell_texts,
    decorative,
    matrix_of,
    number,
    plain,
    trace_kind,
    unique_names,
)


class HeatmapReading:
    """The describer's methods for these figures: they read its ``fig``, ``text``, ``context`` and panels."""

    # ----------------------------------------------------------------------------------------------- heatmap
    def _heatmap(self, panel: Panel, trace) -> None:
        if decorative(trace):
            return
        z = matrix_of(trace)
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
        heatmaps_in_panel = sum(trace_kind(other) == "heatmap" and not decorative(other) for other in panel.traces)
        prefix = f"{name}: " if name and heatmaps_in_panel > 1 else ""
        panel.parts.append(prefix + "; ".join(clauses))
        row_names = unique_names([str(label) for label, kept in zip(rows.shown, kept_rows, strict=True) if kept])
        column_names = unique_names(
            [str(label) for label, kept in zip(columns.shown, kept_columns, strict=True) if kept]
        )
        heading = self.context.axis_title(trace.yaxis, "y") or self.text["row_column"]
        while heading in column_names:
            heading += " "  # the rows' heading must not be a column's name as well
        values = pd.DataFrame(z[np.ix_(kept_rows, kept_columns)], index=row_names, columns=column_names)
        panel.tables.append((name, values.rename_axis(heading).reset_index()))
        written = cell_texts(trace, z.shape)
        if written is not None:
            cells = pd.DataFrame(written[np.ix_(kept_rows, kept_columns)], index=row_names, columns=column_names)
            panel.tables.append((self.text["cell_text"], cells.rename_axis(heading).reset_index()))
