"""The Streamlit pages, run headless with a tiny trained checkpoint: what they show and how they react to widgets."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import array, charts, no_exceptions, plain, uniform_encoder_copy
from transformer.analysis import precompute, timeline
from transformer.analysis.attention import word_groups, word_index
from transformer.analysis.figures import SentenceAttention, figure_metrics, making_metrics
from transformer.cli import timeline as timeline_cli
from transformer.formats.checkpoint import load_checkpoint, read_json, write_json
from transformer.formats.runs import read_metrics
from transformer.paper.schedule import learning_rate

PAGES = Path(__file__).resolve().parent.parent / "pages"
POSITIONAL = "positional_encoding.py"
MODEL = "model_and_training.py"
FIGURES = "paper_figures.py"
HEADS = "head_discovery.py"
STEPS = "step_by_step.py"


def run_page(name: str) -> AppTest:
    return AppTest.from_file(str(PAGES / name), default_timeout=120).run()


@pytest.fixture
def checkpoint(trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    return trained_checkpoint


@pytest.fixture
def shipped_copy(trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkpoint outside its run folder (so without a training log), with a model card and recorded scores."""
    folder = shutil.copytree(trained_checkpoint, tmp_path / "shipped")
    (folder / "trainer.json").unlink()
    meta = read_json(folder / "meta.json")
    trained_with = {"warmup": 300, "lr_scale": 0.7}  # as an export records them
    write_json(folder / "meta.json", {**meta, "training_args": trained_with, "scores": {"newstest2014 BLEU": 1.5}})
    (folder / "MODEL_CARD.md").write_text("# Tiny model\n\nTranslates **word for word**.\n", encoding="utf-8")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    return folder


def test_positional_encoding_page_shows_every_figure_and_follows_its_controls(checkpoint: Path):
    app = run_page(POSITIONAL)
    no_exceptions(app)
    assert app.sidebar.selectbox(key="checkpoint").value == str(checkpoint)
    assert len(app.latex) >= 1
    # Joined raw strings must not glue a command to the next symbol (KaTeX shows "\\qquadPE" as an error).
    assert not any(re.search(r"\\q?quad[A-Za-z]", latex.value) for latex in app.latex)
    shown = charts(app)
    assert len(shown) == 5
    table = array(shown[0]["figure"]["data"][0]["z"])
    assert table.shape == (100, 32)  # 100 positions × the tiny model's d_model
    assert np.allclose(table[:, 0], np.sin(np.arange(100)), atol=1e-5)
    residuals = {metric.label: float(metric.value) for metric in app.metric}
    assert residuals["Largest held-out residual, fitted M"] < 1e-3

    app.select_slider(key="pe_d_model").set_value(64).run()
    app.slider(key="pe_positions").set_value(40).run()
    no_exceptions(app)
    assert array(charts(app)[0]["figure"]["data"][0]["z"]).shape == (40, 64)
    dimensions = app.multiselect(key="pe_dimensions")
    assert all(0 <= d < 64 for d in dimensions.value) and 62 in dimensions.value  # the new width's own defaults
    dimensions.set_value([3]).run()
    curves = charts(app)[1]["figure"]["data"]
    assert [trace["name"].split(" (")[0] for trace in curves] == ["dim 3"]
    assert (app.query_params["pe_d_model"], app.query_params["pe_dimensions"]) == ("64", "3")

    app.slider(key="pe_offset").set_value(17).run()
    no_exceptions(app)
    assert "PE(pos + 17)" in charts(app)[3]["figure"]["layout"]["title"]["text"]


def test_model_page_shows_configuration_training_curves_and_schedule(checkpoint: Path):
    app = run_page(MODEL)
    no_exceptions(app)
    shown = charts(app)
    # Training curves and health from the run's metrics.jsonl, the learning-rate schedule, the schedule on the log,
    # the label-smoothed target and the losses under label smoothing (tests/test_training_log.py).
    assert len(shown) == 6
    curves = {trace["name"]: trace for trace in shown[0]["figure"]["data"]}
    assert len(array(curves["training loss"]["y"])) == 600 // 50
    assert len(array(curves["dev loss"]["y"])) >= 1
    # Health: one line per encoder layer (tiny: 2) with the values the trainer logged at its validation.
    logged = [r for r in read_metrics(checkpoint.parent.parent / "metrics.jsonl") if r.get("kind") == "dev"]
    health = shown[1]["figure"]
    cosines = [t for t in health["data"] if t["xaxis"] == "x" and t["name"].startswith("layer")]
    assert [array(t["y"])[-1] for t in cosines] == pytest.approx(logged[-1]["encoder_position_cosine"], abs=1e-6)
    assert {metric.label: metric.value for metric in app.metric}["d_model"] == "32"
    table = app.dataframe[0].value
    assert table["parameters"].iloc[-1] == table["parameters"].iloc[:-1].sum()
    # The schedule starts from the trainer's own settings (conftest: --warmup 100 --lr-scale 0.5).
    assert app.slider(key="lr_warmup").value == 100 and app.slider(key="lr_scale").value == 0.5
    assert "warm-up = 100," in shown[2]["figure"]["layout"]["title"]["text"]

    app.slider(key="lr_warmup").set_value(500).run()
    no_exceptions(app)
    schedule = charts(app)[2]["figure"]
    assert "warm-up = 500," in schedule["layout"]["title"]["text"]
    x, y = array(schedule["data"][0]["x"]), array(schedule["data"][0]["y"])
    assert x[np.argmax(y)] == 500


