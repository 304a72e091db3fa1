"""A word alignment drawn between the two sentences: English words down the left, German words down the right, one
line per link, darker for more attention (:mod:`transformer.analysis.word_alignment`). Words can carry a measure of
their own (shown on hover) and a warning mark: an English word the translation may have left out, a German word the
source may not support (:mod:`transformer.analysis.omissions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

from transformer.features.i18n import DEFAULT_LANGUAGE, message
from transformer.plots.colours import translucent
from transformer.plots.palettes import colour
from transformer.plots.style import base_layout, figure, safe_label

ROW = 26  # pixels per word of the longer sentence
LINK_COLOUR = colour("mark_blue")  # drawn translucent: the weaker the link, the fainter its line
WARNING_COLOUR = colour("mark_red")
LINKED_TEXT, UNLINKED_TEXT = colour("ink"), colour("muted")  # unlinked words are set back, yet still read (4.5:1)
LINKED_MARK, UNLINKED_MARK = colour("mark_blue"), colour("faint")


@dataclass
class Marks:
    """What one sentence's words carry besides their links: a note per word (shown on hover; None: nothing
    measured), the words to mark, and what a mark means (the legend's entry)."""

    notes: list[str | None] = field(default_factory=list)
    flagged: set[int] = field(default_factory=set)
    meaning: str = ""


def _words(side: float, words: Sequence[str], position: str, linked: set[int], marks: Marks) -> dict:
    def shade(i: int, linked_colour: str, unlinked: str) -> str:
        return WARNING_COLOUR if i in marks.flagged else linked_colour if i in linked else unlinked

    notes = marks.notes or [None] * len(words)
    return {
        "type": "scatter",
        "x": [side] * len(words),
        "y": [-i for i in range(len(words))],
        "mode": "markers+text",
        "text": [safe_label(word) for word in words],
        "textposition": position,
        "textfont": {"size": 14, "color": [shade(i, LINKED_TEXT, UNLINKED_TEXT) for i in range(len(words))]},
        "marker": {
            "size": [12 if i in marks.flagged else 7 for i in range(len(words))],
            "symbol": ["diamond" if i in marks.flagged else "circle" for i in range(len(words))],
            "color": [shade(i, LINKED_MARK, UNLINKED_MARK) for i in range(len(words))],
        },
        "hovertext": [safe_label(f"{word}: {note}" if note else word) for word, note in zip(words, notes, strict=True)],
        "hoverinfo": "text",
        "showlegend": False,
        "cliponaxis": False,
    }


def _legend_entry(marks: Marks) -> dict:
    """A legend line naming what the marks mean (no points of its own)."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "marker": {"size": 12, "symbol": "diamond", "color": WARNING_COLOUR},
        "name": safe_label(marks.meaning),
        "showlegend": True,
        "hoverinfo": "skip",
    }


def alignment_figure(
    english: Sequence[str],
    german: Sequence[str],
    links: Sequence[tuple[int, int]],
    scores: np.ndarray,
    title: str,
    language: str = DEFAULT_LANGUAGE,
    english_marks: Marks | None = None,
    german_marks: Marks | None = None,
    compounds: Sequence[tuple[int, int]] = (),
) -> go.Figure:
    """``links`` are (english, german) word positions; ``scores`` [German words, English words] sets each line's
    strength (its share of the strongest link's score). ``compounds``: links for words the reading left unlinked
    (:func:`~transformer.analysis.word_alignment.compound_links`), dashed, with a legend entry. Unlinked words are
    grey; marked words are red diamonds, and each kind of mark in use gets a legend entry."""
    english_marks, german_marks = english_marks or Marks(), german_marks or Marks()
    drawn = [*links, *compounds]
    strongest = max((float(scores[g, e]) for e, g in drawn), default=1.0) or 1.0
    traces = []
    for (e, g), dashed in [*((link, False) for link in links), *((link, True) for link in compounds)]:
        share = float(scores[g, e]) / strongest
        traces.append(
            {
                "type": "scatter",
                "x": [0, 1],
                "y": [-e, -g],
                "mode": "lines",
                "line": {
                    "color": translucent(LINK_COLOUR, round(0.25 + 0.75 * share, 2)),
                    "width": 1.5 + 3 * share,
                    "dash": "dash" if dashed else "solid",
                },
                "hovertemplate": safe_label(
                    message(language, "plot_alignment.hover", english=english[e], german=german[g], weight=scores[g, e])
                )
                + "<extra></extra>",
                "showlegend": False,
            }
        )
    traces.append(_words(0, english, "middle left", {e for e, _ in drawn}, english_marks))
    traces.append(_words(1, german, "middle right", {g for _, g in drawn}, german_marks))
    legend = [_legend_entry(marks) for marks in (english_marks, german_marks) if marks.flagged]
    if compounds:
        legend.append(
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "lines",
                "line": {"color": LINK_COLOUR, "width": 3, "dash": "dash"},
                "name": safe_label(message(language, "plot_alignment.compound")),
                "showlegend": True,
                "hoverinfo": "skip",
            }
        )
    traces += legend
    rows = max(len(english), len(german), 1)
    hidden = {"visible": False, "fixedrange": True}
    below = 10 + 24 * len(legend)  # room for the legend's lines under the sentences
    layout = {
        **base_layout(top=40, bottom=below),
        "title": {"text": safe_label(title), "x": 0.5, "xanchor": "center"},
        "height": 80 + below + ROW * rows,
        "xaxis": {**hidden, "range": [-0.9, 1.9]},
        "yaxis": {**hidden, "range": [-rows + 0.5, 0.6]},
        "plot_bgcolor": colour("white"),
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0.5, "xanchor": "center"},
    }
    return figure(traces, layout)
