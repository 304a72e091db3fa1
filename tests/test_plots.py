"""The plotly figure builders: what a reader of each figure would see, checked on small hand-made arrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from transformer.analysis.logit_lens import LogitLens
from transformer.features.i18n import message
from transformer.formats.runs import read_metrics
from transformer.paper.config import preset
from transformer.paper.model import Transformer
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.paper.schedule import Schedule
from transformer.plots import alignment as plot_alignment
from transformer.plots import atlas as plot_atlas
from transformer.plots import attention as plot_attention
from transformer.plots import grid as plot_grid
from transformer.plots import head_scores as plot_head_scores
from transformer.plots import logit_lens as plot_lens
from transformer.plots import positional as plot_positional
from transformer.plots import style as plot_style
from transformer.plots import training as plot_training

HOSTILE = "</script><b>x</b>&"
HOSTILE_SHOWN = "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;&amp;"  # what plotly then displays as the literal token
TOKENS = ["<s>", "the", HOSTILE, "the", "end"]


def row_normalised(shape: tuple[int, ...], seed: int = 0, causal: bool = False) -> np.ndarray:
    weights = np.random.default_rng(seed).random(shape)
    if causal:
        weights = np.tril(weights)
    return weights / weights.sum(-1, keepdims=True)


def heatmaps(fig: go.Figure) -> list[go.Heatmap]:
    return [trace for trace in fig.data if isinstance(trace, go.Heatmap)]


def inside(polygon_x: list[float], polygon_y: list[float], x: float, y: float) -> bool:
    """Ray casting: is (x, y) inside the closed polygon?"""
    crossings = 0
    corners = list(zip(polygon_x, polygon_y, strict=True))
    for (x1, y1), (x2, y2) in zip(corners, corners[1:] + corners[:1], strict=True):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            crossings += 1
    return crossings % 2 == 1


def test_safe_label_shows_markup_literally():
    assert plot_style.safe_label(HOSTILE) == HOSTILE_SHOWN
    assert plot_style.safe_label("▁Haus") == "▁Haus"


def test_heatmap_has_the_matrix_shape_and_one_tick_per_token():
    matrix = row_normalised((5, 3))
    keys = ["a", "b", "a"]
    fig = plot_attention.attention_heatmap(matrix, TOKENS, keys, "encoder L1 H1")
    (heatmap,) = heatmaps(fig)
    assert np.asarray(heatmap.z).shape == (5, 3)
    assert np.allclose(heatmap.z, matrix)
    # Repeated tokens ("the", "a") keep their own rows and columns.
    assert list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "the", HOSTILE_SHOWN, "the", "end"]
    assert list(fig.layout.xaxis.ticktext) == keys
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3, 4]
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top
    assert fig.layout.title.text == "encoder L1 H1"
    # Hover names the query, the key and the weight of the cell.
    assert heatmap.customdata[3][2] == f"query: the<br>key: a<br>weight: {matrix[3, 2]:.3f}"
    assert heatmap.customdata[2][0] == f"query: {HOSTILE_SHOWN}<br>key: a<br>weight: {matrix[2, 0]:.3f}"
    assert heatmap.hovertemplate.startswith("%{customdata}")


def test_label_widths_follow_the_letters():
    width = plot_style.label_width
    assert width("WWW", 12) > 2 * width("iii", 12)
    assert width("Ärger", 12) == width("Arger", 12)  # an accent does not widen its letter
    assert width("&lt;/s&gt;", 12) == width("</s>", 12)  # measured as shown, not as escaped
    assert width("日本", 10) >= 2 * 10  # a CJK character is about one em
    assert width("Haus", 20) == pytest.approx(width("Haus", 10) * 2)


def test_heatmap_margins_make_room_for_its_longest_labels():
    def margin(queries: list[str], keys: list[str]):
        return plot_attention.attention_heatmap(np.full((2, 2), 0.5), queries, keys, "t").layout.margin

    short, long_queries = margin(["a", "b"], ["c", "d"]), margin(["a", "▁Donaudampfschiff"], ["c", "d"])
    long_keys = margin(["a", "b"], ["c", "▁Donaudampfschiff"])
    extra = plot_style.label_width("▁Donaudampfschiff", 12) - plot_style.label_width("b", 12)
    assert long_queries.l - short.l >= extra and long_queries.b == short.b
    assert long_keys.b - short.b >= extra * 0.86 and long_keys.l == short.l  # keys are slanted by 60°


def test_causal_heatmap_masks_the_future_instead_of_drawing_zeros():
    matrix = row_normalised((5, 5), causal=True)
    fig = plot_attention.attention_heatmap(matrix, TOKENS, TOKENS, "decoder", causal=True)
    (heatmap,) = heatmaps(fig)
    z = np.asarray(heatmap.z, dtype=float)
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.isnan(z[future]).all()
    assert np.allclose(z[~future], matrix[~future])
    hover = np.array(heatmap.customdata)
    assert all(cell.endswith("weight: masked (future)") for cell in hover[future])
    assert not any("masked" in cell for cell in hover[~future])
    (mask,) = [trace for trace in fig.data if trace.name == "masked (future)"]
    assert mask.fill == "toself" and mask.fillpattern.shape == "/" and mask.showlegend
    # The hatched polygon covers every future cell and no visible one.
    for query in range(5):
        for key in range(5):
            assert inside(list(mask.x), list(mask.y), key, query) == (key > query)


def test_heatmap_colour_scale_is_0_to_1_unless_fitted():
    weak = np.full((4, 4), 0.25) + np.diag([0.05, -0.05, 0.05, -0.05])
    tokens = list("abcd")
    fixed = plot_attention.attention_heatmap(weak, tokens, tokens, "t").data[0]
    fitted = plot_attention.attention_heatmap(weak, tokens, tokens, "t", fitted=True).data[0]
    assert (fixed.zmin, fixed.zmax) == (0.0, 1.0)
    assert fitted.zmax == pytest.approx(0.30)
    grid = plot_grid.model_view_grid(np.tile(weak, (2, 3, 1, 1)), tokens, tokens, "g")
    assert heatmaps(grid)[-1].zmax == 1.0


def test_nearly_uniform_maps_say_so_and_sharp_ones_do_not():
    tokens = [f"t{i}" for i in range(9)]
    flat = np.full((9, 9), 1 / 9) + np.random.default_rng(0).uniform(0, 0.01, (9, 9))
    flat /= flat.sum(-1, keepdims=True)
    note = plot_attention.attention_heatmap(flat, tokens, tokens, "flat").layout.title.subtitle.text
    assert note.startswith("≈ uniform") and "over 9 keys" in note and "(uniform: 0.11)" in note
    sharp = np.eye(9) * 0.9 + 0.1 / 9
    assert not plot_attention.attention_heatmap(sharp, tokens, tokens, "sharp").layout.title.subtitle.text
    # Decoder self-attention: row i sees i + 1 keys; a row spread evenly over what it may see is uniform too.
    causal = np.tril(np.ones((9, 9))) / np.arange(1, 10)[:, None]
    assert "1–9 keys" in plot_attention.uniformity_note(causal, causal=True)
    assert plot_attention.uniformity_note(np.eye(9), causal=True) == ""


def test_model_view_grid_shows_every_layer_and_head_in_its_tile():
    weights = row_normalised((2, 3, 4, 4), causal=True)
    fig = plot_grid.model_view_grid(weights, TOKENS[:4], TOKENS[:4], "decoder", causal=True)
    mask, canvas = heatmaps(fig)
    z = np.asarray(canvas.z, dtype=float)
    assert z.shape == (2 * 5 - 1, 3 * 5 - 1)  # tiles of 4 × 4 with one empty row / column between them
    assert list(fig.layout.xaxis.ticktext) == ["H1", "H2", "H3"] and list(fig.layout.yaxis.ticktext) == ["L1", "L2"]
    last = z[5:9, 10:14]  # layer 2, head 3
    assert np.allclose(last[np.tril_indices(4)], weights[1, 2][np.tril_indices(4)])
    assert np.isnan(last[np.triu_indices(4, k=1)]).all()
    assert np.isnan(z[4]).all() and np.isnan(z[:, 4]).all()  # the gaps stay empty
    # The grey layer covers exactly the masked future cells.
    assert np.array_equal(~np.isnan(np.asarray(mask.z, dtype=float)[5:9, 10:14]), np.triu(np.ones((4, 4)), k=1) > 0)
    (tiles,) = [trace for trace in fig.data if trace.type == "scatter"]
    assert "click to open" in tiles.hovertemplate and "%{customdata[0]}" in tiles.hovertemplate
    # Row and column categories name layer, head and the (escaped) token, and keep repeated tokens apart.
    assert list(canvas.y)[5:9] == [
        "layer 2 · query &lt;s&gt; (0)",
        "layer 2 · query the (1)",
        f"layer 2 · query {HOSTILE_SHOWN} (2)",
        "layer 2 · query the (3)",
    ]
    assert list(canvas.x)[10] == "head 3 · key &lt;s&gt; (0)"


def line_opacity(fig: go.Figure, query: int, key: int, head: int = 0) -> list[float]:
    """Opacities of the traces drawing a line of ``head`` from ``query`` (left) to ``key`` (right)."""
    found = []
    for trace in fig.data:
        if trace.legendgroup != f"head {head}" or trace.x is None or len(trace.x) < 2:
            continue
        ys = list(trace.y)
        for start in range(0, len(ys), 3):
            if ys[start] == query and ys[start + 1] == key:
                found.append(trace.opacity)
    return found


def test_token_lines_follow_the_weights_one_colour_per_head():
    weights = np.zeros((3, 2, 3))
    weights[0, 0] = [0.9, 0.1, 0.0]
    weights[0, 1] = [0.2, 0.2, 0.6]
    weights[2, 0] = [0.0, 0.5, 0.5]
    weights[2, 1] = [1.0, 0.0, 0.0]
    fig = plot_attention.token_lines(weights, ["sie", "geht"], ["she", "goes", "."], heads=[0, 2])
    legend = [trace.name for trace in fig.data if trace.showlegend is not False and trace.name]
    assert legend == ["head 1", "head 3"]
    strong, weak = line_opacity(fig, 0, 0), line_opacity(fig, 0, 1)
    assert len(weak) == 1 and len(strong) == 1 and strong[0] > weak[0]
    assert line_opacity(fig, 0, 2) == []  # weight 0
    assert line_opacity(fig, 0, 2, head=2) == [pytest.approx(0.5)]
    assert line_opacity(fig, 1, 0, head=2) == [pytest.approx(1.0)]
    assert line_opacity(fig, 0, 0, head=1) == []  # head 2 was not chosen
    colours = {head: {trace.line.color for trace in fig.data if trace.legendgroup == f"head {head}"} for head in (0, 2)}
    assert len(colours[0]) == 1 and len(colours[2]) == 1 and colours[0] != colours[2]


def test_token_lines_for_one_query_draw_only_its_lines_and_highlight_it():
    weights = row_normalised((2, 4, 4), seed=3)
    fig = plot_attention.token_lines(weights, TOKENS[:4], TOKENS[:4], query_index=2, title=f"attention of {HOSTILE}")
    assert fig.layout.title.text == f"attention of {HOSTILE_SHOWN}"  # titles quote tokens, so they are escaped too
    queries_drawn = set()
    for trace in fig.data:
        if trace.mode == "lines" and trace.x is not None and len(trace.x) > 1:
            queries_drawn |= set(list(trace.y)[0::3])
    assert queries_drawn == {2}
    left_column = next(trace for trace in fig.data if trace.mode == "text" and trace.textposition == "middle left")
    assert left_column.text[2] == f"<b>{HOSTILE_SHOWN}</b>"  # bold, yet the token itself still escaped
    assert left_column.text[1] == "the"


def test_token_lines_skip_negligible_weights():
    weights = np.full((1, 3, 3), 0.01)
    weights[0, :, 0] = 0.98
    fig = plot_attention.token_lines(weights, ["a", "b", "c"], ["a", "b", "c"])
    assert line_opacity(fig, 1, 2) == []
    assert line_opacity(fig, 1, 0) == [pytest.approx(1.0)]


def test_positional_encoding_heatmap_is_the_model_table():
    model = Transformer(preset("tiny"))
    pe = sinusoidal_positional_encoding(50, model.config.d_model).numpy()
    (heatmap,) = heatmaps(plot_positional.positional_encoding_heatmap(pe))
    assert np.asarray(heatmap.z).shape == (50, model.config.d_model)
    assert np.allclose(heatmap.z, model.positional_encoding[:50].numpy())
    assert np.allclose(np.asarray(heatmap.z)[:, 0], np.sin(np.arange(50)))  # dimension 0: PE(pos, 0) = sin(pos)


def test_sinusoid_curves_and_similarity():
    pe = sinusoidal_positional_encoding(40, 16).numpy()
    curves = plot_positional.sinusoid_curves(pe, [0, 5])
    assert [trace.name.split(" (")[0] for trace in curves.data] == ["dim 0", "dim 5"]
    assert np.allclose(curves.data[1].y, pe[:, 5])
    (similarity,) = heatmaps(plot_positional.position_similarity(pe))
    z = np.asarray(similarity.z)
    assert np.allclose(np.diag(z), 8.0, atol=1e-4)  # ‖PE(pos)‖² = d_model / 2
    assert np.isclose(z[3, 10], z[20, 27], atol=1e-4)  # depends only on the distance


def test_offset_is_a_linear_map_for_sinusoids_but_not_for_noise():
    pe = sinusoidal_positional_encoding(100, 32).numpy()
    fig, stats = plot_positional.offset_linearity(pe, offset=5)
    assert stats["max_residual"] < 1e-3 and stats["rotation_max_residual"] < 1e-5
    assert stats["mean_residual"] <= stats["max_residual"]
    assert len(fig.data) == 2
    noise = np.random.default_rng(0).normal(size=(100, 32))
    _, noise_stats = plot_positional.offset_linearity(noise, offset=5)
    assert noise_stats["max_residual"] > 0.5 and noise_stats["rotation_max_residual"] > 0.5


def test_offset_rotation_is_exact():
    pe = sinusoidal_positional_encoding(30, 8).double().numpy()
    assert np.allclose(pe[:-7] @ plot_positional.offset_rotation(8, 7), pe[7:], atol=1e-6)


def test_embedding_norms_compare_tokens_with_positions():
    torch.manual_seed(0)
    model = Transformer(preset("tiny"))
    fig = plot_positional.embedding_norms(model)
    histogram = next(trace for trace in fig.data if isinstance(trace, go.Histogram))
    assert len(histogram.x) == model.config.vocab_size - 1  # every token but padding
    position_line = next(trace for trace in fig.data if trace.name == "‖PE(pos)‖")
    assert np.allclose(position_line.y, np.sqrt(model.config.d_model / 2), atol=1e-4)


def test_parameter_table_adds_up_to_the_model():
    model = Transformer(preset("tiny"))
    rows = plot_training.parameter_table(model)
    assert rows[-1] == {"component": "total", "parameters": model.num_parameters(), "share": 1.0}
    assert sum(row["parameters"] for row in rows[:-1]) == model.num_parameters()
    by_name = {row["component"]: row["parameters"] for row in rows}
    d_model = model.config.d_model
    attention = model.config.encoder_layers * 4 * (d_model * d_model + d_model)
    assert by_name["encoder self-attention"] == attention
    assert by_name["encoder–decoder (cross) attention"] == attention
    assert by_name["embedding (shared by source, target and output)"] == model.config.vocab_size * d_model
    assert "other" not in by_name


def test_parameter_table_speaks_the_page_language():
    model = Transformer(preset("tiny"))
    english, korean = plot_training.parameter_table(model), plot_training.parameter_table(model, "ko")
    assert [row["parameters"] for row in korean] == [row["parameters"] for row in english]
    assert korean[-1]["component"] == "합계" and "인코더 셀프 어텐션" in {row["component"] for row in korean}
    assert not {row["component"] for row in korean} & {row["component"] for row in english}


def test_read_metrics_tolerates_missing_files_and_broken_lines(tmp_path: Path):
    assert read_metrics(tmp_path / "missing.jsonl") == []
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        json.dumps({"kind": "train", "step": 1, "loss": 9.0})
        + "\n[1, 2]\n{broken\n"
        + json.dumps({"kind": "dev", "step": 2, "dev_loss": 8.0})
        + '\n{"kind": "train", "st',
        encoding="utf-8",
    )
    assert [record["step"] for record in read_metrics(log)] == [1, 2]


def test_training_curves_switch_between_steps_and_hours():
    records = [
        {"kind": "train", "step": 100, "loss": 6.0, "train_hours": 0.1},
        {"kind": "train", "step": 200, "loss": 5.0, "train_hours": 0.2},
        {"kind": "dev", "step": 200, "dev_loss": 5.5, "dev_bleu": 3.0, "train_hours": 0.2, "samples": {}},
    ]
    fig = plot_training.training_curves(records)
    assert [trace.name for trace in fig.data] == ["training loss", "dev loss", "dev BLEU"]
    assert list(fig.data[0].y) == [6.0, 5.0] and list(fig.data[2].y) == [3.0]
    assert fig.data[2].yaxis == "y2"  # BLEU on its own axis
    steps, hours = fig.layout.updatemenus[0].buttons
    assert steps.args[0]["x"] == [[100, 200], [200], [200]]
    assert hours.args[0]["x"] == [[0.1, 0.2], [0.2], [0.2]]
    assert len(plot_training.training_curves([]).layout.annotations) == 1  # says there is nothing yet
    assert fig.layout.shapes == ()  # no fine-tuning mark in a single run


def test_training_curves_mark_where_fine_tuning_started():
    records = [
        {"kind": "train", "step": 100, "loss": 6.0, "train_hours": 0.1},
        {"kind": "init", "step": 100, "checkpoint": "base", "dev": "multi30k_val", "train_hours": 0.1},
        {"kind": "train", "step": 150, "loss": 4.0, "train_hours": 0.3},
    ]
    fig = plot_training.training_curves(records)
    (mark,) = fig.layout.shapes
    assert mark.x0 == mark.x1 == 100 and "multi30k_val" in mark.label.text
    steps, hours = fig.layout.updatemenus[0].buttons
    assert steps.args[1]["shapes"][0]["x0"] == 100 and hours.args[1]["shapes"][0]["x0"] == 0.1


def test_many_continuations_label_only_where_the_dev_set_changes():
    """Thirteen continuations used to stack thirteen labels at the top of the chart, unreadable."""
    records = [{"kind": "train", "step": 0, "loss": 9.0, "train_hours": 0.0}]
    for step, dev_set in ((100, "newstest2013"), (200, "newstest2013"), (300, "multi30k_val"), (400, "multi30k_val")):
        records += [
            {"kind": "init", "step": step, "dev": dev_set, "train_hours": step / 100},
            {"kind": "train", "step": step + 50, "loss": 3.0, "train_hours": step / 100 + 0.5},
        ]
    fig = plot_training.training_curves(records)
    labels = [mark.label.text for mark in fig.layout.shapes]
    assert len(labels) == 4 and [bool(label) for label in labels] == [True, False, True, False]
    assert "newstest2013" in labels[0] and "multi30k_val" in labels[2]
    legend = [trace.name for trace in fig.data if trace.showlegend is not False]
    assert plot_training.words("en", "plot_training")["fine_tuning"] in legend  # what the dashed lines are
    steps, hours = fig.layout.updatemenus[0].buttons
    assert len(steps.args[0]["x"]) == len(hours.args[0]["x"]) == len(fig.data)  # the x switch covers every trace


def marked_alignment() -> go.Figure:
    """English "the cat sat ." / German "die Katze Hund": the cat flagged as left out, "Hund" as unsupported."""
    english, german = ["the", "cat", HOSTILE, "."], ["die", "Katze", "Hund"]
    scores = np.array([[0.9, 0.1, 0.0, 0.0], [0.2, 0.8, 0.0, 0.0], [0.3, 0.3, 0.3, 0.1]])
    english_marks = plot_alignment.Marks([None, "left out: +2.0", "left out: −1.0", None], {1}, "left untranslated?")
    german_marks = plot_alignment.Marks([None, "supported +3.0", "supported −0.5"], {2}, "not from the source?")
    return plot_alignment.alignment_figure(
        english, german, [(0, 0), (1, 1)], scores, "t", english_marks=english_marks, german_marks=german_marks
    )


def test_alignment_marks_flagged_words_and_names_the_marks_in_a_legend():
    fig = marked_alignment()
    english, german = (trace for trace in fig.data if trace.mode == "markers+text")
    linked, flagged, unlinked = plot_alignment.LINKED_TEXT, plot_alignment.WARNING_COLOUR, plot_alignment.UNLINKED_TEXT
    assert list(english.textfont.color) == [linked, flagged, unlinked, unlinked]
    assert list(english.marker.symbol) == ["circle", "diamond", "circle", "circle"]
    assert list(german.marker.symbol) == ["circle", "circle", "diamond"]
    assert english.hovertext[1] == "cat: left out: +2.0" and english.hovertext[0] == "the"
    assert english.hovertext[2].startswith(HOSTILE_SHOWN)  # a word's hover shows it literally, too
    legend = [trace.name for trace in fig.data if trace.showlegend]
    assert legend == ["left untranslated?", "not from the source?"]
    plain = plot_alignment.alignment_figure(*[english.text, german.text], [(0, 0), (1, 1)], np.ones((3, 4)), "t")
    assert not [trace for trace in plain.data if trace.showlegend]  # no marks, no legend
    room = fig.layout.height - plain.layout.height  # the legend's two lines get room under the sentences
    assert room == fig.layout.margin.b - plain.layout.margin.b >= 2 * 20


def test_a_compound_link_is_dashed_named_in_the_legend_and_its_word_not_grey():
    english, german = ["the", "central", "bank"], ["die", "Zentralbank"]
    scores = np.array([[0.9, 0.05, 0.05], [0.0, 0.5, 0.4]])
    fig = plot_alignment.alignment_figure(english, german, [(0, 0), (1, 1)], scores, "t", compounds=[(2, 1)])
    lines = [trace for trace in fig.data if trace.mode == "lines" and not trace.showlegend]
    assert [trace.line.dash for trace in lines] == ["solid", "solid", "dash"]
    words = next(trace for trace in fig.data if trace.mode == "markers+text")
    assert list(words.textfont.color) == [plot_alignment.LINKED_TEXT] * 3  # "bank" is translated, not grey
    assert [trace.name for trace in fig.data if trace.showlegend] == [message("en", "plot_alignment.compound")]


def test_learning_rate_curve_peaks_at_the_end_of_warm_up():
    fig = plot_training.learning_rate_curve(Schedule(512, 4000), 20000, current_step=10000)
    curve = fig.data[0]
    assert curve.x[int(np.argmax(curve.y))] == 4000
    assert max(curve.y) == pytest.approx(512**-0.5 * 4000**-0.5)
    marker = fig.data[1]
    assert list(marker.x) == [10000] and marker.y[0] == pytest.approx(512**-0.5 * 10000**-0.5)


@pytest.mark.parametrize(
    "build",
    [
        lambda: plot_attention.attention_heatmap(row_normalised((5, 3)), TOKENS, ["a", HOSTILE, "a"], HOSTILE),
        lambda: plot_attention.attention_heatmap(
            row_normalised((5, 5), causal=True), TOKENS, TOKENS, "d", causal=True, fitted=True
        ),
        lambda: plot_attention.attention_heatmap(np.full((5, 5), 0.2), TOKENS, TOKENS, "uniform"),
        lambda: plot_grid.model_view_grid(row_normalised((2, 3, 5, 5), causal=True), TOKENS, TOKENS, "g", causal=True),
        lambda: plot_grid.model_view_grid(
            row_normalised((2, 3, 5, 4)), TOKENS, TOKENS[:4], "g", fitted=True, opened=(1, 2)
        ),
        lambda: plot_attention.token_lines(row_normalised((3, 5, 5)), TOKENS, TOKENS, heads=[0, 2], title="t"),
        lambda: plot_attention.token_lines(row_normalised((3, 5, 5)), TOKENS, TOKENS, query_index=2),
        lambda: plot_head_scores.score_heatmap(np.array([[0.1, np.nan], [0.5, 0.9]]), "s", zrange=(0, 1)),
        lambda: plot_head_scores.score_heatmap(np.array([[0.1, 2.0]]), "s", fmt=".1f"),
        lambda: plot_head_scores.score_heatmap(
            np.array([[0.1, 0.8], [0.5, 0.9]]),
            "s",
            zrange=(0, 1),
            low=np.full((2, 2), 0.05),
            high=np.ones((2, 2)),
            near_best=np.array([[False, True], [False, True]]),
        ),
        lambda: marked_alignment(),
        lambda: plot_lens.lens_figure(
            LogitLens(TOKENS, row_normalised((2, 5)), np.array([[1, 0, 2, 0, 0], [0, 0, 0, 0, 1]]), [TOKENS, TOKENS]),
            "t",
        ),
    ],
)
def test_figures_built_without_checks_are_valid_plotly(build):
    """The attention figures are built from plain dicts without plotly.py's property checks (they cost more than
    the rest of a page run); plotly's checking constructor must accept each one unchanged, and each must be in
    presenter mode's form too."""
    fig = build()
    spec = fig.to_plotly_json()
    checked = go.Figure(spec)  # raises ValueError on any misspelt or ill-typed property
    assert json.loads(checked.to_json()) == json.loads(fig.to_json())
    projected = plot_style.for_projector(build())
    go.Figure(projected.to_plotly_json())
    assert projected.layout.font.size == plot_style.PRESENTER_FONT["size"]
    blues = plot_style._resolved("Blues")
    assert all(
        getattr(trace, "colorscale", None) is None or plot_style._resolved(trace.colorscale) != blues
        for trace in projected.data
    )


