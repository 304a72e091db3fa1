"""The figures of the step-by-step attention view (:mod:`transformer.analysis.steps`): every step as matrices with
token rows, its shape in the title and every number on hover; masked cells drawn grey with the word "masked".

Signed values (projections, scores, outputs) use a diverging scale centred on zero; attention weights use the
attention figures' 0–1 scale. The chosen query's row is outlined in every matrix that has one row per query.

Every word a figure shows is a ``plot.*`` message of :mod:`transformer.features.i18n` in the figure's ``language``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer.analysis.steps import HeadSteps, NextTokens
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.plots.attention import ATTENTION_COLOURS, MASK_FILL
from transformer.plots.palettes import colour
from transformer.plots.style import lay_out, safe_label

SIGNED_COLOURS = "RdBu_r"
HIGHLIGHT = colour("red")
BAR = colour("blue")  # a bar that is not highlighted
# The query's row is outlined in the highlight on the weights' light-to-dark blues; on a diverging scale, whose red end
# it would vanish into, in black (which stays apart from both ends for every reader, a dark grey does not).
SIGNED_OUTLINE = colour("black")
ROW_HEIGHT = 22


Text = Mapping[str, str]


def say(text: Text, key: str, **values: object) -> str:
    return text[key].format(**values) if values else text[key]


def position_labels(tokens: Sequence[str]) -> list[str]:
    # Positions make repeated tokens distinct rows (plotly merges equal category labels).
    return [f"{index}: {safe_label(token)}" for index, token in enumerate(tokens)]


def _height(rows: int, extra: int = 150) -> int:
    return max(260, min(900, rows * ROW_HEIGHT + extra))


def _signed_range(*matrices: np.ndarray) -> float:
    values = np.concatenate([m[np.isfinite(m)].ravel() for m in matrices if m is not None])
    return float(np.abs(values).max()) if values.size and np.abs(values).max() > 0 else 1.0


def _heatmap(
    matrix: np.ndarray,
    rows: Sequence[str],
    columns: Sequence[str] | None,
    signed: bool,
    bound: float,
    name: str,
    text: Text,
    show_scale: bool = True,
) -> go.Heatmap:
    finite = np.where(np.isfinite(matrix), matrix, np.nan)
    cells = np.where(np.isneginf(matrix), text["masked_cell"], np.char.mod("%.4f", np.nan_to_num(matrix, neginf=0.0)))
    return go.Heatmap(
        z=finite,
        x=list(columns) if columns is not None else None,
        y=list(rows),
        customdata=cells,
        colorscale=SIGNED_COLOURS if signed else ATTENTION_COLOURS,
        zmin=-bound if signed else 0.0,
        zmax=bound,
        zmid=0.0 if signed else None,
        showscale=show_scale,
        name=name,
        hovertemplate=f"{name}<br>{text['row']} %{{y}}<br>{text['column']} %{{x}}<br>%{{customdata}}<extra></extra>",
        hoverongaps=True,
    )


def _mark_row(
    fig: go.Figure, row: int | None, columns: int, subplot: tuple[int, int] | None = None, signed: bool = True
) -> None:
    if row is None:
        return
    where = {"row": subplot[0], "col": subplot[1]} if subplot else {}
    fig.add_shape(
        type="rect",
        x0=-0.5,
        x1=columns - 0.5,
        y0=row - 0.5,
        y1=row + 0.5,
        line={"color": SIGNED_OUTLINE if signed else HIGHLIGHT, "width": 2.5},
        fillcolor="rgba(0,0,0,0)",
        **where,
    )


def _layout(fig: go.Figure, title: str, rows: int, masked: bool = False) -> go.Figure:
    background = MASK_FILL if masked else colour("white")  # masked cells are gaps: they show the background
    lay_out(fig, safe_label(title), _height(rows), top=70, bottom=40, plot_bgcolor=background)
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def matrix_figure(
    matrix: np.ndarray,
    rows: Sequence[str],
    columns: Sequence[str] | None,
    title: str,
    name: str,
    text: Text,
    query: int | None = None,
    signed: bool = True,
) -> go.Figure:
    """One matrix with token rows (and token or dimension columns), its shape in the title."""
    columns_shown = list(columns) if columns is not None else [str(i) for i in range(matrix.shape[1])]
    bound = _signed_range(matrix) if signed else 1.0
    fig = go.Figure(_heatmap(matrix, rows, columns_shown, signed, bound, name, text))
    _mark_row(fig, query, matrix.shape[1], signed=signed)
    fig.update_xaxes(type="category", tickangle=-45 if columns is not None else 0, nticks=None if columns else 16)
    masked = bool(np.isneginf(matrix).any())
    return _layout(fig, f"{title}  [{matrix.shape[0]} × {matrix.shape[1]}]", matrix.shape[0], masked)


def side_by_side(
    matrices: Sequence[tuple[str, np.ndarray]],
    rows: Sequence[str] | Sequence[Sequence[str]],
    title: str,
    text: Text,
    query: int | None = None,
) -> go.Figure:
    """Several matrices in a row (e.g. Q, K, V), one colour scale, shapes in the panel titles. ``rows`` is one
    token list for all panels, or one per panel (keys and values may have other rows than the queries); panels
    with the same rows share their row labels, and the query's row is outlined in each panel that has it."""
    per_panel = [list(rows)] * len(matrices) if isinstance(rows[0], str) else [list(r) for r in rows]
    shared = all(panel == per_panel[0] for panel in per_panel)
    fig = make_subplots(
        rows=1,
        cols=len(matrices),
        horizontal_spacing=0.03 if shared else 0.12,
        shared_yaxes=shared,
        subplot_titles=[f"{safe_label(name)} [{m.shape[0]} × {m.shape[1]}]" for name, m in matrices],
    )
    bound = _signed_range(*(m for _, m in matrices))
    for index, ((name, matrix), labels) in enumerate(zip(matrices, per_panel, strict=True), start=1):
        columns = [str(i) for i in range(matrix.shape[1])]
        trace = _heatmap(matrix, position_labels(labels), columns, True, bound, name, text, show_scale=index == 1)
        fig.add_trace(trace, 1, index)
        if labels == per_panel[0]:
            _mark_row(fig, query, matrix.shape[1], (1, index))
    fig.update_xaxes(type="category", nticks=8)
    return _layout(fig, title, max(m.shape[0] for _, m in matrices))