def test_model_page_without_a_log_shows_the_model_card_and_scores(shipped_copy: Path):
    app = run_page(MODEL)
    no_exceptions(app)
    assert len(charts(app)) == 2  # no training curves, only the schedule and the label-smoothed target
    assert any("No training log" in info.value for info in app.info)
    assert not app.error
    assert any("word for word" in markdown.value for markdown in app.markdown)
    assert app.slider(key="lr_warmup").value == 300 and app.slider(key="lr_scale").value == pytest.approx(0.7)
    assert any(json.loads(element.value) == {"newstest2014 BLEU": 1.5} for element in app.json)


def test_model_page_places_a_fine_tuned_checkpoint_on_its_own_schedule(shipped_copy: Path):
    meta = read_json(shipped_copy / "meta.json")
    write_json(
        shipped_copy / "meta.json", {**meta, "fine_tuned_from": {"checkpoint": "base", "step": meta["step"] - 200}}
    )
    app = run_page(MODEL)
    no_exceptions(app)
    assert any("fine-tuned from `base`" in caption.value for caption in app.caption)
    marker = charts(app)[0]["figure"]["data"][1]  # the schedule: the page's first chart without a log
    assert array(marker["x"]).tolist() == [200]  # steps since the schedule restarted, not since the first run began


def test_model_page_draws_a_runs_cool_down(shipped_copy: Path):
    meta = read_json(shipped_copy / "meta.json")
    arguments = {"warmup": 300, "lr_scale": 0.7, "cooldown": 400, "max_steps": meta["step"] + 100}
    write_json(
        shipped_copy / "meta.json",
        {**meta, "training_args": arguments, "fine_tuned_from": {"checkpoint": "base", "step": meta["step"] - 600}},
    )
    app = run_page(MODEL)
    no_exceptions(app)
    assert any("--cooldown 400" in caption.value for caption in app.caption)
    schedule = charts(app)[0]["figure"]
    assert "cool-down = 400 to step 700" in schedule["layout"]["title"]["text"]
    x, y = array(schedule["data"][0]["x"]), array(schedule["data"][0]["y"])
    # The paper's curve until step 300 of the cool-down's window, then a straight fall to (almost) zero at step 700.
    assert y[x == 300][0] == pytest.approx(learning_rate(300, 32, 300, 0.7))
    assert y[x == 700][0] == pytest.approx(learning_rate(700, 32, 300, 0.7) / 400)
    assert (y[x > 700] == 0).all() and (np.diff(y[(x >= 301) & (x <= 700)]) < 0).all()