def test_a_long_wide_beam_tree_keeps_every_label_apart():
    """A 40-step search with 8 beams (16 hypotheses a step), whose pieces are long words: drawn left to right, the
    labels of neighbouring steps ran into each other. Steps run down the page, each at least a line of text apart,
    and each label fits the width of its column."""
    from transformer.analysis.beam import BeamTree
    from transformer.plots import whatif as plot_whatif
    from transformer.search.decode import BeamNode, DecodingOptions

    nodes, beams = [BeamNode(0, None, 0, 1, 0.0, 0.0, "root")], [0]
    for step in range(1, 41):
        children = []
        for parent in beams:
            for _ in range(2):
                node = BeamNode(len(nodes), parent, step, 5, -step - len(children) * 0.1, -1.0, "kept")
                nodes.append(node)
                children.append(node.id)
        for pruned in children[8:]:
            nodes[pruned].status = "pruned"
        beams = children[:8]
    tree = BeamTree(nodes, DecodingOptions(beam_size=8), [5, 2])
    pieces = ["<s>"] + ["▁Donaudampfschifffahrtsgesellschaft"] * (len(nodes) - 1)
    fig = plot_whatif.beam_tree(tree, pieces, chosen=nodes[-1].id)
    labelled = [trace for trace in fig.data if trace.mode == "markers+text"]
    columns = max(max(trace.x) for trace in labelled) + 1
    column_px = plot_whatif.TREE_WIDTH / columns
    assert all(len(label) * 7 <= column_px for trace in labelled for label in trace.text)
    assert all(label.endswith("…") for trace in labelled for label in trace.text if label != "<s>")
    assert {trace.customdata[0][0] for trace in labelled} >= {"▁Donaudampfschifffahrtsgesellschaft"}  # on hover
    steps_px = (fig.layout.height - fig.layout.margin.t - fig.layout.margin.b) / (tree.steps() + 1)
    assert steps_px >= 20
    assert all(trace.y is not None and max(trace.y) <= tree.steps() for trace in labelled)


