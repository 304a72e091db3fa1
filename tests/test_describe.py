"""Every chart in words (transformer/plots/describe/): what a screen reader's user hears instead of the chart, and
the data tables shown on request, checked on hand-made figures whose answer is known and on every figure the app
draws."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from tests.test_plots import HOSTILE, TOKENS, marked_alignment, row_normalised
from transformer.analysis.attention import translate_with_attention
from transformer.analysis.beam import explore_beam, token_probabilities
from transformer.analysis.complexity import time_layers
from transformer.analysis.figures import FIGURES, sentence_attention
from transformer.analysis.logit_lens import logit_lens
from transformer.analysis.steps import STEPS, head_scaling, head_steps, next_tokens, scaling_demo
from transformer.features.i18n import catalogue
from transformer.features.toy import ToySettings, run_to_end
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.paper.schedule import Schedule, learning_rate
from transformer.plots import atlas as plot_atlas
from transformer.plots import attention as plot_attention
from transformer.plots import attribution as plot_attribution
from transformer.plots import complexity as plot_complexity
from transformer.plots import grid as plot_grid
from transformer.plots import head_scores as plot_head_scores
from transformer.plots import logit_lens as plot_lens
from transformer.plots import paper as plot_paper
from transformer.plots import positional as plot_positional
from transformer.plots import scaling as plot_scaling
from transformer.plots import steps as plot_steps
from transformer.plots import toy as plot_toy
from transformer.plots import training as plot_training
from transformer.plots import whatif as plot_whatif
from transformer.plots.describe import describe, describe_for_page
from transformer.plots.describe.reading import Description, number, plain
from transformer.search.decode import GREEDY, DecodingOptions

HANGUL = re.compile(r"[\uac00-\ud7a3]")
SENTENCE = "The Law will never be perfect, but its application should be just."
WORDS = ["The", "Law", "will", "never", "be", "perfect", "its", "application"]


def english_template_words() -> set[str]:
    """Every word of the English describe.* messages (not their {fields})."""
    messages = [text for key, text in catalogue("en").items() if key.startswith("describe.")]
    return {word.lower() for text in messages for word in re.findall(r"[A-Za-z]{2,}", re.sub(r"\{\w+\}", "", text))}


def links_of(summary: str) -> list[tuple[str, str]]:
    """The (from, to) token pairs a summary names, in its order."""
    return re.findall(r"“([^”]*)” → “([^”]*)”", summary)


# ------------------------------------------------------------------------------------------------ heatmaps
def test_the_strongest_cell_is_named_first_with_its_value():
    weights = np.full((len(WORDS), len(WORDS)), 0.05)
    weights[6, 1] = 0.62  # "its" → "Law", the paper's Figure 4 link
    weights[4, 5] = 0.41
    weights[0, 0] = 0.3
    words = [*WORDS[:7], HOSTILE]  # the last key is markup as text: read as what it says
    weights[7, 7] = 0.2
    fig = plot_attention.attention_heatmap(weights, words, words, "encoder L5 H3")
    summary = describe(fig).summary
    assert summary.startswith("encoder L5 H3.")
    assert links_of(summary)[:3] == [("its", "Law"), ("be", "perfect"), ("The", "The")]
    assert "“its” → “Law” 0.62" in summary and "“be” → “perfect” 0.41" in summary
    assert "8 rows (query) × 8 columns (key)" in summary
    # The token that is markup is read as the text it is, not as plotly's escaped label of it.
    assert f"“{HOSTILE}” → “{HOSTILE}” 0.2" in summary and "&lt;" not in summary and "&amp;" not in summary


def test_masked_cells_are_never_named():
    """The decoder's future cells hold the largest weights of the matrix handed in; the figure masks them, and the
    words must follow the figure, not the matrix."""
    tokens = ["a", "b", "c", "d", "e"]
    weights = np.triu(np.full((5, 5), 0.99), k=1) + np.tril(row_normalised((5, 5), seed=1, causal=True)) * 0.5
    fig = plot_attention.attention_heatmap(weights, tokens, tokens, "decoder", causal=True)
    description = describe(fig)
    named = links_of(description.summary)
    assert len(named) == 5
    assert all(tokens.index(key) <= tokens.index(query) for query, key in named), named
    assert "empty cells: 10" in description.summary
    (_, table), *_ = description.tables
    values = table.set_index("query").to_numpy(dtype=float)
    assert np.isnan(values[np.triu_indices(5, k=1)]).all()
    assert np.allclose(values[np.tril_indices(5)], weights[np.tril_indices(5)])
    # A map with nothing left to show says so instead of naming anything.
    empty = go.Figure(go.Heatmap(z=[[None, None], [None, None]]))
    assert "no values shown" in describe(empty).summary and not links_of(describe(empty).summary)


def test_a_diverging_map_names_the_largest_differences_of_either_sign():
    difference = np.zeros((3, 3))
    difference[0, 2], difference[1, 1], difference[2, 0] = -0.5, 0.3, 0.1
    fig = plot_whatif.difference_heatmap(difference, ["x", "y", "z"], ["p", "q", "r"], "A − B")
    summary = describe(fig).summary
    assert "largest in size: “x” → “r” -0.5, “y” → “q” 0.3, “z” → “p” 0.1" in summary


def test_every_panel_of_a_subplot_figure_is_described_under_its_title():
    fig = make_subplots(rows=1, cols=2, subplot_titles=["encoder", "cross"])
    fig.add_trace(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.5]], x=["a", "b"], y=["c", "d"]), 1, 1)
    fig.add_trace(go.Heatmap(z=[[0.2, 0.3], [0.7, 0.1]], x=["e", "f"], y=["g", "h"]), 1, 2)
    fig.update_layout(title="two kinds")
    summary = describe(fig).summary
    encoder, cross = summary.index("encoder:"), summary.index("cross:")  # titles as written
    assert encoder < summary.index("c, b: 0.9") < cross < summary.index("h, e: 0.7")
    # The live model's tiles: one heatmap per layer and head, each named by the title written above it.
    weights = np.full((2, 3, 4, 4), 0.1)
    tokens = ["w", "x", "y", "z"]
    for layer in range(2):
        for head in range(3):
            weights[layer, head, head, (head + layer + 1) % 4] = 0.7
    tiles = plot_toy.head_tiles(weights, tokens, tokens, "encoder", 40)
    summary = describe(tiles).summary
    assert "6 heatmaps of 4 × 4 cells each" in summary
    for layer in range(2):
        for head in range(3):
            title = f"layer {layer + 1}, head {head + 1}"
            part = summary[summary.index(title + ":") :].split(". ")[0]
            query, key = tokens[head], tokens[(head + layer + 1) % 4]
            assert links_of(part)[0] == (query, key) and f"“{query}” → “{key}” 0.7" in part, part


# ------------------------------------------------------------------------------------------------ lines and bars
def bleu_records() -> list[dict]:
    """A run whose dev BLEU peaks before the end: 2.1 at step 1,000, 24.8 at 9,000, 24.3 at 10,000."""
    records = [
        {"kind": "train", "step": step, "loss": 9.0 - step / 2000, "train_hours": step / 1000}
        for step in (500, 1000, 5000, 9000, 10000)
    ]
    bleu = {1000: 2.1, 5000: 18.0, 9000: 24.8, 10000: 24.3}
    records += [
        {"kind": "dev", "step": step, "dev_loss": 8.0 - step / 2000, "dev_bleu": value, "train_hours": step / 1000}
        for step, value in bleu.items()
    ]
    return records


def test_a_line_charts_summary_gives_each_lines_start_end_and_peak():
    fig = plot_training.training_curves(bleu_records())
    summary = describe(fig).summary
    assert "dev BLEU rises from 2.1 to 24.3, highest 24.8 at step 9,000" in summary
    assert "Training loss falls from 8.75 to 4" in summary
    korean = describe(plot_training.training_curves(bleu_records(), "ko"), "ko").summary
    assert "2.1에서 24.3까지 상승, 최고 24.8(스텝 9,000)" in korean


def test_the_tables_hold_the_figures_numbers():
    matrix = row_normalised((5, 3))
    keys = ["a", HOSTILE, "a"]
    (title, table), *rest = describe(plot_attention.attention_heatmap(matrix, TOKENS, keys, "t")).tables
    assert title == "t" and not rest
    assert table.shape == (5, 4) and np.allclose(table.iloc[:, 1:].to_numpy(dtype=float), matrix)
    assert list(table["query"]) == ["<s>", "the (2)", HOSTILE, "the (4)", "end"]  # repeated tokens kept apart
    assert list(table.columns[1:]) == ["a (1)", HOSTILE, "a (3)"]
    (_, lines), *_ = describe(plot_training.training_curves(bleu_records())).tables
    assert list(lines["step"]) == [500, 1000, 5000, 9000, 10000]
    assert list(lines["dev BLEU"].iloc[1:]) == [2.1, 18.0, 24.8, 24.3] and np.isnan(lines["dev BLEU"].iloc[0])
    assert list(lines["training loss"]) == [8.75, 8.5, 6.5, 4.5, 4.0]
    bars = describe(plot_training.smoothed_target_figure(0.1, 100)).tables[0][1]
    assert bars.shape == (3, 3) and list(bars.iloc[:, 1]) == [1.0, 0.0, 0.0]


def test_bars_name_the_largest_and_the_smallest():
    tokens = ["▁Die", "▁Katze", "▁sitzt", "▁auf", "▁der", "▁Matte", "."]
    probabilities = [0.9, 0.4, 0.7, 0.05, 0.95, 0.2, 0.99]
    fig = go.Figure(go.Bar(x=tokens, y=probabilities, name="given"))
    summary = describe(fig).summary
    assert "Given: largest “.” 0.99, “▁der” 0.95, “▁Die” 0.9, smallest “▁auf” 0.05" in summary


def test_figures_of_other_kinds_are_described_without_breaking():
    empty = plot_training.training_curves([])
    summary = describe(empty).summary
    assert summary.startswith("Training run") and "No training records" in summary
    table = go.Figure(go.Table(header={"values": ["head", "kept"]}, cells={"values": [["H1", "H2"], [True, False]]}))
    description = describe(table)
    assert "2 rows and 2 columns (head, kept)" in description.summary
    assert list(description.tables[0][1]["kept"]) == ["✓", ""]  # never True / False
    sankey = go.Figure(
        go.Sankey(
            node={"label": ["source", "kept", "lost"]}, link={"source": [0, 0], "target": [1, 2], "value": [8, 2]}
        )
    )
    assert "Largest flows: “source” → “kept” 8, “source” → “lost” 2." in describe(sankey).summary
    parallel = go.Figure(
        go.Parcoords(dimensions=[{"label": "BLEU", "values": [1, 2]}, {"label": "loss", "values": [3, 4]}])
    )
    assert "2 lines across BLEU, loss" in describe(parallel).summary
    assert describe(go.Figure()).summary == "Nothing is drawn on this chart."
    shapes = go.Figure()
    shapes.add_shape(type="line", x0=0, x1=1, y0=0, y1=1, label={"text": "a marked step"})
    assert "a marked step" in describe(shapes).summary


def test_the_page_hook_is_describe_and_never_breaks_a_page(monkeypatch: pytest.MonkeyPatch):
    fig = plot_attention.attention_heatmap(row_normalised((3, 3)), ["a", "b", "c"], ["a", "b", "c"], "one head")
    assert describe_for_page(fig, "ko").summary == describe(fig, "ko").summary

    def broken(self) -> Description:
        raise RuntimeError("a describer bug")

    monkeypatch.setattr("transformer.plots.describe._Describer.run", broken)
    assert describe_for_page(fig, "en") == Description("one head", [])


def test_numbers_are_read_as_people_read_them():
    assert [number(value) for value in (9000, 24.83, 0.625, 0.000698, 1.7e-7, 1234.5, -0.5)] == [
        "9,000",
        "24.8",
        "0.625",
        "0.000698",
        "1.7e-7",
        "1,234",
        "-0.5",
    ]


def test_korean_is_told_in_korean():
    weights = np.full((3, 3), 0.1)
    weights[2, 0] = 0.8
    tokens = ["Gesetz", "seine", "Anwendung"]
    fig = plot_attention.attention_heatmap(weights, tokens, tokens, "인코더 5층 헤드 3", language="ko")
    english = english_template_words()
    for figure in (fig, plot_training.training_curves(bleu_records(), "ko"), plot_training.training_curves([], "ko")):
        summary = describe(figure, "ko").summary
        assert HANGUL.search(summary)
        heard = {word.lower() for word in re.findall(r"[A-Za-z]{2,}", summary)} - {"bleu"}  # the metric's name
        assert not heard & english, heard & english
    assert "가장 강한 연결: “Anwendung” → “Gesetz” 0.8" in describe(fig, "ko").summary


# ------------------------------------------------------------------------------------------------ every figure
def training_records() -> list[dict]:
    """A short log with everything the training page draws: losses, BLEU, learning rates, health measures and a
    continuation from another run."""
    records = []
    for step in range(100, 1300, 100):
        rate = learning_rate(step if step <= 600 else step - 600, 64, 200)
        records.append({"kind": "train", "step": step, "loss": 9 - step / 200, "nll": 8 - step / 200, "lr": rate})
        if step % 300 == 0:
            records.append(
                {
                    "kind": "dev",
                    "step": step,
                    "dev_loss": 8.5 - step / 250,
                    "dev_nll": 8 - step / 250,
                    "dev_bleu": step / 100,
                    "encoder_position_cosine": [0.5, 0.4, 0.3],
                    "encoder_entropy_normalised": [0.9, 0.8, 0.7],
                    "cross_entropy_normalised": [0.8, 0.7, 0.6],
                    "cross_alignment_best": 0.3 + step / 4000,
                }
            )
        if step == 600:
            records.append({"kind": "init", "step": 600, "dev": "multi30k_val", "checkpoint": "base"})
    return records


def atlas_records() -> list[dict]:
    groups = ["previous", "syntax:nsubj", "broad", "previous"]
    return [
        {
            "kind": kind,
            "layer": layer,
            "head": head,
            "x": float(layer + head),
            "y": float(layer - head),
            "cluster": groups[(layer + head) % 4],
            "related": [["encoder", 1, 2]],
        }
        for kind in ("encoder", "cross")
        for layer in (1, 2)
        for head in (1, 2)
    ]


def app_figures(loaded: LoadedCheckpoint, language: str = "en") -> Iterator[tuple[str, go.Figure]]:
    """Every figure builder the app's pages show, as (name, figure) on the tiny trained model."""
    model, tokenizer = loaded.model, loaded.tokenizer
    translation = translate_with_attention(model, tokenizer, "the cat sees the dog.", GREEDY)
    maps = translation.maps
    ids = translation.source_ids, translation.output_ids
    source = maps.source_tokens
    for kind in ("encoder", "decoder", "cross"):
        queries, keys = maps.tokens(kind)
        causal = kind == "decoder"
        yield (
            f"heatmap-{kind}",
            plot_attention.attention_heatmap(
                maps.matrix(kind, 0, 1), queries, keys, f"{kind} L1 H2", causal=causal, language=language
            ),
        )
        grid = plot_grid.model_view_grid(
            maps.weights(kind), queries, keys, kind, causal, language=language, opened=(0, 1)
        )
        yield f"grid-{kind}", grid
    yield "token-lines", plot_attention.token_lines(maps.weights("encoder")[0], source, source, language=language)
    yield (
        "token-lines-query",
        plot_attention.token_lines(
            maps.weights("encoder")[1], source, source, heads=[0, 1], query_index=1, title="focus", language=language
        ),
    )
    scores = np.array([[0.1, 0.8], [np.nan, 0.9]])
    near = np.array([[False, True], [False, True]])
    yield (
        "scores",
        plot_head_scores.score_heatmap(
            scores, "scores", zrange=(0, 1), language=language, low=scores - 0.1, high=scores + 0.1, near_best=near
        ),
    )
    attention = {number_: sentence_attention(loaded, figure) for number_, figure in FIGURES.items()}
    yield "paper-3", plot_paper.figure_3(attention[3], 0, None, language=language)
    top, bottom = plot_paper.figure_4(attention[4], 0, [0, 1], language=language)
    yield "paper-4-top", top
    yield "paper-4-bottom", bottom
    yield "paper-5", plot_paper.figure_5(attention[5], 1, [0, 1], language=language)[0]
    yield "alignment", marked_alignment()
    yield "lens", plot_lens.lens_figure(logit_lens(loaded, *ids), "lens", language)
    attribution = np.linspace(-1, 1, len(source))
    yield (
        "attribution",
        plot_attribution.attribution_figure(source, attribution, "attribution", maps.cross[0, 0, 0], language),
    )
    intervals = [[(1.0, 2.0), None], [(2.0, 3.0), None]]
    yield (
        "faithfulness",
        plot_attribution.faithfulness_figure(
            ["attention", "chance"], [1.5, 0.2], [2.5, 0.4], "deletion", language, intervals
        ),
    )
    yield "atlas", plot_atlas.atlas_map(atlas_records(), 0, "atlas", language)
    yield "paths", plot_complexity.path_figure(source, 0, len(source) - 1, language=language)
    yield (
        "timing",
        plot_complexity.timing_figure(time_layers(widths=(8, 16), d_model=16, num_heads=2, repeats=1), language),
    )
    pe = sinusoidal_positional_encoding(60, model.config.d_model).numpy()
    yield "pe-table", plot_positional.positional_encoding_heatmap(pe, language)
    yield "pe-curves", plot_positional.sinusoid_curves(pe, [0, 5], language)
    yield "pe-similarity", plot_positional.position_similarity(pe, language)
    yield "pe-offset", plot_positional.offset_linearity(pe, 5, language)[0]
    yield "pe-norms", plot_positional.embedding_norms(model, language)
    for kind in ("encoder", "decoder"):
        steps = head_steps(model, tokenizer, *ids, kind, 0, 1)
        for step in STEPS:
            yield f"step-{kind}-{step.key}", plot_steps.step_figure(steps, step.key, 1, language)
        yield f"step-row-{kind}", plot_steps.query_row_figure(steps, 1, language)
        yield f"multihead-{kind}", plot_steps.multihead_figure(maps.weights(kind)[0], steps, 1, language)
        yield f"head-scaling-{kind}", plot_scaling.head_scaling_figure(head_scaling(steps), steps, language)
    upcoming = next_tokens(model, tokenizer, *ids)
    rows = maps.decoder[0, 0, 1], maps.cross[0, 0, 1]
    yield "decoding", plot_steps.decoding_figure(*rows, source, upcoming, 1, 0, 0, language)
    demos = [scaling_demo(width) for width in (4, 16, 64)]
    yield "scaling-demo", plot_scaling.scaling_figure(demos[1], demos, language)
    toy = run_to_end(ToySettings(task="reverse", min_length=3, max_length=5, max_steps=10, snapshot_every=5))
    yield "toy-curve", plot_toy.training_curve(toy.snapshots, language)
    cross = toy.last.attention["cross"]
    yield (
        "toy-tiles",
        plot_toy.head_tiles(cross, toy.output_tokens, toy.source_tokens, "cross", toy.last.step, language),
    )
    records = training_records()
    yield "training-curves", plot_training.training_curves(records, language)
    yield "health", plot_training.health_curves(records, language)
    yield "learning-rate", plot_training.learning_rate_curve(Schedule(64, 200), 2000, 1200, language=language)
    yield "recorded-schedule", plot_training.recorded_schedule(records, Schedule(64, 200), language=language)
    yield "smoothed-target", plot_training.smoothed_target_figure(0.1, model.config.vocab_size, language)
    yield "smoothing-log", plot_training.smoothing_on_log(records, 0.1, model.config.vocab_size, language)
    tree = explore_beam(model, tokenizer, "the cat sees the dog.", DecodingOptions(beam_size=2))
    pieces = tokenizer.pieces(node.token for node in tree.nodes)
    yield "beam-tree", plot_whatif.beam_tree(tree, pieces, tree.best().id, language)
    probabilities = token_probabilities(model, tokenizer, *ids)
    yield "token-probabilities", plot_whatif.token_probabilities({"greedy": probabilities}, "p", language)
    curve = [{"heads_off": count, "bleu": 30 - count, "chrf": 50 - count / 2} for count in range(0, 12, 3)]
    yield "prune", plot_whatif.prune_curve(curve, 30.0, 12, language)
    delta = maps.matrix("encoder", 0, 0) - maps.matrix("encoder", 0, 1)
    yield "difference", plot_whatif.difference_heatmap(delta, source, source, "difference", language)


