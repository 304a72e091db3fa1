"""Figures of the what-if views: the beam search's tree, per-token probabilities, the BLEU curve as heads are
switched off, and the difference of two attention maps. Tokens go through :func:`safe_label` (user text)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.analysis.beam import BeamTree, TokenProbability
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.paper.tokenizer import readable_piece
from transformer.plots.attention import heatmap_height
from transformer.plots.palettes import colour
from transformer.plots.style import lay_out, safe_label, token_ticks

# Finished hypotheses are orange (they were green, which a deuteranope sees as the red of the chosen path); pruned
# ones deliberately faint.
STATUS_COLOURS = {
    "root": colour("dark"),
    "kept": colour("mark_blue"),
    "finished": colour("orange"),
    "pruned": colour("faint"),
}
CHOSEN = colour("mark_red")
EDGE = colour("rule")  # the edges off the chosen path
RIM = colour("white")


def _tree_columns(tree: BeamTree) -> dict[int, int]:
    """A column for each node: children sit in their parents' order, better hypotheses first, so branches do not
    cross."""
    columns: dict[int, int] = {0: 0}
    for step in range(1, tree.steps() + 1):
        nodes = [node for node in tree.nodes if node.step == step]
        nodes.sort(key=lambda node: (columns[node.parent], -node.log_prob))
        for index, node in enumerate(nodes):
            columns[node.id] = index
    return columns


TREE_WIDTH = 800  # px of plotting area the tree's labels are fitted to (a 1280 px window's main column)
STEP_HEIGHT = 24  # px between output steps: one line of label text


def _fitted(label: str, characters: int) -> str:
    return label if len(label) <= characters else label[: max(1, characters - 1)] + "…"


def beam_tree(
    tree: BeamTree, pieces: Sequence[str], chosen: int | None = None, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """The search tree, read top to bottom: one row per output step, every hypothesis the search weighed as a node
    labelled with its piece (``pieces[node.id]``), joined to the hypothesis it extends; kept, finished and pruned
    (grey) nodes in their own colours, the path to ``chosen`` drawn in red. Hover: the whole piece, log-probability
    and normalised score.

    Steps run down the page and the hypotheses of a step across it, so a long translation makes the tree taller,
    not its labels narrower: a step holds at most twice the beam, and each label is shortened (with "…") to the
    width of its column."""
    text = words(language, "plot_whatif")
    columns = _tree_columns(tree)
    on_path = {node.id for node in tree.path(chosen)} | {0} if chosen is not None else set()
    width = max(columns.values()) + 1
    characters = max(3, int(TREE_WIDTH / width / 7.5) - 2)  # ~7.5 px per character at the figure's font size
    fig = go.Figure()
    for highlighted in (False, True):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for node in tree.nodes[1:]:
            if (node.id in on_path) == highlighted:
                xs += [columns[node.parent], columns[node.id], None]
                ys += [tree.nodes[node.parent].step, node.step, None]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line={"color": CHOSEN if highlighted else EDGE, "width": 3 if highlighted else 1},
            )
        )
    for status in ("root", "kept", "finished", "pruned"):
        nodes = [node for node in tree.nodes if node.status == status]
        if not nodes:
            continue
        fig.add_trace(
            go.Scatter(
                x=[columns[node.id] for node in nodes],
                y=[node.step for node in nodes],
                mode="markers+text",
                name=text[f"status_{status}"],
                text=[_fitted(safe_label(pieces[node.id]), characters) for node in nodes],
                textposition="middle right",
                textfont={"color": colour("faint_text") if status == "pruned" else colour("ink")},
                marker={
                    "color": STATUS_COLOURS[status],
                    "size": 9,
                    "symbol": "diamond" if status == "finished" else "circle",
                    # a white rim sets touching nodes apart; on the chosen path, a red one
                    "line": {"color": [CHOSEN if node.id in on_path else RIM for node in nodes], "width": 2},
                },
                customdata=[[safe_label(pieces[node.id]), node.log_prob, node.score, node.id] for node in nodes],
                hovertemplate=f"%{{customdata[0]}}<br>{text['log_prob']}: %{{customdata[1]:.3f}}<br>"
                f"{text['score']}: %{{customdata[2]:.3f}}<extra>#%{{customdata[3]}}</extra>",
            )
        )
    steps = tree.steps()
    fig.update_yaxes(
        title_text=text["step"],
        dtick=1 if steps <= 40 else 5,
        showgrid=False,
        zeroline=False,
        range=[steps + 0.6, -0.6],
        fixedrange=True,
    )
    # Each column is as wide as the space its label was shortened to; the last label needs that space too.
    fig.update_xaxes(visible=False, range=[-0.3, width], fixedrange=True)
    legend = {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"}
    height = STEP_HEIGHT * (steps + 1) + 150
    return lay_out(fig, text["tree_title"], height, top=70, plot_bgcolor=colour("white"), legend=legend)


def token_probabilities(
    series: dict[str, Sequence[TokenProbability]], title: str, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """Each output token's probability, one bar series per output (e.g. the given translation and the model's),
    the pieces under the bars and the most probable alternatives on hover."""
    text = words(language, "plot_whatif")
    fig = go.Figure()
    for name, tokens in series.items():
        alternatives = [
            "<br>".join(f"{safe_label(readable_piece(piece))} {probability:.3f}" for piece, probability in token.top)
            for token in tokens
        ]
        fig.add_trace(
            go.Bar(
                x=[f"{token.position + 1}. {safe_label(readable_piece(token.piece))}" for token in tokens],
                y=[token.probability for token in tokens],
                name=safe_label(name),
                customdata=[[token.rank, alternatives[i]] for i, token in enumerate(tokens)],
                hovertemplate=f"%{{x}}: %{{y:.3f}} ({text['rank']} %{{customdata[0]}})<br>{text['alternatives']}:"
                f"<br>%{{customdata[1]}}<extra>%{{fullData.name}}</extra>",
            )
        )
    fig.update_yaxes(range=[0, 1], title_text=text["probability"])
    fig.update_xaxes(tickangle=-60, automargin=True, type="category")
    return lay_out(fig, safe_label(title), 380, barmode="group", plot_bgcolor=colour("white"))


def prune_curve(curve: Sequence[dict], intact_bleu: float, total: int, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """BLEU (and chrF) as the k least important heads are switched off together, with the intact model's BLEU
    and the 1-BLEU band below it."""
    text = words(language, "plot_whatif")
    counts = [point["heads_off"] for point in curve]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=counts, y=[point["bleu"] for point in curve], mode="lines+markers", name="BLEU"))
    fig.add_trace(
        go.Scatter(
            x=counts, y=[point["chrf"] for point in curve], mode="lines+markers", name="chrF", line={"dash": "dot"}
        )
    )
    fig.add_hrect(y0=intact_bleu - 1.0, y1=intact_bleu, fillcolor=colour("mark_green"), opacity=0.15, line_width=0)
    fig.update_xaxes(title_text=text["heads_off"].format(total=total), range=[0, total])
    fig.update_yaxes(title_text=text["score_axis"], rangemode="tozero")
    return lay_out(fig, text["prune_title"], 380, plot_bgcolor=colour("white"))


def difference_heatmap(
    matrix: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """A difference of two attention maps on a diverging scale centred on 0 (red: more on the left side)."""
    text = words(language, "plot_whatif")
    matrix = np.asarray(matrix, dtype=float)
    largest = float(np.abs(matrix).max()) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=np.arange(matrix.shape[1]),
            y=np.arange(matrix.shape[0]),
            colorscale="RdBu_r",
            zmin=-largest,
            zmax=largest,
            colorbar={"title": {"text": text["difference"]}, "thickness": 14},
            hovertemplate=f"{text['difference']}: %{{z:+.3f}}<extra></extra>",
        )
    )
    fig.update_xaxes(**token_ticks(key_tokens), tickangle=-60, automargin=True, showgrid=False, zeroline=False)
    fig.update_yaxes(**token_ticks(query_tokens), autorange="reversed", automargin=True, showgrid=False, zeroline=False)
    return lay_out(fig, safe_label(title), heatmap_height(len(query_tokens)), plot_bgcolor=colour("white"))


DIFF_STYLES = {
    "same": "",
    "removed": "background:#fde0e0;text-decoration:line-through;color:#a00",
    "added": "background:#dcf5dc;color:#060",
}


def diff_html(segments: Sequence[tuple[str, str]], titles: dict[str, str]) -> str:
    """A translation diff (:func:`transformer.analysis.ablation.word_diff`) as HTML: words lost struck through in
    red, words gained in green, ``titles`` as their tooltips. Every word is escaped: it is model output."""
    parts = [
        f'<span style="{DIFF_STYLES[change]}" title="{html.escape(titles.get(change, ""))}">{html.escape(words)}</span>'
        for change, words in segments
    ]
    return f'<div style="font-size:1.25rem;font-weight:600">{" ".join(parts) or "∅"}</div>'