@pytest.mark.parametrize("page", [POSITIONAL, MODEL, FIGURES, HEADS, STEPS])
def test_a_broken_checkpoint_is_explained_not_raised(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{truncated", encoding="utf-8")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(broken))
    app = run_page(page)
    no_exceptions(app)
    assert not app.get("plotly_chart")
    (error,) = [plain(error.value) for error in app.error]
    assert "Cannot load checkpoint" in error and "config.json: not valid JSON" in error
    assert "retrain" in error and "checkpoints/" in error


def test_figure_download_format_holds_across_pages(checkpoint: Path, tmp_path: Path):
    # A minimal main script next to the real pages folder, so that the test can move between pages.
    (tmp_path / "pages").symlink_to(PAGES, target_is_directory=True)
    (tmp_path / "main.py").write_text(
        "from pages.models import sidebar_checkpoint_picker\nsidebar_checkpoint_picker()\n", encoding="utf-8"
    )
    app = AppTest.from_file(str(tmp_path / "main.py"), default_timeout=120).run()
    app.switch_page(f"pages/{POSITIONAL}").run()
    assert {chart["config"]["toImageButtonOptions"]["format"] for chart in charts(app)} == {"png"}
    app.sidebar.radio[0].set_value("svg").run()
    assert {chart["config"]["toImageButtonOptions"]["format"] for chart in charts(app)} == {"svg"}
    app.switch_page("main.py").run()  # a page without the format control
    app.switch_page(f"pages/{MODEL}").run()
    no_exceptions(app)
    assert {chart["config"]["toImageButtonOptions"]["format"] for chart in charts(app)} == {"svg"}
    assert all(chart["config"]["displaylogo"] is False for chart in charts(app))


def titles(app: AppTest) -> list[str]:
    return [chart["figure"]["layout"]["title"]["text"] for chart in charts(app)]


def legend(chart: dict) -> list[str]:
    return [trace["name"] for trace in chart["figure"]["data"] if trace.get("showlegend") is not False]


def labels(chart: dict) -> str:
    return " ".join(" ".join(trace["text"]) for trace in chart["figure"]["data"] if trace.get("mode") == "text")


def test_paper_figures_page_draws_figures_3_to_5_and_follows_its_controls(checkpoint: Path):
    app = run_page(FIGURES)
    no_exceptions(app)
    shown = titles(app)
    assert [title.split(" —")[0] for title in shown[:5]] == [
        "Figure 3",
        "Figure 4 (top)",
        "Figure 4 (bottom)",
        "Figure 5",
        "Figure 5",
    ]
    assert len(shown) == 6 and "at step" in shown[5]  # the score heatmap
    # The tiny model has 2 layers, so the paper's "layer 5" is clipped to the last one.
    assert "layer 2" in shown[0]
    assert any("Many of the attention heads attend to a distant dependency" in m.value for m in app.markdown)
    assert any("In diesem Sinne" in m.value for m in app.markdown)  # the reference translation
    assert "&lt;pad&gt;" in labels(charts(app)[0]) and "&lt;EOS&gt;" in labels(charts(app)[0])

    app.selectbox(key="fig_layer__en").set_value(0).run()
    no_exceptions(app)
    assert all("layer 1" in title for title in titles(app)[:5])

    app.multiselect(key="fig3_heads").set_value([2]).run()
    assert legend(charts(app)[0]) == ["head 3"]
    # each head a figure draws opens its card in the head atlas, and only those heads
    assert [b.label for b in app.button if (b.key or "").startswith("figure_3_atlas_")] == ["head 3"]
    app.multiselect(key="fig3_heads").set_value([]).run()
    no_exceptions(app)
    assert any("at least one head" in info.value for info in app.info)
    assert not titles(app)[0].startswith("Figure 3")

    # Layers and heads are counted from 1, as on every page: the page no longer asks how to count them.
    assert not [radio for radio in app.sidebar.radio if radio.key == "fig_first"]
    assert "head 0" not in " ".join(legend(charts(app)[0]) + legend(charts(app)[1]) + legend(charts(app)[2]))
    app.sidebar.toggle(key="fig_specials").set_value(False).run()
    assert "pad" not in labels(charts(app)[0]) and "EOS" not in labels(charts(app)[0])


def test_paper_figures_page_replays_the_timeline(trained_checkpoint: Path, tmp_path: Path, monkeypatch):
    folder = shutil.copytree(trained_checkpoint, tmp_path / "with-timeline")
    early = uniform_encoder_copy(trained_checkpoint, tmp_path / "early", step=5)
    assert timeline_cli.main([str(early), str(folder), "--out", str(folder / timeline.TIMELINE_FILE)]) == 0
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    app = run_page(FIGURES)
    no_exceptions(app)
    slider = app.select_slider(key="fig_step__en")
    loaded_step = slider.value
    assert loaded_step == read_json(folder / "meta.json")["step"]  # the loaded model, the last point
    trained = charts(app)[1]["figure"]["data"]
    slider.set_value(5).run()
    no_exceptions(app)
    assert any("Showing step 5" in caption.value for caption in app.caption)
    early_figure = charts(app)[1]["figure"]["data"]
    assert early_figure != trained
    assert any("only for the loaded model" in m.value for m in app.markdown)
    app.selectbox(key="fig_score__en").set_value("entropy").run()
    early_entropy = array(charts(app)[-1]["figure"]["data"][0]["z"])
    assert app.query_params["fig_step"] == "5" and app.query_params["fig_score"] == "entropy"
    app.select_slider(key="fig_step__en").set_value(loaded_step).run()
    trained_entropy = array(charts(app)[-1]["figure"]["data"][0]["z"])
    assert early_entropy.min() > trained_entropy.mean()  # uniform heads are the broadest there are
    assert "95%" in charts(app)[-1]["figure"]["data"][0]["hovertemplate"]  # each head's interval on hover
    assert any("95% interval over the" in caption.value for caption in app.caption)

    # "Show the best example" jumps to the step and layer where Figure 3 draws the most heads going from "making" to
    # "more"/"difficult", counted on the attention the page draws at each step.
    (best,) = [button for button in app.button if button.label == "Show the best example"]
    best.click().run()
    no_exceptions(app)
    points = {point.step: point for point in timeline.load_timeline(folder / timeline.TIMELINE_FILE)}
    points[loaded_step] = precompute.read(load_checkpoint(folder)).point
    counts = {
        step: making_metrics(point.attention[3].weights, point.attention[3].tokens)["heads_on_more_difficult_per_layer"]
        for step, point in points.items()
    }
    chosen, layer = app.select_slider(key="fig_step__en").value, app.selectbox(key="fig_layer__en").value
    most = max(max(per_layer) for per_layer in counts.values())
    assert counts[chosen][layer] == most == making_count(app)
    assert any("cannot show the paper's example" in info.value for info in app.info) == (most == 0)


def findings(app: AppTest, words: str) -> str:
    """The one "This model:" sentence beside a figure that contains ``words``."""
    (text,) = [m.value for m in app.markdown if m.value.startswith("**This model:**") and words in m.value]
    return text


def table_with(app: AppTest, column: str):
    """The one per-head table on the page with this column, indexed by head as shown."""
    (table,) = [frame.value for frame in app.dataframe if column in frame.value.columns]
    return table.set_index("head")


def making_count(app: AppTest) -> int:
    """The heads of Figure 3's table whose strongest other word from "making" is "more" or "difficult"."""
    return int(table_with(app, "strongest other word")["strongest other word"].isin(["more", "difficult"]).sum())


LAW, APPLICATION = "“its” → “Law”", "“its” → “application”"


def test_paper_figures_say_where_the_model_falls_short_of_the_paper_and_where_it_does_it(checkpoint: Path):
    """Fewer than the paper's 3 heads in the layer shown: the page says so, names the layer where the model does it
    most (one click away) and how to see a stronger model; with 3 or more, it says nothing of the kind."""
    app = run_page(FIGURES)
    no_exceptions(app)
    for layer in (1, 0):
        app.selectbox(key="fig_layer__en").set_value(layer).run()
        (shown,) = [metric for metric in app.metric if metric.label.startswith("Heads of layer")]
        count = int(shown.value.split(" of ")[0])
        notes = [plain(info.value) for info in app.info if "Short of the paper" in info.value]
        assert bool(notes) == (count < 3), (layer, count, notes)
        if notes:
            assert "docs/models.md" in notes[0] and f"{count} head(s) of layer {layer + 1}" in notes[0]
            # and what the model does instead, measured on other sentences: the head that looks furthest
            mass = precompute.measured(load_checkpoint(checkpoint)).tables.score("encoder", "long_range_mass")
            far_layer, far_head = np.unravel_index(np.nanargmax(mass), mass.shape)
            assert f"looks furthest is layer {far_layer + 1}, head {far_head + 1}: " in notes[0]
        jump = [button for button in app.button if button.key == "fig_go_to_best"]
        if jump:
            best = int(jump[0].label.split()[-1]) - 1
            jump[0].click().run()
            no_exceptions(app)
            assert app.selectbox(key="fig_layer__en").value == best


def test_paper_figures_findings_state_the_numbers_of_the_table_beside_them(checkpoint: Path):
    """A sentence that states a number or names a head takes it from the table beside it: the same layer, the same
    head, the same rounding. So do the whole model's best "its" head and its weights."""
    app = run_page(FIGURES)
    no_exceptions(app)
    for layer in range(len(app.selectbox(key="fig_layer__en").options)):
        app.selectbox(key="fig_layer__en").set_value(layer).run()
        no_exceptions(app)
        # Figure 3: the heads counted are the table's rows on "more"/"difficult", and so is the metric.
        stated = re.search(r"(\d+) head\(s\) of layer (\d+)", findings(app, "from “making”"))
        assert (int(stated[1]), int(stated[2])) == (making_count(app), layer + 1)
        # Figure 4: the head with the most weight on "Law" or "application" in the table, and its two weights.
        text = findings(app, "“its” head")
        table = table_with(app, LAW)
        strength = table[[LAW, APPLICATION]].max(axis=1)
        named = re.search(r"head (\d+)\b", text)
        head = int(named[1]) if named else int(strength.idxmax())
        weights = re.search(r"puts ([\d.]+) on “Law” and ([\d.]+) on “application”", text)
        assert f"layer {layer + 1} " in text and strength[head] == strength.max(), text
        assert (float(weights[1]), float(weights[2])) == (table.loc[head, LAW], table.loc[head, APPLICATION]), text
        assert named, f"the sentence does not say which head: {text}"

    caption = next(c.value for c in app.caption if c.value.startswith("Best head of the whole model"))
    best_layer, best_head = (int(n) for n in re.search(r"layer (\d+), head (\d+)", caption).groups())
    shown = {metric.label: float(metric.value) for metric in app.metric if metric.label.startswith("Best head:")}
    app.selectbox(key="fig_layer__en").set_value(best_layer - 1).run()
    table = table_with(app, LAW)
    strength = table[[LAW, APPLICATION]].max(axis=1)
    assert strength[best_head] == strength.max()
    assert shown == {
        f"Best head: {LAW}": table.loc[best_head, LAW],
        f"Best head: {APPLICATION}": table.loc[best_head, APPLICATION],
    }


def test_best_example_opens_a_layer_where_figure_3_shows_the_example(
    trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """After "Show the best example", Figure 3 shows as many heads completing "making … more difficult" as any step
    and layer has (counted in the page's own tables), and its sentence says so; when none has one, the page says
    that. The run's timeline holds an earlier snapshot whose sharpest "its" head sits in the layer where Figure 3
    has the fewest heads, so the two figures point to different layers."""
    folder = shutil.copytree(trained_checkpoint, tmp_path / "with-timeline")
    live = precompute.read(load_checkpoint(folder)).point
    making = live.attention[3]
    counts = making_metrics(making.weights, making.tokens)["heads_on_more_difficult_per_layer"]
    weak = counts.index(min(counts))
    law = live.attention[4]
    groups = word_groups(law.tokens)
    its, target = groups[word_index(law.tokens, "its")], groups[word_index(law.tokens, "Law")]
    weights = law.weights.copy()
    weights[weak, 0, its, :] = 0
    weights[weak, 0, its, target[0]] = 1  # one head of that layer resolves "its" perfectly
    sharp = SentenceAttention(law.tokens, weights)
    attention = {3: making, 4: sharp, 5: sharp}
    early = timeline.TimelinePoint(5, 0.01, "sharp its", attention, figure_metrics(attention), live.scores)
    timeline.save_timeline([early], folder / timeline.TIMELINE_FILE)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))

    app = run_page(FIGURES)
    no_exceptions(app)
    shown = {}
    for step in (early.step, live.step):
        app.select_slider(key="fig_step__en").set_value(step).run()
        for layer in range(len(counts)):
            app.selectbox(key="fig_layer__en").set_value(layer).run()
            shown[step, layer] = making_count(app)
    most = max(shown.values())
    (best,) = [button for button in app.button if button.label == "Show the best example"]
    best.click().run()
    no_exceptions(app)
    chosen = (app.select_slider(key="fig_step__en").value, app.selectbox(key="fig_layer__en").value)
    stated = int(re.search(r"(\d+) head\(s\) of layer", findings(app, "from “making”"))[1])
    assert stated == making_count(app) == shown[chosen] == most, (chosen, shown)
    assert any("cannot show the paper's example" in info.value for info in app.info) == (most == 0)
    # Figure 3 opens on exactly those heads (all of them when there are none).
    assert len(legend(charts(app)[0])) == (most or len(table_with(app, "strongest other word")))


def test_head_discovery_page_scores_every_head(checkpoint: Path):
    app = run_page(HEADS)
    no_exceptions(app)
    (heatmap,) = charts(app)
    assert array(heatmap["figure"]["data"][0]["z"]).shape == (2, 4)
    assert len(app.dataframe[0].value) == 2 * 4
    # Over the dev sample, each score says how far it could move: its interval in the hover, the best head's in
    # words, and the chosen score's bounds in the table, around each head's value.
    assert "95%" in heatmap["figure"]["data"][0]["hovertemplate"]
    assert any("95% interval over" in caption.value for caption in app.caption)
    table = app.dataframe[0].value
    score = app.selectbox(key="heads_score__en").value
    low, high = table["interval_low"], table["interval_high"]
    assert (low <= table[score] + 1e-4).all() and (table[score] <= high + 1e-4).all() and (low < high).any()
    assert {metric.label.split(":")[0] for metric in app.metric} >= {"Figure 3", "Figure 4"}

    app.radio(key="heads_kind__en").set_value("cross-attention").run()
    no_exceptions(app)
    assert app.selectbox(key="heads_score__en").value == "alignment_dictionary"
    assert app.selectbox(key="heads_score__en").options[0] == "Alignment with dictionary translations"  # readable
    assert "cross-attention" in titles(app)[0]
    # Shares are drawn on a fixed 0–1 scale, so a model whose heads all score near 0 looks near 0.
    assert (charts(app)[0]["figure"]["data"][0]["zmin"], charts(app)[0]["figure"]["data"][0]["zmax"]) == (0, 1)

    # The decoder's masked self-attention heads are scored too, without the score its mask fixes at 0.
    app.radio(key="heads_kind__en").set_value("decoder self-attention").run()
    no_exceptions(app)
    assert "decoder self-attention" in titles(app)[0]
    assert array(charts(app)[0]["figure"]["data"][0]["z"]).shape == (2, 4)
    assert "Weight on the previous token" in app.selectbox(key="heads_score__en").options
    assert "Weight on the next token" not in app.selectbox(key="heads_score__en").options
    assert len(app.dataframe[0].value) == 2 * 4

    app.radio(key="heads_source__en").set_value("one sentence").run()
    no_exceptions(app)
    assert any("one sentence" in caption.value for caption in app.caption)
    assert any("One sentence gives no interval" in caption.value for caption in app.caption)
    app.text_input(key="heads_sentence").set_value("  ").run()
    no_exceptions(app)
    assert any("Type a sentence" in info.value for info in app.info)


def reopen(app: AppTest, page: str) -> AppTest:
    """The page opened afresh from the link ``app`` shows now (a new session: only the URL carries over)."""
    copy = AppTest.from_file(str(PAGES / page), default_timeout=120)
    for key, value in app.query_params.items():
        copy.query_params[key] = value
    return copy.run()


def test_a_paper_figures_link_reproduces_the_view(checkpoint: Path):
    app = run_page(FIGURES)
    app.sidebar.toggle(key="fig_words").set_value(False).run()
    app.selectbox(key="fig_layer__en").set_value(0).run()
    app.multiselect(key="fig3_heads").set_value([1, 3]).run()
    app.multiselect(key="fig5_heads").set_value([0]).run()
    app.selectbox(key="fig_score__en").set_value("entropy").run()
    copy = reopen(app, FIGURES)
    no_exceptions(copy)
    assert copy.selectbox(key="fig_layer__en").value == 0 and copy.multiselect(key="fig3_heads").value == [1, 3]
    assert copy.sidebar.toggle(key="fig_words").value is False
    assert [chart["figure"] for chart in charts(copy)] == [chart["figure"] for chart in charts(app)]


def test_a_head_discovery_link_reproduces_the_view(checkpoint: Path):
    app = run_page(HEADS)
    app.radio(key="heads_source__en").set_value("one sentence").run()
    app.text_input(key="heads_sentence").set_value("The dog chased its tail.").run()
    app.radio(key="heads_kind__en").set_value("cross-attention").run()
    app.selectbox(key="heads_score__en").set_value("alignment_consensus").run()
    copy = reopen(app, HEADS)
    no_exceptions(copy)
    assert copy.text_input(key="heads_sentence").value == "The dog chased its tail."
    assert copy.radio(key="heads_kind__en").value == "cross-attention"
    assert charts(copy)[0]["figure"] == charts(app)[0]["figure"]


def test_malformed_links_fall_back_to_defaults(checkpoint: Path):
    for page, query in (
        (FIGURES, {"fig_layer": "99", "fig3_heads": "1,x", "fig_step": "-4"}),
        (HEADS, {"heads_sample": "1e9", "heads_kind": "<b>", "heads_score": "nonsense"}),
        (POSITIONAL, {"pe_d_model": "33", "pe_dimensions": "5000", "pe_offset": "-1"}),
        (MODEL, {"lr_warmup": "nan", "lr_scale": "inf", "lr_steps": "12"}),
        (STEPS, {"steps_layer": "40", "steps_head": "0", "steps_query": "999", "steps_step": "x", "steps_kind": "?"}),
    ):
        app = AppTest.from_file(str(PAGES / page), default_timeout=120)
        for key, value in query.items():
            app.query_params[key] = value
        app.run()
        no_exceptions(app)
        assert charts(app), page


def test_model_page_shows_no_folder_of_the_training_machine(shipped_copy: Path):
    meta = read_json(shipped_copy / "meta.json")
    write_json(
        shipped_copy / "meta.json",
        {
            **meta,
            "data": ["/home/trainer/data/en-de/train/tatoeba"],
            "fine_tuned_from": {"checkpoint": "/home/trainer/candidates/base", "step": meta["step"] - 200},
        },
    )
    app = run_page(MODEL)
    no_exceptions(app)
    shown = " ".join(str(element.value) for element in [*app.markdown, *app.caption, *app.json, *app.info])
    assert "/home/trainer" not in shown and str(shipped_copy.parent) not in shown
    assert "fine-tuned from `base`" in shown and "en-de/train/tatoeba" in shown


def test_step_by_step_page_walks_through_one_head(checkpoint: Path):
    app = run_page(STEPS)
    no_exceptions(app)
    assert app.radio(key="steps_kind__en").value == "encoder" and app.select_slider(key="steps_step__en").value == 1
    first = charts(app)[0]  # the open step; the other tabs follow
    assert "Input rows, layer 1, head 1" in first["figure"]["layout"]["title"]["text"]
    # Layer 1 starts from the scaled embedding plus the positional encoding: X is their sum, cell by cell.
    embedding, positional, x = (array(trace["z"]) for trace in first["figure"]["data"])
    np.testing.assert_allclose(embedding + positional, x, atol=1e-4)
    assert any("Step 1 of 11" in header.value for header in app.main.header)

    app.button[1].click().run()  # Next →
    assert app.select_slider(key="steps_step__en").value == 2
    assert [panel["text"].split(" [")[0] for panel in charts(app)[0]["figure"]["layout"]["annotations"]] == [
        "Q",
        "K",
        "V",
    ]

    # Decoder self-attention: the masked scores hide every later position, and the weights are the app's map.
    app.radio(key="steps_kind__en").set_value("decoder").run()
    app.select_slider(key="steps_step__en").set_value(5).run()
    no_exceptions(app)
    masked = array(charts(app)[0]["figure"]["data"][0]["z"])
    assert np.isnan(masked[np.triu_indices(len(masked), 1)]).all() and not np.isnan(np.diag(masked)).any()
    app.select_slider(key="steps_step__en").set_value(6).run()
    weights = array(charts(app)[0]["figure"]["data"][0]["z"])
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-5)
    assert any("Translate and explore" in caption.value for caption in app.caption)

    app.toggle(key="steps_all").set_value(True).run()
    no_exceptions(app)
    assert len(app.main.header) == 11
    assert sum("largest difference" in caption.value for caption in app.caption) == 3


