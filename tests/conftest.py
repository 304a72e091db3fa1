"""Shared fixtures: a synthetic parallel corpus, its tokenizer, and a tiny trained run made inside the tests."""

from __future__ import annotations

import os

# Under the suite both cores are always busy (two workers, browsers, app servers, translation processes), and an
# OpenMP thread that spins while it waits for the next piece of work burns a core another process needs (3.4× the
# CPU of the work itself for short bursts, measured): waiting threads sleep instead. Set before torch loads OpenMP;
# the servers and translation processes the tests start inherit it (docs/testing.md).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import base64
import importlib.util
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.testing.v1 import AppTest

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS
from transformer.analysis import precompute
from transformer.cli import train
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs
from transformer.formats.checkpoint import read_json, write_json
from transformer.paper.tokenizer import Tokenizer, train_tokenizer

# The machines this runs on have two cores; OMP_NUM_THREADS=1 leaves one to a training run going on beside the tests.
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))

ENGLISH = "the a cat dog house tree red green small big sees likes has runs sleeps near under old new".split()
GERMAN = "der ein katze hund haus baum rot grün klein groß sieht mag hat läuft schläft nahe unter alt neu".split()


def synthetic_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """Word-for-word 'translations' through a fixed dictionary: a task a tiny model learns in seconds."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        indices = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(2, 7))]
        pairs.append((" ".join(ENGLISH[i] for i in indices) + ".", " ".join(GERMAN[i] for i in indices) + "."))
    return pairs


def write_corpus(prefix: Path, pairs: list[tuple[str, str]]) -> Path:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.en").write_text("".join(f"{s}\n" for s, _ in pairs), encoding="utf-8")
    Path(f"{prefix}.de").write_text("".join(f"{t}\n" for _, t in pairs), encoding="utf-8")
    return prefix


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpus")
    return {
        "train": write_corpus(root / "train" / "words", synthetic_pairs(3000, seed=1)),
        "dev": write_corpus(root / "dev" / "words", synthetic_pairs(40, seed=2)),
    }


@pytest.fixture(scope="session")
def tokenizer(corpus: dict[str, Path]) -> Tokenizer:
    text = (
        Path(f"{corpus['train']}.en").read_text().splitlines() + Path(f"{corpus['train']}.de").read_text().splitlines()
    )
    return train_tokenizer(text, vocab_size=320)


@pytest.fixture(scope="session")
def spm_path(tokenizer: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spm") / "spm.model"
    tokenizer.save(path)
    return path


def train_arguments(corpus: dict[str, Path], spm_path: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--out",
        str(out),
        "--preset",
        "tiny",
        "--train",
        str(corpus["train"]),
        "--dev",
        str(corpus["dev"]),
        "--spm",
        str(spm_path),
        "--batch-tokens",
        "256",
        "--warmup",
        "100",
        "--lr-scale",
        "0.5",
        "--log-every",
        "1",
        "--eval-every",
        "0",
        "--dev-bleu-sentences",
        "10",
        "--progress",
        "lines",
        "--threads",
        "1",
        *extra,
    ]


@pytest.fixture(scope="session")
def trained_checkpoint(corpus: dict[str, Path], spm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained for a few hundred steps on the synthetic corpus by the real trainer."""
    out = tmp_path_factory.mktemp("run")
    assert train.main(train_arguments(corpus, spm_path, out, "--max-steps", "600", "--log-every", "50")) == 0
    checkpoint = runs.run_checkpoints(out)[-1]
    # Stored beside it as for a shipped model, so that every test sees the same first view whatever ran before.
    loaded = ckpt.load_checkpoint(checkpoint)
    precompute.write(loaded, precompute.measure_all(loaded))
    return checkpoint


@pytest.fixture(scope="module")
def loaded(trained_checkpoint: Path) -> ckpt.LoadedCheckpoint:
    """The tiny trained model, loaded once per test module (a module that changes it gets its own copy)."""
    return ckpt.load_checkpoint(trained_checkpoint)


def uniform_encoder_copy(checkpoint: Path, folder: Path, step: int) -> Path:
    """A copy of the checkpoint whose encoder queries are all zero, so every encoder head attends uniformly."""
    shutil.copytree(checkpoint, folder)
    weights = load_file(str(folder / "model.safetensors"))
    for name in weights:
        if name.startswith("encoder_layers.") and ".self_attention.query." in name:
            weights[name] = weights[name] * 0
    save_file(weights, str(folder / "model.safetensors"))
    write_json(folder / "meta.json", {**read_json(folder / "meta.json"), "step": step, "train_hours": 0.01})
    return folder


def smaller_model(checkpoint: Path, folder: Path, layers: int, heads: int) -> Path:
    """A model of another shape over the checkpoint's tokenizer (``layers`` + ``layers``, ``heads`` heads; random
    weights): for views that put two models side by side."""
    import dataclasses

    from transformer.paper.model import Transformer

    loaded = ckpt.load_checkpoint(checkpoint)
    config = dataclasses.replace(loaded.config, encoder_layers=layers, decoder_layers=layers, num_heads=heads)
    torch.manual_seed(0)
    weights = ckpt.state_dict_for_saving(Transformer(config))
    return ckpt.save_checkpoint(folder, weights, config, loaded.tokenizer, {})


