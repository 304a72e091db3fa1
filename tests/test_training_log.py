"""A model's own training log against the paper: §5.4's label-smoothing floor computed two independent ways, §5.3's
formula against the recorded learning rate of the shipped log, the figures drawn from that log, and the model page's
label-smoothing control."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

from tests.conftest import array, charts, no_exceptions
from transformer.analysis.training_log import restarts, schedule_check, smoothed_target, smoothing_floor
from transformer.formats.checkpoint import DEFAULT_CHECKPOINT_NAME, REPOSITORY_CHECKPOINTS, read_json
from transformer.formats.runs import read_metrics
from transformer.paper.schedule import Schedule
from transformer.plots import training as plot_training

SHIPPED = REPOSITORY_CHECKPOINTS / DEFAULT_CHECKPOINT_NAME
SHIPPED_LOG = SHIPPED / "training_log.jsonl"
needs_shipped_log = pytest.mark.skipif(not SHIPPED_LOG.is_file(), reason="the shipped model's training log is absent")
MODEL_PAGE = Path(__file__).resolve().parent.parent / "pages" / "model_and_training.py"


@pytest.mark.parametrize(("epsilon", "vocab"), [(0.1, 8000), (0.1, 37000), (0.3, 50), (0.0, 100)])
def test_the_floor_is_the_entropy_of_the_smoothed_target(epsilon: float, vocab: int):
    target = np.full(vocab, epsilon / vocab)
    target[17] += 1 - epsilon
    nonzero = target[target > 0]
    entropy = float(-(nonzero * np.log(nonzero)).sum())
    floor = smoothing_floor(epsilon, vocab)
    assert floor.loss == pytest.approx(entropy, rel=1e-9, abs=1e-12)
    assert floor.nll == pytest.approx(-math.log(target[17]))
    assert smoothed_target(epsilon, vocab) == pytest.approx((target[17], epsilon / vocab))
    # The trainer's loss reaches it with p = q, and any other prediction scores worse.
    logits = torch.log(torch.tensor(target, dtype=torch.float64)).clamp(min=-1e4)[None]
    label = torch.tensor([17])
    at_floor = F.cross_entropy(logits, label, label_smoothing=epsilon)
    assert float(at_floor) == pytest.approx(floor.loss, rel=1e-6, abs=1e-9)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5 if epsilon > 0 else 0):
        other = logits + 0.5 * torch.randn(logits.shape, generator=generator, dtype=torch.float64)
        assert float(F.cross_entropy(other, label, label_smoothing=epsilon)) > floor.loss


def test_without_smoothing_a_perfect_model_reaches_zero():
    floor = smoothing_floor(0.0, 8000)
    assert floor.loss == 0.0 and floor.nll == 0.0 and floor.perplexity == 1.0
    assert smoothing_floor(0.1, 8000).perplexity > 1.1  # "hurts perplexity"
    with pytest.raises(ValueError):
        smoothing_floor(1.5, 8000)


@needs_shipped_log
def test_the_shipped_logs_recorded_rate_is_the_formula_with_its_recorded_arguments():
    records = read_metrics(SHIPPED_LOG)
    meta = read_json(SHIPPED / "meta.json")
    arguments, start = meta["training_args"], meta["fine_tuned_from"]["step"]
    assert start in restarts(records)
    check = schedule_check(records, Schedule(256, arguments["warmup"], arguments["lr_scale"]), start=start)
    assert len(check.steps) > 10 and min(check.steps) > start
    assert check.largest_relative_gap < 1e-9
    wrong = schedule_check(records, Schedule(256, arguments["warmup"] * 2, arguments["lr_scale"]), start=start)
    assert wrong.largest_relative_gap > 0.1


@needs_shipped_log
def test_the_smoothing_figure_draws_the_logs_own_losses_above_their_floor():
    records = read_metrics(SHIPPED_LOG)
    figure = plot_training.smoothing_on_log(records, 0.1, 8000)
    traces = {trace.name: trace for trace in figure.data}
    assert set(traces) == {"training loss", "training NLL", "dev loss", "dev NLL"}
    train = [r for r in records if r.get("kind") == "train"]
    assert list(traces["training NLL"].y) == [r["nll"] for r in train]
    floors = sorted(shape.y0 for shape in figure.layout.shapes)
    assert floors == pytest.approx([smoothing_floor(0.1, 8000).nll, smoothing_floor(0.1, 8000).loss])
    # Label smoothing's floor holds on the log: no recorded smoothed loss goes below the entropy of the target.
    assert min(traces["training loss"].y) > floors[1] and min(traces["dev loss"].y) > floors[1]

    schedule = plot_training.recorded_schedule(records, Schedule(256, 300, 0.3), start=33469)
    recorded, formula = schedule.data[0], schedule.data[1]
    assert list(recorded.x).count(None) == len([s for s in restarts(records) if s < max(r["step"] for r in train)])
    assert min(formula.x) > 33469 and len(formula.x) == len(
        schedule_check(records, Schedule(256, 300, 0.3), 33469).steps
    )


def test_the_model_page_shows_the_schedule_on_its_log_and_the_smoothing_floor(
    trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    vocab = read_json(trained_checkpoint / "config.json")["vocab_size"]
    app = AppTest.from_file(str(MODEL_PAGE), default_timeout=120).run()
    no_exceptions(app)
    shown = {chart["figure"]["layout"]["title"]["text"]: chart["figure"] for chart in charts(app)}
    on_log = next(figure for title, figure in shown.items() if title.startswith("The learning rate this run recorded"))
    recorded, formula = (array(on_log["data"][i]["y"]) for i in (0, 1))
    assert formula == pytest.approx(recorded, rel=1e-9)  # conftest's run: --warmup 100 --lr-scale 0.5
    metrics = {metric.label: metric.value for metric in app.metric}
    assert float(metrics["Least smoothed loss H(q)"]) == pytest.approx(smoothing_floor(0.1, vocab).loss, abs=1e-4)
    assert any(title.startswith("Label smoothing on this log") for title in shown)

    app.slider(key="ls_epsilon").set_value(0.3).run()
    no_exceptions(app)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert float(metrics["Least smoothed loss H(q)"]) == pytest.approx(smoothing_floor(0.3, vocab).loss, abs=1e-4)
    assert app.query_params["ls_epsilon"] == "0.3"
    again = AppTest.from_file(str(MODEL_PAGE), default_timeout=120)
    again.query_params["ls_epsilon"] = "0.3"
    again.run()
    assert again.slider(key="ls_epsilon").value == pytest.approx(0.3)