def open_step_tab(app: AppTest, tab: str) -> AppTest:
    """Choose a tab as a click does (the testing API has no tab clicks): set the tabs' state and rerun."""
    app.session_state["steps_tab"] = tab
    return app.run()


def test_classroom_tabs_show_scaling_heads_and_decoding(checkpoint: Path):
    app = run_page(STEPS)
    assert app.query_params["steps_tab"] == "steps"
    assert not any(title.startswith("Why ÷√d_k") for title in titles(app))  # only the open tab is built
    shown = titles(open_step_tab(app, "scaling"))
    assert app.query_params["steps_tab"] == "scaling"
    assert any(title.startswith("Why ÷√d_k") and "d_k = 64" in title for title in shown)
    assert any(title.startswith("The loaded model, layer 1, head 1") for title in shown)
    app.select_slider(key="steps_dk").set_value(1024).run()
    assert any("d_k = 1024" in title for title in titles(app))
    assert any("every head of layer 1" in title for title in titles(open_step_tab(app, "multihead")))
    assert any(title.startswith("Step 0: reads") for title in titles(open_step_tab(app, "decoding")))
    app.slider(key="steps_t").set_value(2).run()
    no_exceptions(app)
    decoding = next(chart for chart in charts(app) if chart["figure"]["layout"]["title"]["text"].startswith("Step "))
    assert decoding["figure"]["layout"]["title"]["text"].startswith("Step 2: reads")
    # The self-attention row of position 2 shows positions 0–2; the later ones are drawn as masked.
    row = array(decoding["figure"]["data"][0]["y"])
    assert np.isfinite(row[:3]).all() and np.isnan(row[3:]).all()
    assert decoding["figure"]["data"][1]["name"] == "masked"