def head_name(text: Text, steps: HeadSteps) -> str:
    return say(text, "head_of_layer", layer=steps.layer + 1, head=steps.head + 1)


def step_figure(steps: HeadSteps, key: str, query: int, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The figure of one step (``key`` of :data:`~transformer.analysis.steps.STEPS`) for the chosen query row."""
    text = words(language, "plot")
    queries, keys = position_labels(steps.query_tokens), position_labels(steps.key_tokens)
    head = head_name(text, steps)
    if key == "x":
        panels = [("X", steps.x)]
        if steps.embedding is not None:
            panels = [(text["embedding"], steps.embedding), ("PE", steps.positional), (text["x_sum"], steps.x)]
        elif steps.memory is not None:
            panels = [(text["x_decoder"], steps.x), (text["memory"], steps.memory)]
        rows = [steps.query_tokens] * len(panels)
        if steps.memory is not None:
            rows = [steps.query_tokens, steps.key_tokens]
        return side_by_side(panels, rows, say(text, "input_rows", head=head), text, query)
    if key == "qkv":
        rows = [steps.query_tokens, steps.key_tokens, steps.key_tokens]
        panels = [("Q", steps.q), ("K", steps.k), ("V", steps.v)]
        return side_by_side(panels, rows, say(text, "qkv", head=head), text, query)
    if key in ("scores", "scaled", "masked"):
        name = text[key]
        return matrix_figure(getattr(steps, key), queries, keys, f"{name}, {head}", name, text, query)
    if key == "weights":
        title = say(text, "weights_title", head=head)
        return matrix_figure(steps.weights, queries, keys, title, text["weight"], text, query, signed=False)
    if key == "head_output":
        title = say(text, "head_output_title", head=head)
        return matrix_figure(steps.head_output, queries, None, title, text["head_output"], text, query)
    if key == "concatenated":
        fig = matrix_figure(
            steps.concatenated, queries, None, text["concatenated_title"], text["concatenation"], text, query
        )
        columns = steps.head_columns
        fig.add_shape(
            type="rect",
            x0=columns.start - 0.5,
            x1=columns.stop - 0.5,
            y0=-0.5,
            y1=len(queries) - 0.5,
            line={"color": SIGNED_OUTLINE, "width": 2, "dash": "dot"},
        )
        return fig
    if key in ("projected", "residual", "output"):
        return matrix_figure(getattr(steps, key), queries, None, text[key], key, text, query)
    raise ValueError(f"unknown step {key!r}")


def query_row_figure(steps: HeadSteps, query: int, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The chosen query's row through scaling, masking and softmax, as bars over the keys."""
    text = words(language, "plot")
    keys = position_labels(steps.key_tokens)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(text["row_scores"], text["row_weights"]))
    scaled = np.where(steps.mask[query], steps.scaled[query], np.nan)
    for column, (values, shade, name) in enumerate(
        ((scaled, BAR, text["scaled_score"]), (steps.weights[query], HIGHLIGHT, text["weight"])), 1
    ):
        bars = go.Bar(x=keys, y=values, marker_color=shade, name=name, hovertemplate="%{x}: %{y:.4f}<extra></extra>")
        fig.add_trace(bars, 1, column)
    title = say(text, "query_row", token=safe_label(steps.query_tokens[query]))
    lay_out(fig, title, 330, top=70, bottom=40, showlegend=False)
    fig.update_xaxes(type="category", tickangle=-45)
    return fig


