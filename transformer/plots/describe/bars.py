"""Bars and distributions in words: the largest (and smallest) bars, or how many values a histogram holds, their range
and median; and any other trace (a Sankey diagram, parallel coordinates, a table): what it holds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer.plots.describe.reading import (
    ALL_BARS,
    TOP_BARS,
    Panel,
    floats_of,
    number,
    plain,
    quoted,
    unique_names,
    values_of,
    without_booleans,
)


class BarReading:
    """The describer's methods for these figures: they read its ``fig``, ``text``, ``context`` and panels."""

    # -------------------------------------------------------------------------------------------------- bars
    def _bars(self, panel: Panel, trace, bars: list) -> None:
        horizontal = trace.orientation == "h"
        values = floats_of(trace.x if horizontal else trace.y)
        if values is None or not values.size:
            return
        values = values.ravel()
        axis_name, letter = (trace.yaxis, "y") if horizontal else (trace.xaxis, "x")
        labels = self.context.labels(
            trace.y if horizontal else trace.x, len(values), axis_name, letter, "column", quote=True
        )
        shown = unique_names([str(label) for label in labels.shown])  # a table's row per bar, the same for every series
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

    def _distribution(self, panel: Panel, trace, distributions: list) -> None:
        horizontal = trace.orientation == "h"
        values = floats_of(trace.y if (horizontal or trace.x is None) and trace.y is not None else trace.x)
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
    def _other(self, panel: Panel, trace) -> None:
        """Traces of other kinds: what the common ones hold; for the rest their kind and any data arrays."""
        spec = trace.to_plotly_json()
        kind = spec.get("type", "")
        name = plain(spec.get("name")) or kind
        if kind == "pie":
            labels = [plain(label) for label in values_of(spec.get("labels"))]
            values = floats_of(spec.get("values"))
            if values is not None and len(values):
                labels += [str(i) for i in range(len(labels), len(values))]
                order = np.argsort(-values, kind="stable")[:TOP_BARS]
                items = ", ".join(f"{quoted(labels[i])} {number(values[i])}" for i in order)
                panel.parts.append(f"{name}: {self.text['largest'].format(items=items)}")
                table = pd.DataFrame({self.text["label"]: labels[: len(values)], name: values})
                panel.tables.append((name, table))
                return
        if kind == "table":
            header = [plain(value) for value in values_of((spec.get("header") or {}).get("values"))]
            cells = [values_of(column) for column in values_of((spec.get("cells") or {}).get("values"))]
            if cells:
                rows = max(len(column) for column in cells)
                header = unique_names(header + [str(i + 1) for i in range(len(header), len(cells))])[: len(cells)]
                table = pd.DataFrame(
                    {
                        name_: [plain(c) if isinstance(c, str) else c for c in column] + [None] * (rows - len(column))
                        for name_, column in zip(header, cells, strict=True)
                    }
                )
                panel.parts.append(
                    self.text["table"].format(rows=number(rows), columns=number(len(cells)), header=", ".join(header))
                )
                panel.tables.append((name, without_booleans(table)))
                return
        if kind == "sankey":
            nodes = [plain(label) for label in values_of((spec.get("node") or {}).get("label"))]
            link = spec.get("link") or {}
            sources, targets = values_of(link.get("source")), values_of(link.get("target"))
            values = floats_of(link.get("value"))
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
                plain(dimension.get("label")) or str(i + 1): values_of(dimension.get("values"))
                for i, dimension in enumerate(dimensions)
            }
            if columns and all(len(column) == len(next(iter(columns.values()))) for column in columns.values()):
                count = len(next(iter(columns.values())))
                panel.parts.append(self.text["parcoords"].format(count=number(count), dimensions=", ".join(columns)))
                panel.tables.append((name, without_booleans(pd.DataFrame(columns))))
                return
        arrays = {
            key: values_of(spec[key])
            for key in ("labels", "x", "y", "z", "values", "r", "theta", "lat", "lon", "a", "b", "c")
            if isinstance(spec.get(key), (list, tuple, np.ndarray)) and np.ndim(spec[key]) == 1
        }
        panel.parts.append(self.text["other"].format(name=name, kind=kind))
        if arrays and len({len(column) for column in arrays.values()}) == 1:
            panel.tables.append((name, without_booleans(pd.DataFrame(arrays))))