def charts(app: AppTest) -> list[dict]:
    """Each plotly chart on the page as the browser receives it: the figure and the plotly config."""
    return [
        {"figure": json.loads(chart.proto.spec), "config": json.loads(chart.proto.config)}
        for chart in app.get("plotly_chart")
    ]


def array(value: dict | list) -> np.ndarray:
    """A figure array, sent either as a list or as plotly's base64 typed array."""
    if isinstance(value, list):
        return np.asarray(value, dtype=float)
    values = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return values.reshape([int(size) for size in str(value["shape"]).split(",")]) if "shape" in value else values


def no_exceptions(app: AppTest) -> None:
    assert not app.exception, [exception.value for exception in app.exception]


def wire_states(app: AppTest) -> WidgetStates:
    """The widget values the browser would send now, as Streamlit sends them: a choice as the label it shows, and no
    button (the browser sends a button only in the run its click starts)."""
    states = WidgetStates()
    for state in app._tree.get_widget_states().widgets:
        if not (state.WhichOneof("value") == "trigger_value" and not state.trigger_value):
            states.widgets.add().CopyFrom(state)
    return states


def rerun_fragments(app: AppTest, states: WidgetStates, **values: str) -> list[str]:
    """Reruns each fragment the page has drawn on its own, as its timer or one of its controls does in a browser,
    with the widget values ``states`` (from :func:`wire_states`), those of the widgets keyed as in ``values`` replaced;
    returns the fragments' ids. AppTest itself only reruns whole pages."""
    import dataclasses
    from unittest import mock

    from streamlit.runtime.state.common import user_key_from_element_id
    from streamlit.testing.v1.local_script_runner import LocalScriptRunner

    sent = WidgetStates()
    sent.CopyFrom(states)
    for state in sent.widgets:
        key = user_key_from_element_id(state.id)
        if key in values:
            state.string_value = values[key]
    fragments = list(app._fragment_storage._fragments)
    request_rerun = LocalScriptRunner.request_rerun
    for fragment in fragments:

        def rerun_only(runner, data, fragment=fragment):
            return request_rerun(runner, dataclasses.replace(data, fragment_id_queue=[fragment], is_auto_rerun=True))

        with mock.patch.object(LocalScriptRunner, "request_rerun", rerun_only):
            app._run(sent)
    return fragments


if TYPE_CHECKING:
    from playwright.sync_api import Browser

# Browser tests: Debian's Chromium driven by Playwright (no browser download), skipped only when either is missing.


if importlib.util.find_spec("playwright") is None:
    BROWSER_MISSING = "needs the playwright package (pip install -e '.[dev]')"
elif not CHROMIUM.exists():
    BROWSER_MISSING = f"needs Chromium at {CHROMIUM} (apt-get install chromium chromium-headless-shell)"
else:
    BROWSER_MISSING = ""
needs_browser = pytest.mark.skipif(bool(BROWSER_MISSING), reason=BROWSER_MISSING or "Chromium and playwright found")


# The fast tier (`python -m pytest -m fast`, before every commit): every test that drives no browser, starts no app
# server and trains no model of its own. The rest carry `browser` (the browser fixture, or needs_browser), `server`
# or `training`, set on their module or test; `slow` marks a test that is long for another reason.
HEAVY = ("browser", "server", "training", "slow")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses_browser = "browser" in getattr(item, "fixturenames", ()) or any(
            mark == needs_browser.mark for mark in item.iter_markers("skipif")
        )
        if uses_browser:
            item.add_marker(pytest.mark.browser)
        if all(item.get_closest_marker(name) is None for name in HEAVY):
            item.add_marker(pytest.mark.fast)


SHIPPED = ckpt.REPOSITORY_CHECKPOINTS / ckpt.DEFAULT_CHECKPOINT_NAME


def served_name(checkpoint: Path) -> str:
    """The shipped model by name, so that the sidebar (and the README's screenshot) shows its name, not a path."""
    return ckpt.DEFAULT_CHECKPOINT_NAME if checkpoint == SHIPPED else str(checkpoint)


@pytest.fixture(scope="session")
def served_checkpoint(request: pytest.FixtureRequest) -> Path:
    """The model the browser tests' server opens: the shipped one when present; otherwise the tiny one (trained only
    when those tests run)."""
    if (SHIPPED / "config.json").is_file():
        return SHIPPED
    return request.getfixturevalue("trained_checkpoint")


@pytest.fixture(scope="session")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("streamlit") / "server.log"


@pytest.fixture(scope="session")
def server(served_checkpoint: Path, server_log: Path) -> Iterator[str]:
    """The app on ``served_checkpoint``, one server for every browser test of this process: each test opens its own
    browser context, and so its own session."""
    from benchmarks.app_server import serving

    with serving(served_name(served_checkpoint), server_log) as (origin, _):
        yield origin


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    # Imported here: without playwright these tests are skipped, not failed at collection.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def plain(markdown: str) -> str:
    """What a reader sees of a Markdown element: rendered (CommonMark, as Streamlit renders these constructs), tags
    dropped, entities decoded; so that a test reads a message as shown, escapes and all."""
    import html
    import re

    from markdown_it import MarkdownIt

    return html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt("commonmark").render(markdown))).strip()