# ------------------------------------------------------------------------------------------------ multi-head
def multihead_figure(weights: np.ndarray, steps: HeadSteps, query: int, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """One query in all heads of a layer: each head's weights over the keys (``weights`` [H, queries, keys] of the
    layer), then the heads' outputs for that query joined into one row of width d_model."""
    text = words(language, "plot")
    heads = weights.shape[0]
    columns = min(heads, 4)
    grid = -(-heads // columns)
    fig = make_subplots(
        rows=grid + 1,
        cols=columns,
        vertical_spacing=0.22 / grid,
        horizontal_spacing=0.04,
        row_heights=[1.0] * grid + [0.45],
        specs=[[{}] * columns] * grid + [[{"colspan": columns}] + [None] * (columns - 1)],
        subplot_titles=[say(text, "head_number", head=h + 1) for h in range(heads)]
        + [""] * (grid * columns - heads)
        + [text["concat_query"]],
    )
    keys = position_labels(steps.key_tokens)
    for h in range(heads):
        colour = HIGHLIGHT if h == steps.head else BAR
        label = say(text, "head_number", head=h + 1)
        fig.add_trace(
            go.Bar(
                x=keys,
                y=weights[h, query],
                marker_color=colour,
                showlegend=False,
                hovertemplate=f"{label}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
            ),
            h // columns + 1,
            h % columns + 1,
        )
    fig.update_yaxes(range=[0, 1])
    row = steps.concatenated[query][None, :]
    bound = _signed_range(row)
    owner = np.arange(row.shape[1])[None] // steps.d_k + 1
    fig.add_trace(
        go.Heatmap(
            z=row,
            colorscale=SIGNED_COLOURS,
            zmin=-bound,
            zmax=bound,
            zmid=0,
            showscale=False,
            customdata=owner,
            hovertemplate=f"{text['dimension']} %{{x}} ({text['head_word']} "
            "%{customdata})<br>%{z:.4f}<extra></extra>",
        ),
        grid + 1,
        1,
    )
    for h in range(1, heads):
        fig.add_vline(x=h * steps.d_k - 0.5, line={"color": SIGNED_OUTLINE, "width": 1}, row=grid + 1, col=1)
    fig.update_yaxes(showticklabels=False, row=grid + 1, col=1, range=None)
    fig.update_xaxes(tickangle=-45, showticklabels=len(keys) <= 24)
    title = say(
        text,
        "multihead_title",
        token=safe_label(steps.query_tokens[query]),
        layer=steps.layer + 1,
        kind=text[f"kind_{steps.kind}"],
    )
    return lay_out(fig, title, 340 * grid + 240, top=80, bottom=40)


# ------------------------------------------------------------------------------------------------ decoding
def decoding_figure(
    decoder_row: np.ndarray,
    cross_row: np.ndarray,
    source_tokens: Sequence[str],
    upcoming: NextTokens,
    t: int,
    layer: int,
    head: int,
    language: str = DEFAULT_LANGUAGE,
) -> go.Figure:
    """Decoder position ``t``: its masked self-attention row (later positions masked), its cross-attention row, and
    the model's most probable next pieces with the one the search kept marked."""
    text = words(language, "plot")
    reads = position_labels(upcoming.position_tokens)
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.07,
        subplot_titles=(
            text["decoder_row"],
            text["cross_row"],
            text["next_piece"],
        ),
    )
    visible = np.where(np.arange(len(reads)) <= t, decoder_row, np.nan)
    fig.add_trace(_bars(reads, visible), 1, 1)
    future = [reads[i] for i in range(t + 1, len(reads))]
    if future:
        masked = go.Bar(
            x=future,
            y=[1.0] * len(future),
            marker_color=MASK_FILL,
            opacity=0.5,
            name=text["masked_legend"],
            hovertemplate=f"%{{x}}: {text['masked_future']}<extra></extra>",
        )
        fig.add_trace(masked, 1, 1)
    fig.add_trace(_bars(position_labels(source_tokens), cross_row), 1, 2)
    candidates = [safe_label(token) for token in upcoming.top_tokens[t]]
    chosen = safe_label(upcoming.chosen[t])
    probabilities = list(upcoming.top_probabilities[t])
    if chosen not in candidates:  # the search kept a piece outside the top k: show it too
        candidates.append(chosen)
        probabilities.append(float(upcoming.chosen_probability[t]))
    fig.add_trace(
        _bars(candidates, probabilities, [HIGHLIGHT if token == chosen else BAR for token in candidates]), 1, 3
    )
    fig.update_yaxes(range=[0, 1])
    fig.update_xaxes(type="category", tickangle=-45)
    title = say(
        text,
        "decoding_title",
        t=t,
        reads=safe_label(upcoming.position_tokens[t]),
        writes=chosen,
        p=float(upcoming.chosen_probability[t]),
        rank=int(upcoming.chosen_rank[t]),
        head=say(text, "head_of_layer", layer=layer + 1, head=head + 1),
    )
    return lay_out(fig, title, 420, top=90, bottom=40, legend_y=-0.35, barmode="overlay")


def _bars(labels: Sequence[str], values, colours: str | list[str] = BAR) -> go.Bar:
    return go.Bar(
        x=labels, y=values, marker_color=colours, showlegend=False, hovertemplate="%{x}: %{y:.3f}<extra></extra>"
    )