def test_a_step_by_step_link_reproduces_the_view(checkpoint: Path):
    app = run_page(STEPS)
    app.text_input(key="steps_text").set_value("the dog sat.").run()
    app.radio(key="steps_kind__en").set_value("cross").run()
    app.selectbox(key="steps_layer").set_value(2).run()
    app.selectbox(key="steps_head").set_value(3).run()
    app.selectbox(key="steps_query").set_value(1).run()
    app.select_slider(key="steps_step__en").set_value(6).run()
    copy = reopen(app, STEPS)
    no_exceptions(copy)
    assert copy.selectbox(key="steps_head").value == 3 and copy.select_slider(key="steps_step__en").value == 6
    assert [chart["figure"] for chart in charts(copy)] == [chart["figure"] for chart in charts(app)]


def test_presenter_mode_enlarges_figures_and_hides_the_sidebar(checkpoint: Path):
    app = AppTest.from_file(str(PAGES / STEPS), default_timeout=120)
    app.query_params["present"] = "1"
    app.query_params["steps_step"] = "6"
    app.run()
    no_exceptions(app)
    assert app.sidebar.toggle(key="present").value is True
    styles = [element.proto.body for element in app.get("html")]
    assert any("stSidebar" in style and "display: none" in style for style in styles)
    weights = charts(app)[0]["figure"]
    assert weights["layout"]["font"]["size"] == 20 and weights["layout"]["height"] >= 760
    # The pale sequential scale gives way to a high-contrast one; the signed steps keep their diverging scale.
    hot = [list(pair) for pair in go.Heatmap(colorscale="Hot_r").colorscale]
    assert [list(pair) for pair in weights["data"][0]["colorscale"]] == hot
    next(button for button in app.button if button.label == "Leave presenter mode").click().run()
    no_exceptions(app)
    assert charts(app)[0]["figure"]["layout"]["font"]["size"] == 12
    assert not any("stSidebar" in element.proto.body for element in app.get("html"))
    assert app.query_params["present"] == "0"