def test_every_tile_of_the_grid_answers_a_click_with_its_own_head():
    """One clickable point per head, on the centre of its tile (where its layer's and head's ticks are), carrying
    [layer, head] 1-based; the open head is outlined exactly round its tile; no hover cut-off, so a click anywhere
    reaches the nearest centre."""
    fig = plot_grid.model_view_grid(row_normalised((2, 3, 5, 4)), TOKENS, TOKENS[:4], "g", opened=(1, 2))
    (points,) = [trace for trace in fig.data if trace.type == "scatter"]
    tiles = {(layer, head): (x, y) for (layer, head), x, y in zip(points.customdata, points.x, points.y, strict=True)}
    assert set(tiles) == {(layer, head) for layer in (1, 2) for head in (1, 2, 3)}
    assert all(
        x == fig.layout.xaxis.tickvals[head - 1] and y == fig.layout.yaxis.tickvals[layer - 1]
        for (layer, head), (x, y) in tiles.items()
    )
    assert fig.layout.hoverdistance == -1
    (outline,) = fig.layout.shapes
    columns, rows = list(heatmaps(fig)[0].x), list(heatmaps(fig)[0].y)
    inside_columns = [name for i, name in enumerate(columns) if outline.x0 < i < outline.x1]
    inside_rows = [name for i, name in enumerate(rows) if outline.y0 < i < outline.y1]
    assert len(inside_columns) == 4 and all(name.startswith("head 3 ·") for name in inside_columns)
    assert len(inside_rows) == 5 and all(name.startswith("layer 2 ·") for name in inside_rows)