@pytest.mark.parametrize("language", ["en", "ko"])
def test_every_figure_the_app_shows_is_described(loaded: LoadedCheckpoint, language: str):
    described = 0
    for name, fig in app_figures(loaded, language):
        description = describe(fig, language)
        title = plain(fig.layout.title.text)
        summary = description.summary
        assert summary.strip() and summary.strip(" .") != title.strip(" ."), name
        assert len(summary) > len(title) + 10, (name, summary)
        assert not re.search(r"&(lt|gt|amp);|<br>|</?b>", summary.replace(HOSTILE, "")), (name, summary)
        assert language == "en" or HANGUL.search(summary), (name, summary)
        assert re.search(r"\d|→", summary.replace(title, "", 1)), (name, summary)  # some value or link is read out
        assert description.tables, name
        numbers = [table.select_dtypes("number").to_numpy(dtype=float) for _, table in description.tables]
        for trace in fig.data:  # every map's values are in a table, the empty rows and columns of a grid left out
            if trace.type == "heatmap" and len({colour for _, colour in trace.colorscale}) > 1:
                z = np.asarray(trace.z, dtype=float)
                shown = z[np.isfinite(z).any(axis=1)][:, np.isfinite(z).any(axis=0)]
                assert any(
                    values.shape == shown.shape and np.allclose(values, shown, equal_nan=True) for values in numbers
                ), (name, trace.name)
        for table_title, table in description.tables:
            assert table_title.strip() and isinstance(table, pd.DataFrame) and not table.empty, (name, table_title)
            cells = table.astype(str).to_numpy().ravel().tolist() + [str(column) for column in table.columns]
            assert not {"True", "False", "true", "false"} & set(cells), (name, table_title)
        described += 1
    assert described >= 60
