"""The head atlas as one map (:mod:`transformer.analysis.atlas`): every head a point placed by its profile, coloured
by its group, shaped by its kind; the selected head ringed, its related heads joined to it."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from transformer.analysis.atlas_groups import GROUP_KEYS, group_key
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.palettes import ATLAS_GROUP_ROLES, colour
from transformer.plots.style import base_layout, figure, safe_label

GROUP_COLOURS = dict(zip(GROUP_KEYS, map(colour, ATLAS_GROUP_ROLES), strict=True))
# A dark rim gives every point 3:1 on the light plotting area, its light colours included, and sets touching points
# apart.
RIM = colour("dark")
KIND_SYMBOLS = {"encoder": "circle", "decoder": "square", "cross": "diamond"}


def head_name(record: dict, language: str = DEFAULT_LANGUAGE) -> str:
    """ "Encoder L5 H3" in the reader's words."""
    kinds = words(language, "atlas.kind")
    return f"{kinds[record['kind']]} L{record['layer']} H{record['head']}"


def group_name(group: str, language: str = DEFAULT_LANGUAGE) -> str:
    """A group key in the reader's words (``syntax:nsubj`` → "syntax: nsubj")."""
    names = words(language, "atlas.group")
    family, _, relation = group.partition(":")
    return f"{names[family]}: {relation}" if relation else names[family]


def atlas_map(records: Sequence[dict], selected: int | None, title: str, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """One trace per group (its legend entry), points shaped by kind (a second legend group keys the shapes); each
    point's ``customdata`` is its record's index, so a click names the head."""
    traces = []
    for family in GROUP_KEYS:
        members = [i for i, record in enumerate(records) if group_key(record["cluster"]) == family]
        if not members:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [records[i]["x"] for i in members],
                "y": [records[i]["y"] for i in members],
                "customdata": members,
                "name": safe_label(f"{words(language, 'atlas.group')[family]} ({len(members)})"),
                "marker": {
                    "size": 11,
                    "color": GROUP_COLOURS[family],
                    "symbol": [KIND_SYMBOLS[records[i]["kind"]] for i in members],
                    "line": {"width": 0.75, "color": RIM},
                },
                "hovertext": [
                    safe_label(f"{head_name(records[i], language)} · {group_name(records[i]['cluster'], language)}")
                    for i in members
                ],
                "hoverinfo": "text",
            }
        )
    # The shapes' key: which kind of attention each marker shape is (the colours' key is the groups above).
    kinds = words(language, "atlas.kind")
    for kind, symbol in KIND_SYMBOLS.items():
        if any(record["kind"] == kind for record in records):
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [None],
                    "y": [None],
                    "marker": {
                        "size": 11,
                        "color": colour("white"),
                        "symbol": symbol,
                        "line": {"width": 1, "color": RIM},
                    },
                    "name": safe_label(kinds[kind]),
                    "legendgroup": "shapes",
                    "legendgrouptitle": {"text": safe_label(words(language, "atlas")["shapes"])},
                    "hoverinfo": "skip",
                }
            )
    if selected is not None:
        chosen = records[selected]
        related = [
            index
            for index, record in enumerate(records)
            if [record["kind"], record["layer"], record["head"]] in chosen.get("related", [])
        ]
        for index in related:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [chosen["x"], records[index]["x"]],
                    "y": [chosen["y"], records[index]["y"]],
                    "line": {"color": colour("rule"), "width": 1},
                    "hoverinfo": "skip",
                    "showlegend": False,
                }
            )
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [chosen["x"]],
                "y": [chosen["y"]],
                "marker": {"size": 22, "color": "rgba(0, 0, 0, 0)", "line": {"width": 2.5, "color": colour("ink")}},
                "name": safe_label(head_name(chosen, language)),
                "hoverinfo": "skip",
            }
        )
    hidden = {"showticklabels": False, "zeroline": False, "showgrid": False, "title": {"text": ""}}
    layout = {
        **base_layout(top=40),
        "title": {"text": safe_label(title), "x": 0.5, "xanchor": "center"},
        "height": 520,
        "xaxis": hidden,
        "yaxis": hidden,
        "plot_bgcolor": colour("canvas"),
        "hovermode": "closest",
        "legend": {"title": {"text": safe_label(words(language, "atlas")["legend"])}},
    }
    return figure(traces, layout)