def test_the_faithfulness_bars_carry_their_intervals():
    from transformer.plots.attribution import faithfulness_figure

    figure = faithfulness_figure(
        ["attention", "random"], [3.0, 0.5], [4.0, 1.0], "deletion", intervals=[[(2.5, 3.4), None], [(3.0, 5.0), None]]
    )
    three, one = (trace for trace in figure.data if trace.type == "bar")
    assert list(one.error_x.array) == [0.4, 0.0] and list(one.error_x.arrayminus) == [0.5, 0.0]
    assert list(three.error_x.array) == [1.0, 0.0] and list(three.error_x.arrayminus) == [1.0, 0.0]
    assert faithfulness_figure(["a"], [1.0], [2.0], "no intervals").data[0].error_x.array is None


def test_a_score_map_gives_each_heads_interval_and_frames_the_heads_near_the_best():
    values = np.array([[0.1, 0.8], [0.5, 0.9]])
    near = np.array([[False, True], [False, True]])
    fig = plot_head_scores.score_heatmap(
        values, "s", zrange=(0, 1), low=values - 0.05, high=values + 0.05, near_best=near, first=1
    )
    (heatmap,) = fig.data
    assert "customdata[0]" in heatmap.hovertemplate and "95%" in heatmap.hovertemplate
    assert np.allclose(np.asarray(heatmap.customdata)[1, 1], [0.85, 0.95])
    framed = sorted((round((shape.y0 + shape.y1) / 2), round((shape.x0 + shape.x1) / 2)) for shape in fig.layout.shapes)
    assert framed == [(0, 1), (1, 1)]  # layer 1 and layer 2, head 2 (rows and columns of the heatmap)
    assert "not clearly behind the best" in fig.layout.annotations[0].text
    bare = plot_head_scores.score_heatmap(values, "s", zrange=(0, 1))
    assert len(bare.data) == 1 and "customdata" not in bare.data[0].hovertemplate


