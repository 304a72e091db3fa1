"""How fast the app answers: submit-to-figures time for a 30-token sentence, and the first render after start-up.

1. Submit → all figures built, in process: beam-4 translation, one teacher-forced pass recording every head, then
   every figure the main page builds (heatmap, layers × heads grid, large cell, token focus, bertviz head view).
   Repeated ``--repeats`` times on a sentence of 30 source pieces; prints the median and the spread.
2. First render: starts ``streamlit run app.py`` on a free local port and, with Debian's Chromium driven by
   Playwright (network limited to localhost), measures the time from launching the server until the page shows
   its first attention heatmap. Skipped with a note when Playwright or Chromium is missing.

    python benchmarks/app_latency.py [--checkpoint DIR] [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from transformer import bertviz_view, viz
from transformer.analysis import translate_with_attention
from transformer.checkpoint import load_checkpoint

REPOSITORY = Path(__file__).resolve().parents[1]
SENTENCE = (
    "The committee rejected the proposal because it was too expensive, but its members promised to discuss a "
    "cheaper version of the plan next week."
)
CHROMIUM = "/usr/bin/chromium"


def build_figures(translation) -> None:
    maps = translation.maps
    queries, keys = maps.tokens("encoder")
    viz.attention_heatmap(maps.matrix("encoder", 4, 0), queries, keys, "heatmap")
    viz.model_view_grid(maps.encoder, queries, keys, "grid")
    viz.attention_heatmap(maps.matrix("encoder", 4, 1), queries, keys, "cell")
    viz.token_lines(maps.encoder[4], queries, keys, title="focus")
    bertviz_view.head_view_html(maps)


def submit_latency(checkpoint: str | None, repeats: int) -> None:
    loaded = load_checkpoint(checkpoint)
    pieces = len(loaded.tokenizer.encode(SENTENCE))
    print(f"checkpoint {loaded.path}, {torch.get_num_threads()} threads; sentence of {pieces} pieces (+ </s>)")
    timings = {"translate + attention": [], "figures": [], "total": []}
    for _ in range(repeats + 1):  # the first run warms up caches and is not counted
        started = time.perf_counter()
        translation = translate_with_attention(loaded.model, loaded.tokenizer, SENTENCE, beam_size=4)
        translated = time.perf_counter()
        build_figures(translation)
        finished = time.perf_counter()
        for name, seconds in (("translate + attention", translated - started), ("figures", finished - translated),
                              ("total", finished - started)):  # fmt: skip
            timings[name].append(seconds * 1000)
    for values in timings.values():
        values.pop(0)
    print(f"output: {translation.translation}")
    for name, values in timings.items():
        print(f"{name:>22}: median {statistics.median(values):6.0f} ms  (min {min(values):.0f}, max {max(values):.0f},"
              f" {repeats} runs)")  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def first_render(checkpoint: str | None) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("first render: skipped (pip install playwright to measure it)")
        return
    if not Path(CHROMIUM).exists():
        print(f"first render: skipped ({CHROMIUM} missing: apt-get install chromium)")
        return
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    environment = {**os.environ, "TRANSFORMER_CHECKPOINT": checkpoint} if checkpoint else None
    started = time.perf_counter()
    server = subprocess.Popen(command, cwd=REPOSITORY, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=environment)  # fmt: skip
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync"],
            )  # fmt: skip
            page = browser.new_page()
            deadline = time.time() + 120
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                    break
                except Exception:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
            seconds = time.perf_counter() - started
            browser.close()
        print(f"first render: {seconds:.1f} s from launching the server to the first heatmap drawn in Chromium")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--skip-browser", action="store_true")
    args = parser.parse_args()
    submit_latency(args.checkpoint, args.repeats)
    if not args.skip_browser:
        first_render(args.checkpoint)


if __name__ == "__main__":
    main()