def test_a_multiselect_handing_back_its_labels_falls_back_to_the_default(checkpoint: Path):
    """The robot visitor's 2,000-action journey: after d_model went down and back up, the sinusoid multiselect
    handed back its choices as text, and the page failed with "'<=' not supported between 'int' and 'str'"."""
    app = run_page(POSITIONAL)
    defaults = app.multiselect(key="pe_dimensions").value
    app.session_state["pe_dimensions"] = ["1", "513"]
    app.run()
    no_exceptions(app)
    assert app.multiselect(key="pe_dimensions").value == defaults


@pytest.mark.parametrize("package", ["pages.explore", "pages.what_if_tabs"])
def test_a_tab_is_one_module_and_one_line(package: str):
    """Every module of a page's tab package that declares a ``TAB`` is in the package's ``TABS`` (the page's tab
    strip, in order), each tab has its label in every language, and no two tabs own a control: a new tab needs its
    module and one line."""
    import importlib
    import pkgutil

    from pages import tabs

    declared = importlib.import_module(package).TABS
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        tab = getattr(importlib.import_module(f"{package}.{info.name}"), "TAB", None)
        if tab is not None:
            found.append(tab)
    assert sorted(tab.name for tab in found) == sorted(tab.name for tab in declared) and len(found) >= 6
    assert len(tabs.fields_of(declared)) == sum(len(tab.fields) for tab in declared)
    for tab in declared:
        assert t_label_exists(tab.label), tab.label
    if package == "pages.explore":  # the main page's URL holds every tab's controls, and its fragment restores them
        from pages import explore

        assert set(tabs.fields_of(declared)) <= set(explore.FIELDS) and set(explore.VIEWS_KEYS) > set(
            tabs.fields_of(declared)
        )


