"""The paper's attention figures (appendix Figures 3–5) drawn in the paper's style, for any checkpoint. What is
measured, and how each figure's heads are chosen: :mod:`transformer.analysis.figures`.

``python -m transformer paper_figures --checkpoint DIR --out DIR`` writes the three figures as standalone HTML (and
PNG when a Chromium is installed) plus ``metrics.json`` with every number the figures page shows
(:mod:`transformer.cli.paper_figures`).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import plotly.graph_objects as go

from transformer.analysis.figures import (
    FIGURES,
    SentenceAttention,
    anaphora_heads,
    figure_metrics,
    label,
    making_heads,
    paper_heads,
    paper_layer,
    query_position,
    sentence_attention,
)
from transformer.features.i18n import DEFAULT_LANGUAGE, message
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots.attention import token_lines
from transformer.search.decode import translate


# ------------------------------------------------------------------------------------------------ the figures
def _drawer(attention: SentenceAttention, layer: int, first: int, language: str, view: dict) -> Callable:
    """Draws heads of ``layer`` on the sentence (its tokens labelled) in the paper's style: ``draw(heads, title)``
    every query's attentions (``heads`` None = all), ``draw(heads, title, word)`` only those of ``word``."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)

    def draw(heads: Sequence[int] | None, title: str, word: str | None = None) -> go.Figure:
        return token_lines(
            weights[layer],
            tokens,
            tokens,
            heads=None if heads is None else list(heads),
            query_index=None if word is None else query_position(tokens, word),
            title=title,
            first=first,
            language=language,
        )

    return draw


def figure_3(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int] | None = None,
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> go.Figure:
    """Only the attentions of "making", for ``heads`` (None = all heads of the layer)."""
    draw = _drawer(attention, layer, first, language, view)
    return draw(heads, message(language, "plot_paper.figure3", layer=layer + first), "making")


def figure_4(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int],
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> tuple[go.Figure, go.Figure]:
    """Top: the full pattern of ``heads[0]``; bottom: only "its", for ``heads`` (two heads in the paper)."""
    draw = _drawer(attention, layer, first, language, view)
    names = ", ".join(str(head + first) for head in heads)
    top = message(language, "plot_paper.figure4_top", layer=layer + first, head=heads[0] + first)
    bottom = message(language, "plot_paper.figure4_bottom", layer=layer + first, heads=names)
    return draw([heads[0]], top), draw(heads, bottom, "its")


def figure_5(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int],
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> list[go.Figure]:
    """The full patterns of ``heads``, one panel each."""
    draw = _drawer(attention, layer, first, language, view)
    return [
        draw([head], message(language, "plot_paper.figure5", layer=layer + first, head=head + first)) for head in heads
    ]


def paper_figures(loaded: LoadedCheckpoint, one_based: bool = True) -> tuple[dict[str, go.Figure], dict]:
    """The three figures on the paper's layer (heads chosen as the module docstring says) and all the numbers."""
    attention = {number: sentence_attention(loaded, figure) for number, figure in FIGURES.items()}
    metrics = figure_metrics(attention)
    config = loaded.config
    layer = paper_layer(config.encoder_layers, one_based)
    figures: dict[str, go.Figure] = {}
    making = metrics["figure_3"]
    chosen_making = making_heads(making, layer) if "error" not in making else []
    figures["figure_3"] = figure_3(attention[3], layer, chosen_making or None)
    its = metrics["figure_4"]
    chosen_its = anaphora_heads(its, layer) if "error" not in its else paper_heads(config.num_heads, one_based)
    figures["figure_4_top"], figures["figure_4_bottom"] = figure_4(attention[4], layer, chosen_its)
    chosen_structure = metrics["figure_5"]["structure_heads_per_layer"][layer]
    figures["figure_5_a"], figures["figure_5_b"] = figure_5(attention[5], layer, chosen_structure)
    translations = translate(loaded.model, loaded.tokenizer, [FIGURES[3].sentence, FIGURES[4].sentence])
    metrics["drawn"] = {
        "layer": layer,
        "layer_numbering": "1-based" if one_based else "0-based",
        "figure_3_heads": chosen_making,
        "figure_4_heads": chosen_its,
        "figure_5_heads": chosen_structure,
        "note": "layer and head indices in this file are 0-based; figure titles count from 1",
    }
    metrics["translations"] = {
        str(number): {"source": figure.sentence, "ours": translation, "reference": figure.reference}
        for (number, figure), translation in zip([(3, FIGURES[3]), (4, FIGURES[4])], translations, strict=True)
    }
    return figures, metrics


def figure_page(number: int, panels: Sequence[go.Figure], summary: str) -> str:
    """One standalone HTML page (plotly.js inline, no network) with a paper figure's panels and caption."""
    figure = FIGURES[number]
    config = {"displaylogo": False, "displayModeBar": False}
    parts = [
        panel.to_html(full_html=False, include_plotlyjs=index == 0, config=config) for index, panel in enumerate(panels)
    ]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>Figure {number}: {html.escape(figure.title)}</title>"
        "<style>body{font-family:sans-serif;max-width:960px;margin:1em auto;color:#222}"
        "figcaption{margin:0.5em 0 1.5em;color:#444}</style></head><body>"
        f"<h2>Figure {number}: {html.escape(figure.title)}</h2>"
        + "".join(parts)
        + f"<figcaption><b>Paper:</b> {html.escape(figure.caption)}<br><b>This model:</b> {html.escape(summary)}"
        "</figcaption></body></html>"
    )
