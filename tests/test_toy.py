"""The model trained live in class (transformer/features/toy.py, its figures and its page): it learns to reverse, it
cannot without positional encoding, the √d_k switch does what Eq. 1 says, and the page trains, draws and keeps its
run."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from pages.choices import shown_key
from tests.conftest import array, charts, no_exceptions, rerun_fragments, wire_states
from transformer.features.i18n import LANGUAGES, catalogue
from transformer.features.toy import (
    FIRST_SYMBOL,
    ToySettings,
    batches,
    build_model,
    held_out_inputs,
    make_batch,
    probe_input,
    run_to_end,
    target_of,
    torch_threads,
    train,
)
from transformer.paper.model import MultiHeadAttention, Transformer
from transformer.plots import toy as plot_toy

pytestmark = pytest.mark.training

REPOSITORY = Path(__file__).resolve().parent.parent
PAGE = REPOSITORY / "pages" / "toy_model.py"
HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Small enough for a test, fixed by steps (never by the clock), large enough to learn reversing.
TEST_RUN = ToySettings(
    task="reverse",
    min_length=3,
    max_length=7,
    max_steps=400,
    max_seconds=None,
    stop_at_accuracy=None,
    snapshot_every=100,
    held_out_size=100,
)


# ------------------------------------------------------------------------------------------------ data
def test_tasks_batches_and_the_held_out_set():
    assert target_of("copy", [5, 9, 4]) == [5, 9, 4]
    assert target_of("reverse", [5, 9, 4]) == [4, 9, 5]
    assert target_of("sort", [5, 9, 4]) == [4, 5, 9]
    settings = ToySettings(task="reverse", batch_size=32)
    batch = make_batch(settings, [[5, 9, 4], [6, 7]])
    assert batch.source.tolist() == [[5, 9, 4, 3], [6, 7, 3, 0]]  # x … </s>, padded with 0
    assert batch.target_input.tolist() == [[2, 4, 9, 5], [2, 7, 6, 0]]  # <s> y …
    assert batch.target_output.tolist() == [[4, 9, 5, 3], [7, 6, 3, 0]]  # y … </s>
    held_out = {tuple(symbols) for symbols in held_out_inputs(settings)}
    stream = batches(settings, avoid=held_out)
    for _ in range(20):
        rows = next(stream).source
        assert (rows != 0).sum(dim=1).min() >= settings.min_length + 1
        assert (rows != 0).sum(dim=1).max() <= settings.max_length + 1
        for row in rows.tolist():
            assert tuple(token for token in row if token >= FIRST_SYMBOL) not in held_out
    assert len(set(probe_input(settings))) == settings.max_length  # distinct symbols: one place to look each


def test_settings_refuse_what_cannot_be_built():
    for wrong in ({"task": "shuffle"}, {"heads": 3}, {"min_length": 5, "max_length": 4}, {"alphabet": "aa"}):
        with pytest.raises(ValueError):
            ToySettings(**wrong)


# ------------------------------------------------------------------------------------------------ learning
@pytest.mark.slow
def test_reversing_is_learned_within_a_few_hundred_steps():
    run = run_to_end(TEST_RUN)
    assert [snapshot.step for snapshot in run.snapshots] == [0, 100, 200, 300, 400]
    assert run.snapshots[0].metrics["exact_match"] < 0.05
    assert max(snapshot.metrics["exact_match"] for snapshot in run.snapshots) >= 0.95
    assert run.last.metrics["loss"] < run.snapshots[1].metrics["loss"]
    # The heads found the anti-diagonal: in the top layer some head puts most of each output symbol's weight on the
    # input symbol it copies (the probe's symbols are distinct, so each has one place; spread evenly, each would get
    # about 1/length); the best head reached 0.79 on a 2-core CPU with torch 2.13.
    cross = run.last.attention["cross"]  # [L, H, T, S]
    length = len(run.source_tokens) - 1
    anti_diagonal = cross[-1, :, np.arange(length), np.arange(length)[::-1]]  # [length, H]
    assert anti_diagonal.mean(axis=0).max() > 0.6


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_without_positional_encoding_reversing_is_not_learned(seed: int):
    run = run_to_end(TEST_RUN.replace(positional_encoding=False, seed=seed))
    assert max(snapshot.metrics["exact_match"] for snapshot in run.snapshots) < 0.5


def test_without_positional_encoding_the_encoder_is_permutation_equivariant():
    """Why copy and reverse fail: shuffling the input shuffles the encoder's output the same way, so the decoder
    cannot tell which symbol came first. With the encoding, it can."""
    settings = ToySettings(positional_encoding=False)
    model = build_model(settings).eval()
    assert not model.positional_encoding.any()
    assert Transformer(settings.model_config()).positional_encoding.any()  # the buffer of that instance only
    source = torch.tensor([[4, 9, 6, 12, 7, 3]])
    order = torch.tensor([3, 0, 4, 1, 2, 5])  # </s> stays last
    with torch.no_grad():
        memory, _ = model.encode(source)
        shuffled, _ = model.encode(source[:, order])
        assert torch.allclose(shuffled, memory[:, order], atol=1e-5)
        with_positions = build_model(ToySettings()).eval()
        memory, _ = with_positions.encode(source)
        shuffled, _ = with_positions.encode(source[:, order])
        assert not torch.allclose(shuffled, memory[:, order], atol=1e-2)


def test_a_run_is_reproducible_and_ends_when_asked():
    settings = TEST_RUN.replace(max_steps=30, snapshot_every=10)
    first, second = run_to_end(settings), run_to_end(settings)
    assert [s.metrics.get("loss") for s in first.snapshots] == [s.metrics.get("loss") for s in second.snapshots]
    assert np.array_equal(first.last.attention["cross"], second.last.attention["cross"])
    stopped = list(train(settings, should_stop=lambda: True))
    assert [snapshot.step for snapshot in stopped] == [0, 1]


def test_training_threads_are_given_back():
    before = torch.get_num_threads()
    with pytest.raises(KeyboardInterrupt), torch_threads(1):  # as a page run cut short leaves the block
        assert torch.get_num_threads() == 1
        raise KeyboardInterrupt
    assert torch.get_num_threads() == before


# ------------------------------------------------------------------------------------------------ √d_k
def test_the_scaling_switch_is_eq_1_with_and_without_the_square_root():
    torch.manual_seed(0)
    attention = MultiHeadAttention(d_model=16, num_heads=2).eval()
    x = torch.randn(3, 5, 16)
    mask = torch.ones(3, 1, 1, 5, dtype=torch.bool)
    mask[1, ..., 3:] = False
    q = attention.split_heads(attention.query(x))  # (B, H, T, K)
    k = attention.split_heads(attention.key(x))
    scores = (q @ k.transpose(-2, -1)).masked_fill(~mask, float("-inf"))
    with torch.no_grad():
        for scaled, expected in ((True, torch.softmax(scores / math.sqrt(8), -1)), (False, torch.softmax(scores, -1))):
            attention.scaled = scaled
            explicit, weights = attention(x, mask=mask, need_weights=True)
            assert torch.allclose(weights, expected, atol=1e-6)
            fused, _ = attention(x, mask=mask)  # PyTorch's scaled_dot_product_attention honours it too
            assert torch.allclose(fused, explicit, atol=1e-5)
    assert not torch.allclose(torch.softmax(scores / math.sqrt(8), -1), torch.softmax(scores, -1), atol=1e-2)
    model = build_model(ToySettings(scaled=False))
    assert all(not module.scaled for module in model.modules() if isinstance(module, MultiHeadAttention))
    assert all(
        module.scaled
        for module in Transformer(ToySettings().model_config()).modules()
        if isinstance(module, MultiHeadAttention)
    )


# ------------------------------------------------------------------------------------------------ figures
def test_figures_show_the_curve_and_one_tile_per_layer_and_head():
    settings = TEST_RUN.replace(max_steps=20, snapshot_every=10)
    run = run_to_end(settings)
    curve = plot_toy.training_curve(run.snapshots, "en")
    go.Figure(curve.to_dict())  # every property checked by plotly.py
    names = [trace.name for trace in curve.data]
    assert names == ["training loss", "exact match", "symbols in place"]
    assert list(curve.data[0].x) == [10, 20]  # no loss before the first step
    assert list(curve.data[1].y) == [100 * s.metrics["exact_match"] for s in run.snapshots]
    weights = run.last.attention["cross"]
    tiles = plot_toy.head_tiles(weights, run.output_tokens, run.source_tokens, "cross", run.last.step, "ko")
    go.Figure(tiles.to_dict())
    assert len(tiles.data) == settings.layers * settings.heads
    assert np.allclose(np.asarray(tiles.data[settings.heads + 2].z), weights[1, 2])
    assert tiles.layout.yaxis.ticktext == (*run.output_tokens[:-1], "&lt;/s&gt;")  # tokens shown, not parsed
    assert HANGUL.search(tiles.layout.title.text)
    assert [a.text for a in tiles.layout.annotations][settings.heads + 2] == "2층 헤드 3"  # layer 2, head 3
    with pytest.raises(ValueError):
        plot_toy.head_tiles(weights, run.source_tokens[:-1], run.source_tokens, "cross", 0)


def test_every_word_the_figures_ask_for_exists():
    english, korean = catalogue("en"), catalogue("ko")
    source = (REPOSITORY / "transformer" / "plots" / "toy.py").read_text()
    asked = set(re.findall(r"""text\[\s*f?["']([\w{}]+)["']""", source))
    keys = {f"plot_toy.{key.replace('{kind}', kind)}" for key in asked for kind in ("cross", "encoder")}
    assert len(keys) > 10 and keys <= set(english) and keys <= set(korean), sorted(keys - set(english))


# ------------------------------------------------------------------------------------------------ page
def open_page(**query: str) -> AppTest:
    app = AppTest.from_file(str(PAGE), default_timeout=180)
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def until_trained(app: AppTest, timeout: float = 180.0) -> AppTest:
    """Run the page again until its training job has ended (the page answers at once while the job runs)."""
    deadline = time.monotonic() + timeout
    while app.query_params.get("toy_job") and time.monotonic() < deadline:
        time.sleep(0.5)
        app.run()
        no_exceptions(app)
    return app


def test_the_page_trains_draws_and_keeps_its_run():
    app = open_page(toy_task="copy", toy_steps="50")
    no_exceptions(app)
    assert app.radio(key="toy_task__en").value == "copy"  # restored from the URL
    assert app.slider(key="toy_steps").value == 50
    assert not charts(app) and app.info
    app.button(key="toy_train").click().run()
    no_exceptions(app)
    assert app.query_params["toy_job"] and app.button(key="toy_stop")  # queued: the page answered at once
    until_trained(app)
    assert "toy_job" not in app.query_params
    shown = charts(app)
    assert len(shown) == 2
    curve, tiles = (chart["figure"] for chart in shown)
    assert array(curve["data"][1]["x"]).tolist() == [0, 25, 50]
    assert tiles["layout"]["title"]["text"].startswith("Encoder–decoder attention at step 50")
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Step"] == "50" and re.fullmatch(r"\d+\.\d%", metrics["Exact match"])
    assert app.success and app.query_params["toy_task"] == "copy"

    app.radio(key="toy_view__en").set_value("encoder").run()  # a rerun draws the kept run, not a new one
    assert "Encoder self-attention at step 50" in charts(app)[1]["figure"]["layout"]["title"]["text"]
    app.select_slider(key="toy_step__en").set_value(25).run()
    assert "at step 25" in charts(app)[1]["figure"]["layout"]["title"]["text"]
    app.radio(key="toy_task__en").set_value("reverse").run()
    assert not charts(app) and app.query_params["toy_task"] == "reverse"
    app.radio(key="toy_task__en").set_value("copy").run()
    no_exceptions(app)
    assert len(charts(app)) == 2 and app.metric[0].value == "25"  # the copy run, back at the step chosen
    link = open_page(**dict(app.query_params))  # the page's link in a new session: the view, without the run
    no_exceptions(link)
    assert link.radio(key="toy_task__en").value == "copy" and link.radio(key="toy_view__en").value == "encoder"
    assert link.slider(key="toy_steps").value == 50 and not charts(link)


def test_a_training_goes_on_while_the_visitor_leaves_and_comes_back_by_its_link():
    app = open_page(toy_task="sort", toy_steps="100", toy_seed="7")
    app.button(key="toy_train").click().run()
    link = dict(app.query_params)
    assert link["toy_job"]
    back = until_trained(open_page(**link))  # a reload: another session, the same job
    assert back.success and back.metric[0].value == "100" and len(charts(back)) == 2


def test_one_job_per_session_and_stop_ends_it():
    app = open_page(toy_task="sort", toy_steps="3000", toy_seed="8")
    app.button(key="toy_train").click().run()
    assert app.query_params["toy_job"]
    app.number_input(key="toy_seed").set_value(9).run()  # other settings: their own Train button
    app.button(key="toy_train").click().run()
    assert any("already has 1 job" in warning.value for warning in app.warning)
    app.number_input(key="toy_seed").set_value(8).run()
    app.button(key="toy_stop").click().run()
    until_trained(app)
    no_exceptions(app)
    assert "toy_job" not in app.query_params and app.button(key="toy_train")


def test_the_trainings_rerun_with_the_labels_of_the_language_before_keeps_every_choice_as_its_option():
    """The training is redrawn every second by a fragment of its own. A redraw that meets the visitor changing the
    language brings the labels of the language before (Streamlit sends a choice as its label; the palette's once
    reached the charts as a label, and they failed): every choice still holds its option, and the page no error."""
    app = open_page(toy_task="sort", toy_steps="3000", toy_seed="5", toy_view="encoder", palette="colour_blind")
    app.button(key="toy_train").click().run()
    deadline = time.monotonic() + 120
    while not charts(app) and time.monotonic() < deadline:  # the fragment draws the run once it has a snapshot
        time.sleep(0.5)
        app.run()
    assert charts(app)
    chosen = {key: app.session_state[key] for key in ("toy_task", "toy_view", "palette")}
    assert chosen == {"toy_task": "sort", "toy_view": "encoder", "palette": "colour_blind"}
    english = wire_states(app)
    app.sidebar.selectbox(key="lang").set_value("ko").run()
    assert rerun_fragments(app, english, lang=LANGUAGES["ko"])  # the training's redraw
    no_exceptions(app)
    assert {key: app.session_state[key] for key in chosen} == chosen
    assert all(app.session_state[shown_key(key, "ko")] == value for key, value in chosen.items())
    app.button(key="toy_stop").click().run()
    until_trained(app)
    no_exceptions(app)


def test_the_page_speaks_korean():
    app = open_page(lang="ko", toy_steps="50", toy_pe="0", toy_heads="1", toy_scaled="0")
    app.button(key="toy_train").click().run()
    until_trained(app)
    no_exceptions(app)
    shown = [
        app.title[0].value,
        *(header.value for header in app.header),
        *(markdown.value for markdown in app.markdown),
        *(caption.value for caption in app.caption),
        *(metric.label for metric in app.metric),
        *(chart["figure"]["layout"]["title"]["text"] for chart in charts(app)),
    ]
    widgets = ("radio", "slider", "select_slider", "toggle", "button", "number_input", "expander")
    labels = [widget.label for kind in widgets for widget in app.get(kind) if widget.label != "Language / 언어"]
    assert len(labels) >= 9
    assert [text for text in [*shown, *labels] if not HANGUL.search(text)] == []
    assert len(app.markdown) >= 4  # the intro and a word on each of the three ablations


def test_a_training_hidden_by_changed_settings_is_named_and_can_be_stopped():
    app = open_page(toy_task="sort", toy_steps="3000", toy_seed="8")
    app.button(key="toy_train").click().run()
    job_id = app.query_params["toy_job"]
    app.number_input(key="toy_seed").set_value(9).run()
    assert any("still running" in info.value for info in app.info)
    app.button(key="toy_stop_other").click().run()
    no_exceptions(app)
    assert "toy_job" not in app.query_params and not any("still running" in info.value for info in app.info)
    app.button(key="toy_train").click().run()  # these settings now train: the session's one job was stopped
    assert not any("already has" in warning.value for warning in app.warning)
    assert app.query_params["toy_job"] and app.query_params["toy_job"] != job_id
    app.button(key="toy_stop").click().run()


def test_an_unknown_job_in_the_address_leaves_it():
    app = open_page(toy_job="x" * 40)
    no_exceptions(app)
    assert "toy_job" not in app.query_params and app.button(key="toy_train")
