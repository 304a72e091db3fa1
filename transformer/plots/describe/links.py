"""Lines drawn between two columns of words (the paper-style token lines, a word alignment) in words: the strongest
links, per head, and the marked words."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from transformer.plots.describe.reading import (
    TOP_LINKS,
    Parts,
    number,
    plain,
    quoted,
    sort_key,
    told_apart,
    trace_kind,
    unique_names,
    values_of,
)


class LinkReading:
    """The describer's methods for these figures: they read its ``fig``, ``text``, ``context`` and panels."""

    # ---------------------------------------------------------------------------------------- link diagrams
    def _links(self) -> tuple[Parts, set[int]]:
        """Lines drawn between two columns of words (queries and keys, English and German): the strongest links,
        per legend group (a head). The line's opacity is its strength where set; else lines are ranked by width."""
        found = Parts()
        columns: dict[float, dict[object, tuple[str, str]]] = {}  # per column, by row: (spoken, shown)
        column_traces = []
        for index, trace in enumerate(self.traces):
            if trace_kind(trace) != "scatter" or "text" not in (trace.mode or ""):
                continue
            xs, ys, texts = values_of(trace.x), values_of(trace.y), values_of(trace.text)
            if (
                not xs
                or len(set(map(sort_key, xs))) != 1
                or len(texts) != len(ys)
                or not isinstance(xs[0], (int, float))
            ):
                continue
            names = [plain(label) for label in texts]
            spoken = told_apart([quoted(name) for name in names], names)
            shown = unique_names(names)
            columns[float(xs[0])] = {sort_key(y): pair for y, *pair in zip(ys, spoken, shown, strict=True)}
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
            if trace_kind(trace) != "scatter" or "text" in (trace.mode or "") or index in consumed:
                continue
            xs, ys = values_of(trace.x), values_of(trace.y)
            links = []
            for start in range(len(xs) - 1):
                ends = (xs[start], ys[start]), (xs[start + 1], ys[start + 1])
                if any(value is None for end in ends for value in end):
                    continue
                left, right = column_at(ends[0][0]), column_at(ends[1][0])
                if left is None or right is None or left == right:
                    continue
                source = columns[left].get(sort_key(ends[0][1]))
                target = columns[right].get(sort_key(ends[1][1]))
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
                if not [value for value in values_of(trace.x) if value is not None]:
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
            symbols = values_of(trace.marker.symbol) if trace.marker else []
            if len(set(map(str, symbols))) < 2:
                continue
            usual = Counter(map(str, symbols)).most_common(1)[0][0]
            texts = [plain(label) for label in values_of(trace.text)]
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
            and not [value for value in values_of(getattr(trace, "x", None)) if value is not None]
        ]
        return [self.text["marked"].format(meaning=" / ".join(meanings) or "—", items=", ".join(marked))]