def t_label_exists(key: str) -> bool:
    from transformer.features.i18n import message

    return message("en", key) != key and message("ko", key) != key


def test_two_tabs_cannot_own_the_same_control_and_only_the_open_tab_is_drawn(monkeypatch):
    from pages import tabs
    from pages.url_state import Field

    first = tabs.Tab("one", "explore.view_heads", lambda context: drawn.append(("one", context)), {"x": Field(1)})
    second = tabs.Tab("two", "explore.view_bertviz", lambda context: drawn.append(("two", context)), {"x": Field(2)})
    with pytest.raises(ValueError, match="another tab owns"):
        tabs.fields_of([first, second])

    class Strip:
        def __init__(self, is_open: bool):
            self.open = is_open

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

    drawn: list = []
    monkeypatch.setattr(tabs.url_state, "tabs", lambda key, labels, widget: {"one": Strip(False), "two": Strip(True)})
    tabs.show([first, second], "view", "view_tab", "context")
    assert drawn == [("two", "context")]


def test_every_page_runs_in_a_page_block_that_saves_its_link():
    """A page's controls reach the URL however its run ends: each page script runs in ``with page(…)``
    (pages/common.py), and ends early only with ``leave_page()``, never ``st.stop()``, which would skip the save."""
    from pages.navigation import PAGE_SCRIPTS

    for script in PAGE_SCRIPTS:
        source = (PAGES / script).read_text(encoding="utf-8")
        assert "\nwith page(" in source, script
        assert "st.stop()" not in source and "url_state.save(" not in source, script
    main_page = (PAGES / "explore" / "__init__.py").read_text(encoding="utf-8")  # run by pages/translate.py
    assert "with page(" in main_page and main_page.count("with fragment_of(") == 2
    assert "st.stop()" not in main_page and "url_state.save(" not in main_page and "url_state.keep(" not in main_page


