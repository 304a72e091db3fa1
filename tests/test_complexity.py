"""§4's Table 1: path lengths counted by hand and by walking each layer's connections, the table's rows, the timing of
both layers, the figures, and the "Why self-attention" page driven as a visitor drives it."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.conftest import charts, no_exceptions
from transformer.analysis.complexity import (
    PATH_KINDS,
    TABLE_1,
    maximum_path_lengths,
    path_length,
    route,
    time_layers,
)
from transformer.plots import complexity as plot_complexity
from transformer.plots import style as plot_style

PAGE = Path(__file__).resolve().parent.parent / "pages" / "why_self_attention.py"


# ------------------------------------------------------------------------------------------------ path lengths
@pytest.mark.parametrize("kind", PATH_KINDS)
@pytest.mark.parametrize("k", [2, 3, 5])
def test_adjacent_words_are_one_layer_apart_and_a_word_is_none_from_itself(kind: str, k: int):
    for i in range(6):
        assert path_length(kind, i, i + 1, k=k, r=4) == 1
        assert path_length(kind, i + 1, i, k=k, r=4) == 1
        assert path_length(kind, i, i, k=k, r=4) == 0


def test_first_and_last_of_n_positions_by_hand():
    n = 10  # positions 0 … 9: distance 9
    assert path_length("recurrent", 0, n - 1) == n - 1
    assert path_length("self_attention", 0, n - 1) == 1
    # Contiguous kernels widen the receptive field by k − 1 per layer: ⌈9 / (k − 1)⌉.
    assert [path_length("convolutional", 0, n - 1, k=k) for k in (2, 3, 4, 5, 10)] == [9, 5, 3, 3, 1]
    # Dilated: L layers of kernel k reach k^L positions; 9 needs k^L ≥ 10.
    assert [path_length("dilated", 0, n - 1, k=k) for k in (2, 3, 4, 10)] == [4, 3, 2, 1]
    # Restricted self-attention over r positions reaches r // 2 to either side.
    assert [path_length("restricted", 0, n - 1, r=r) for r in (2, 4, 6, 18)] == [9, 5, 3, 1]
    assert maximum_path_lengths(n, k=3, r=4) == {
        "recurrent": 9,
        "convolutional": 5,
        "dilated": 3,
        "restricted": 5,
        "self_attention": 1,
    }


def reachable_offsets(kind: str, layers: int, k: int, r: int) -> set[int]:
    """The offsets a signal can have moved after ``layers`` layers, by following each layer's connections."""
    offsets = {0}
    for layer in range(layers):
        if kind == "recurrent":
            moves = {1}
        elif kind == "convolutional":
            moves = set(range(k))  # a one-sided kernel reads the k − 1 positions before and its own
        elif kind == "dilated":
            moves = {tap * k**layer for tap in range(k)}
        elif kind == "restricted":
            moves = set(range(-(r // 2), r // 2 + 1))
        else:
            moves = set(range(-100, 101))  # every position
        offsets = {offset + move for offset in offsets for move in moves}
    return offsets


@pytest.mark.parametrize("kind", PATH_KINDS)
@pytest.mark.parametrize(("k", "r"), [(2, 2), (3, 4), (4, 7)])
def test_path_length_is_the_fewest_layers_whose_connections_reach(kind: str, k: int, r: int):
    for distance in range(1, 40):
        fewest = next(layers for layers in range(1, 41) if distance in reachable_offsets(kind, layers, k, r))
        assert path_length(kind, 3, 3 + distance, k, r) == fewest, (kind, distance)


@pytest.mark.parametrize("kind", PATH_KINDS)
def test_a_route_ends_at_the_second_word_in_path_length_layers(kind: str):
    for i, j in ((0, 13), (13, 0), (4, 5), (7, 7)):
        positions = route(kind, i, j, k=3, r=4)
        assert positions[0] == i and positions[-1] == j
        assert len(positions) == path_length(kind, i, j, k=3, r=4) + 1
        assert positions == sorted(positions, reverse=j < i)  # never moves back


def test_impossible_layers_are_refused():
    with pytest.raises(ValueError):
        path_length("convolutional", 0, 5, k=1)
    with pytest.raises(ValueError):
        path_length("restricted", 0, 5, r=1)
    with pytest.raises(ValueError):
        path_length("transformer", 0, 5)


def test_table_1_rows_are_the_papers():
    assert [
        (row.key, row.complexity_per_layer, row.sequential_operations, row.maximum_path_length) for row in TABLE_1
    ] == [
        ("self_attention", "O(n²·d)", "O(1)", "O(1)"),
        ("recurrent", "O(n·d²)", "O(n)", "O(n)"),
        ("convolutional", "O(k·n·d²)", "O(1)", "O(log_k(n))"),
        ("restricted", "O(r·n·d)", "O(1)", "O(n/r)"),
    ]


# ------------------------------------------------------------------------------------------------ timing
def test_time_layers_gives_a_positive_median_for_each_length_and_layer():
    before = torch.get_num_threads()
    times = time_layers(widths=(8, 16, 32), d_model=32, threads=1, num_heads=4, repeats=3)
    assert torch.get_num_threads() == before  # the process's setting is given back
    assert times.threads == 1 and times.repeats == 3 and times.lengths == (8, 16, 32)
    rows = times.rows()
    assert [row["n"] for row in rows] == [8, 16, 32]
    assert all(row["self_attention_ms"] > 0 and row["recurrent_ms"] > 0 for row in rows)
    assert times.seconds > 0
    with pytest.raises(ValueError):
        time_layers(widths=(), d_model=32)


# ------------------------------------------------------------------------------------------------ figures
def test_path_figure_climbs_one_step_per_layer_to_the_second_word():
    tokens = ["▁The", "▁children", "▁are", "▁playing", "▁in", "▁the", "▁park", "."]
    figure = plot_complexity.path_figure(tokens, 1, 6, k=3, r=4)
    assert len(figure.data) == len(PATH_KINDS)
    for kind, trace in zip(PATH_KINDS, figure.data, strict=True):
        assert list(trace.x)[-1] == 6 and list(trace.y)[-1] == path_length(kind, 1, 6, 3, 4)
        assert trace.name.endswith(f"path length {path_length(kind, 1, 6, 3, 4)}")
    assert "“▁children”" in figure.layout.title.text and "5 positions" in figure.layout.title.text
    korean = plot_complexity.path_figure(tokens, 1, 6, language="ko")
    assert "경로" in korean.layout.title.text


def test_timing_figure_draws_both_layers_on_log_axes():
    times = time_layers(widths=(8, 16), d_model=16, num_heads=2, repeats=1)
    figure = plot_complexity.timing_figure(times)
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    assert [list(trace.y) for trace in figure.data] == [list(times.self_attention_ms), list(times.recurrent_ms)]
    assert "d_model = 16" in figure.layout.title.text


def test_figures_built_without_checks_are_valid_plotly():
    """Built from plain dicts (transformer.plots.style.figure): plotly's checking constructor must accept them
    unchanged, in presenter mode's form too; a hostile token stays text."""
    times = time_layers(widths=(8, 16), d_model=16, num_heads=2, repeats=1)
    for build in (
        lambda: plot_complexity.path_figure(["▁a", "<b>x</b>", "&", "d"], 3, 0, k=2, r=2),
        lambda: plot_complexity.path_figure(["▁a", "b"], 1, 1, language="ko"),
        lambda: plot_complexity.timing_figure(times, "ko"),
    ):
        figure = build()
        checked = go.Figure(figure.to_plotly_json())  # raises ValueError on a misspelt or ill-typed property
        assert json.loads(checked.to_json()) == json.loads(figure.to_json())
        go.Figure(plot_style.for_projector(build()).to_plotly_json())
    assert "<b>" not in json.dumps(plot_complexity.path_figure(["<b>x</b>", "y"], 0, 1).to_plotly_json())


# ------------------------------------------------------------------------------------------------ the page
@pytest.fixture
def checkpoint(trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    return trained_checkpoint


def path_metrics(app: AppTest) -> dict[str, int]:
    return {metric.label: int(metric.value) for metric in app.metric}


def test_the_page_counts_the_paths_between_the_chosen_words(checkpoint: Path):
    app = AppTest.from_file(str(PAGE), default_timeout=120).run()
    no_exceptions(app)
    app.text_input(key="why_text").set_value("the small cat sees the big dog near the old house.").run()
    pieces = len(app.selectbox(key="why_first").options)
    assert pieces >= 8
    # By default the first and the last piece: Table 1's maximum path.
    assert path_metrics(app)["recurrent"] == pieces - 1 and path_metrics(app)["self-attention"] == 1
    # The page's own table, not the charts' data tables (each chart's text alternative, in an expander).
    chart_data = {id(table) for expander in app.expander for table in expander.table}
    (table,) = [table for table in app.table if id(table) not in chart_data]
    assert len(table.value) == len(TABLE_1)

    app.selectbox(key="why_first").set_value(1).run()
    app.selectbox(key="why_second").set_value(7).run()
    app.slider(key="why_k").set_value(4).run()
    no_exceptions(app)
    shown = path_metrics(app)
    assert shown["recurrent"] == 6 and shown["convolution, k = 4"] == 2 and shown["dilated convolution, k = 4"] == 2
    assert shown["self-attention"] == 1
    figure = charts(app)[0]["figure"]
    assert [trace["x"][-1] for trace in figure["data"]] == [7] * len(PATH_KINDS)
    assert (app.query_params["why_first"], app.query_params["why_second"], app.query_params["why_k"]) == ("1", "7", "4")

    app.selectbox(key="why_second").set_value(2).run()
    assert all(value == 1 for value in path_metrics(app).values())  # neighbours: one layer through anything


def test_a_link_restores_the_words_and_the_kernel(checkpoint: Path):
    app = AppTest.from_file(str(PAGE), default_timeout=120)
    query = {"why_text": "the cat sees the dog near the house.", "why_first": "0", "why_second": "5", "why_k": "2"}
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    no_exceptions(app)
    assert app.text_input(key="why_text").value == query["why_text"]
    assert (app.selectbox(key="why_first").value, app.selectbox(key="why_second").value) == (0, 5)
    assert app.slider(key="why_k").value == 2
    assert path_metrics(app)["convolution, k = 2"] == 5 and path_metrics(app)["recurrent"] == 5


def test_malformed_links_and_short_sentences_fall_back(checkpoint: Path):
    app = AppTest.from_file(str(PAGE), default_timeout=120)
    for key, value in {"why_first": "999", "why_second": "-3", "why_k": "x", "why_r": "1e9"}.items():
        app.query_params[key] = value
    app.run()
    no_exceptions(app)
    assert app.slider(key="why_k").value == 3 and charts(app)
    app.text_input(key="why_text").set_value(" ").run()
    no_exceptions(app)
    assert any("at least two pieces" in info.value for info in app.info)


def test_the_timing_is_measured_on_request_and_kept_for_the_server(checkpoint: Path):
    app = AppTest.from_file(str(PAGE), default_timeout=120).run()
    if not any("Not measured" in info.value for info in app.info):
        pytest.skip("measured already in this process")
    assert len(charts(app)) == 1
    app.button(key="why_measure").click().run()
    no_exceptions(app)
    shown = charts(app)
    assert len(shown) == 2 and shown[1]["figure"]["layout"]["xaxis"]["type"] == "log"
    table = app.dataframe[0].value
    assert list(table["n"]) == [8, 16, 32, 64, 128, 256, 512] and (table["recurrent_ms"] > 0).all()
    assert any("with 1 torch thread on a machine of" in caption.value for caption in app.caption)
    # Another visitor sees the same measurement without measuring.
    other = AppTest.from_file(str(PAGE), default_timeout=120).run()
    assert len(charts(other)) == 2