@pytest.mark.parametrize("tokens", [8, 45, 96])
def test_every_row_of_a_heatmap_keeps_room_for_a_readable_label(tokens: int):
    labels = [f"w{i}" for i in range(tokens)]
    fig = plot_attention.attention_heatmap(np.full((tokens, tokens), 1 / tokens), labels, labels, "t")
    plotted = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert fig.layout.yaxis.tickfont.size >= 10 and plotted / tokens >= 1.2 * fig.layout.yaxis.tickfont.size


def test_the_atlas_keys_its_marker_shapes_by_attention_kind():
    records = [
        {"kind": kind, "layer": 1, "head": head, "cluster": "mixed", "x": float(head), "y": 0.0, "related": []}
        for head, kind in enumerate(("encoder", "decoder", "cross"), start=1)
    ]
    fig = plot_atlas.atlas_map(records, None, "atlas")
    shapes = {trace.name: trace.marker.symbol for trace in fig.data if trace.legendgroup == "shapes"}
    assert shapes == {"Encoder": "circle", "Decoder": "square", "Cross": "diamond"}
    (points,) = [trace for trace in fig.data if trace.x and trace.x[0] is not None]
    assert list(points.marker.symbol) == ["circle", "square", "diamond"]  # the points use the shapes the key names


def test_head_scores_are_drawn_in_the_colour_scale_of_the_attention_maps():
    scores = plot_head_scores.score_heatmap(np.arange(8.0).reshape(2, 4), "mean distance")
    attention = plot_attention.attention_heatmap(np.eye(3), list("abc"), list("abc"), "t")
    assert scores.data[0].colorscale == attention.data[0].colorscale  # dark means more on every page