# Streamlit calls that draw their first argument as Markdown
MARKDOWN_CALLS = {"error", "warning", "info", "success", "markdown", "caption", "write", "toast", "exception"}
# A value whose source reads like text from outside the program: a visitor's input, a file, a model's output, an
# error; numbers, the app's own labels and head names are not.
OUTSIDE_TEXT = re.compile(
    r"error|name|choice|typed|path|message|problem|failure|words|sentence|text|label|translation|caption|source|"
    r"output|word|relation|reading|where|folder|file|log|parent|treebank|probe|str\(|title|reason|what"
)
# Calls whose result is safe in Markdown: the escape itself, messages, numbers, and the app's own labels. A
# lesson's texts (Lesson.words, Step.words) are the teacher's Markdown by design; lessons open only from the
# server's lessons folder, and Streamlit shows any HTML in them as text.
SAFE_IN_MARKDOWN = {
    "escaped", "error_line", "html.escape", "t", "len", "int", "float", "round", "sum", "min", "max", "abs",
    "article", "head_name", "decoding_label", "step_link", "lesson.words", "step.words",
}  # fmt: skip


def unescaped_values(source: str) -> list[str]:
    """The values a Markdown call formats (``t(…)`` fields and f-string parts) that read like outside text and are
    not escaped."""
    import ast
    import string

    from transformer.features.i18n import catalogue

    messages = catalogue("en")
    found: list[str] = []

    def numeric(key: str, field: str) -> bool:
        """Whether message ``key`` formats ``field`` as a number (``{share:.0%}``, ``{records:,}``)."""
        spec = {name: spec for _, name, spec, _ in string.Formatter().parse(messages.get(key, "")) if name}.get(field)
        return bool(spec) and (spec[-1] in "bcdeEfFgGn%" or "," in spec)

    def safe(value) -> bool:
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Call) and ast.unparse(value.func) in SAFE_IN_MARKDOWN:
            return True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "capitalize":
            return safe(value.func.value)
        if isinstance(value, ast.BinOp) and not isinstance(value.op, ast.Add):  # arithmetic: a number
            return True
        if isinstance(value, ast.BoolOp):
            return all(safe(part) for part in value.values)
        if isinstance(value, ast.IfExp):
            return safe(value.body) and safe(value.orelse)
        return not OUTSIDE_TEXT.search(ast.unparse(value))

    def visit(node) -> None:
        if isinstance(node, ast.Call) and ast.unparse(node.func) in SAFE_IN_MARKDOWN - {"t"}:
            return  # everything inside is escaped (or safe) as a whole
        values = []
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "t":
            key = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else ""
            values = [
                keyword.value for keyword in node.keywords if keyword.arg is None or not numeric(key, keyword.arg)
            ]
        elif isinstance(node, ast.JoinedStr):
            values = [part.value for part in node.values if isinstance(part, ast.FormattedValue)]
        found.extend(ast.unparse(value) for value in values if not safe(value))
        for child in ast.iter_child_nodes(node):
            visit(child)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MARKDOWN_CALLS:
            for argument in node.args[:1]:
                visit(argument)
    return found


def test_every_outside_text_a_page_shows_as_markdown_is_escaped():
    """A name typed into a box or carried by a link, an error message, a folder's name, a model's output: each goes
    through pages.i18n.escaped before st.markdown, st.error and the like draw it (an unescaped
    ``![x](http://elsewhere/p.png)`` made every visitor's browser fetch the image)."""
    root = Path(__file__).resolve().parent.parent
    files = [*sorted((root / "pages").rglob("*.py")), root / "app.py"]
    found = {
        str(path.relative_to(root)): values
        for path in files
        if (values := unescaped_values(path.read_text(encoding="utf-8")))
    }
    assert found == {}
    # and the check can fail: the shape of the defect it was written for
    assert unescaped_values('st.error(t("whatif.other_failed", name=other_name, message=str(error)))') == [
        "other_name",
        "str(error)",
    ]
    assert unescaped_values('st.markdown(f"**{html.escape(label)}** {typed}")') == ["typed"]
