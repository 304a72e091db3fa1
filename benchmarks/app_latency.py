"""How fast the app answers: submit-to-figures time for a 30-token sentence, and the first render after start-up.

1. Submit → figures built, in process: beam-4 translation, one teacher-forced pass recording every head, then the
   figures of the open tab (the page builds only the open tab: Heads by default), and separately the figures of
   the three other tabs (layers × heads grid and large cell, token focus, bertviz head view). Repeated
   ``--repeats`` times on a fixed sentence of 30 source pieces, with a float32 and a bfloat16 search (the app's
   default on CPUs with native bfloat16); prints the median and the spread.
2. The same submit → Heads view time over the newstest2013 sentences of 29–31 pieces (up to 25 of them, each
   once after a warm-up), since the number of decoding steps depends on the sentence and its translation.
3. First render: with Debian's Chromium (driven by Playwright) already open, starts ``streamlit run app.py`` on a
   free local port and measures the time from launching the server until it answers, until the page's first paint
   (its title and sentence box, drawn while the model code loads) and until it shows its first attention heatmap;
   then the same for a one-chart Streamlit app, the floor that Streamlit and plotly.js alone cost on this machine.
   Medians of three launches each. Skipped with a note when Playwright or Chromium is missing.
4. First visit of *Paper figures* and *Head discovery* after a server start: from the click on the page's link in
   the sidebar until its first figure is drawn, with the measurements stored beside the checkpoint
   (``measured.safetensors``) and without them (a copy of the checkpoint without the file: the page measures, then
   stores), one fresh server per visit.

5. With ``--browser``, only what a visitor waits for, in Chromium, once the server's translation process is ready:
   submit → chart for 25 unseen everyday sentences (tatoeba_new), cold (each translated for the first time) and
   warm (the same again), and each of the 8 pages' first and second visit from the sidebar; medians and 95th
   percentiles.

    python benchmarks/app_latency.py [--checkpoint DIR] [--repeats 15] [--only-pages | --only-start | --browser]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import torch

from transformer.analysis.attention import translate_with_attention
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.data import DATA_ROOT
from transformer.plots import attention as plot_attention
from transformer.plots import bertviz as bertviz_view
from transformer.plots import grid as plot_grid
from transformer.search.decode import PRECISIONS, DecodingOptions, default_precision

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:  # run as a script: benchmarks/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS, serving, wait_for_translation_process  # noqa: E402

SENTENCE = (
    "The committee rejected the proposal because it was too expensive, but its members promised to discuss a "
    "cheaper version of the plan next week."
)


def heads_view(translation) -> None:
    """What the page builds after a submit with the default tab (Heads) open: the large heatmap."""
    maps = translation.maps
    queries, keys = maps.tokens("encoder")
    plot_attention.attention_heatmap(maps.matrix("encoder", 4, 0), queries, keys, "heatmap")


def other_views(translation) -> None:
    """The other tabs, each built only when opened: layers × heads grid and a large cell, token focus, bertviz."""
    maps = translation.maps
    queries, keys = maps.tokens("encoder")
    plot_grid.model_view_grid(maps.encoder, queries, keys, "grid")
    plot_attention.attention_heatmap(maps.matrix("encoder", 4, 1), queries, keys, "cell")
    plot_attention.token_lines(maps.encoder[4], queries, keys, title="focus")
    bertviz_view.head_view_html(maps)


def submit_latency(loaded, repeats: int, precision: str) -> None:
    pieces = len(loaded.tokenizer.encode(SENTENCE))
    print(f"\n{precision} search, {torch.get_num_threads()} threads; sentence of {pieces} pieces (+ </s>)")
    names = (
        "translate (beam 4) + attention",
        "Heads view figures",
        "submit → Heads view",
        "the other three views",
        "submit → every view",
    )
    timings: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeats + 1):  # the first run warms up caches and is not counted
        started = time.perf_counter()
        translation = translate_with_attention(
            loaded.model, loaded.tokenizer, SENTENCE, DecodingOptions(precision=precision)
        )
        translated = time.perf_counter()
        heads_view(translation)
        shown = time.perf_counter()
        other_views(translation)
        finished = time.perf_counter()
        spans = (translated - started, shown - translated, shown - started, finished - shown, finished - started)
        for name, seconds in zip(names, spans, strict=True):
            timings[name].append(seconds * 1000)
    for values in timings.values():
        values.pop(0)
    print(f"output ({len(translation.maps.target_tokens) - 1} pieces): {translation.translation}")
    for name, values in timings.items():
        print(
            f"{name:>31}: median {statistics.median(values):6.0f} ms  (min {min(values):.0f}, "
            f"max {max(values):.0f}, {repeats} runs)"
        )


def dev_sentences_latency(loaded, precision: str, count: int = 25) -> None:
    path = DATA_ROOT / "dev" / "newstest2013.en"
    if not path.is_file():
        print(f"\nnewstest2013 sentences: skipped ({path} missing)")
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    sentences = [line for line in lines if 29 <= len(loaded.tokenizer.encode(line)) <= 31][:count]
    translate_with_attention(loaded.model, loaded.tokenizer, sentences[0], DecodingOptions(precision=precision))
    times, lengths = [], []
    for sentence in sentences:
        started = time.perf_counter()
        translation = translate_with_attention(
            loaded.model, loaded.tokenizer, sentence, DecodingOptions(precision=precision)
        )
        heads_view(translation)
        times.append((time.perf_counter() - started) * 1000)
        lengths.append(len(translation.maps.target_tokens) - 1)
    print(
        f"\n{precision} search, {len(sentences)} newstest2013 sentences of 29–31 pieces (outputs of "
        f"{min(lengths)}–{max(lengths)} pieces, median {statistics.median(lengths):.0f}): submit → Heads view "
        f"median {statistics.median(times):.0f} ms (min {min(times):.0f}, max {max(times):.0f}; "
        f"{sum(t <= 300 for t in times)} of {len(times)} within 300 ms)"
    )


FLOOR_APP = """
import plotly.graph_objects as go
import streamlit as st

st.title("One chart")
st.plotly_chart(go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.6, 0.4]])))
"""


@contextlib.contextmanager
def served(playwright, script: Path, environment: dict | None, log: Path | None = None):
    """A Chromium page (started first: its own start-up is not part of the app's) and ``streamlit run script`` on a
    free local port (its output in ``log``, if given); yields (page, the server's address, the launch time). Both
    end whatever happens."""
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    started = time.perf_counter()
    try:
        with serving(script=script, environment=environment, wait=False, log=log) as (origin, _):
            yield page, f"{origin}/", started
    finally:
        browser.close()


def open_when_serving(page, address: str) -> None:
    """Load ``address`` as soon as the server answers (within two minutes)."""
    deadline = time.time() + 120
    while True:
        try:
            page.goto(address, timeout=5000)
            return
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def time_to_heatmap(playwright, script: Path, environment: dict | None) -> tuple[float, float | None, float]:
    """Seconds from launching ``streamlit run script`` until it answers, until its first paint shows a sentence box
    (None for a script without one), and until a plotly heatmap is drawn."""
    with served(playwright, script, environment) as (page, address, started):
        open_when_serving(page, address)
        serving = time.perf_counter() - started
        box = None
        if script.name == "app.py":
            page.wait_for_selector("textarea", timeout=120_000)
            box = time.perf_counter() - started
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
        return serving, box, time.perf_counter() - started


def browser_missing(what: str) -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(f"{what}: skipped (pip install playwright to measure it)")
        return True
    if not Path(CHROMIUM).exists():
        print(f"{what}: skipped ({CHROMIUM} missing: apt-get install chromium)")
        return True
    return False


# When each page's first figure is drawn: Figure 3's lines, and the head-score heatmap.
PAGES = {
    "Paper figures": "() => [...document.querySelectorAll('.js-plotly-plot')].some(plot => "
    "plot.querySelector('.gtitle')?.textContent.startsWith('Figure 3') && "
    "plot.querySelectorAll('.scatterlayer path.js-line').length > 0)",
    "Head discovery": "() => [...document.querySelectorAll('.js-plotly-plot')].some(plot => "
    "plot.querySelector('.heatmaplayer'))",
    "Head atlas": "() => [...document.querySelectorAll('.js-plotly-plot')].some(plot => "
    "plot.querySelectorAll('.scatterlayer .point').length >= 100)",
}
ONLY_STORED = {"Head atlas"}  # read from atlas.json alone: measuring it takes minutes, not a page visit


def page_first_visit(playwright, page_name: str, environment: dict) -> float:
    """Seconds from clicking ``page_name`` in the sidebar of a freshly started app until its first figure shows."""
    with served(playwright, REPOSITORY / "app.py", environment) as (page, address, _):
        open_when_serving(page, address)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
        started = time.perf_counter()
        page.get_by_role("link", name=page_name).click()
        page.wait_for_function(PAGES[page_name], timeout=300_000)
        return time.perf_counter() - started


def figure_pages(checkpoint: str | None) -> None:
    if browser_missing("first visit of the figure pages"):
        return
    from playwright.sync_api import sync_playwright

    from transformer.analysis.precompute import PRECOMPUTED_FILE

    shipped = load_checkpoint(checkpoint).path
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        bare = Path(folder) / shipped.name
        shutil.copytree(shipped, bare, ignore=shutil.ignore_patterns(PRECOMPUTED_FILE))
        for page_name in PAGES:
            stored = page_first_visit(playwright, page_name, {**os.environ, "TRANSFORMER_CHECKPOINT": str(shipped)})
            if page_name in ONLY_STORED:
                print(f"first visit of {page_name} after a server start: {stored:.1f} s with the stored measurements")
                continue
            (bare / PRECOMPUTED_FILE).unlink(missing_ok=True)
            measured = page_first_visit(playwright, page_name, {**os.environ, "TRANSFORMER_CHECKPOINT": str(bare)})
            print(
                f"first visit of {page_name} after a server start: {stored:.1f} s with the stored measurements, "
                f"{measured:.1f} s without them (measured, then stored)"
            )


def first_render(checkpoint: str | None, repeats: int = 3) -> None:
    if browser_missing("first render"):
        return
    from playwright.sync_api import sync_playwright

    environment = {**os.environ, "TRANSFORMER_CHECKPOINT": checkpoint} if checkpoint else None
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        floor_script = Path(folder) / "one_chart.py"
        floor_script.write_text(FLOOR_APP, encoding="utf-8")
        shutil.copytree(REPOSITORY / ".streamlit", Path(folder) / ".streamlit")  # the same server settings
        app = [time_to_heatmap(playwright, REPOSITORY / "app.py", environment) for _ in range(repeats)]
        floor = [time_to_heatmap(playwright, floor_script, None) for _ in range(repeats)]
    for name, runs in (("app.py", app), ("a one-chart Streamlit app (the floor)", floor)):
        serving = statistics.median(run[0] for run in runs)
        heatmap = statistics.median(run[2] for run in runs)
        painted = [run[1] - run[0] for run in runs if run[1] is not None]
        first_paint = f", title and sentence box {statistics.median(painted):.1f} s after it answers" if painted else ""
        print(
            f"first render of {name}, median of {repeats} launches (browser already open): server answers after "
            f"{serving:.1f} s{first_paint}, first heatmap drawn after {heatmap:.1f} s"
        )


# The page's run is over and the typed sentence's heatmap is drawn (the script writes the URL last).
SUBMITTED_JS = """sentence => {
    const app = document.querySelector('[data-testid="stApp"]');
    const text = new URLSearchParams(location.search).get('text');
    return app?.getAttribute('data-test-script-state') === 'notRunning' && text === sentence
        && !!document.querySelector('.js-plotly-plot .heatmaplayer image');
}"""
SETTLED_JS = """() => document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state')
    === 'notRunning' && !document.querySelector('[data-testid="stSkeleton"]')"""
APP_PAGES = {  # sidebar name → URL path
    "Attention, step by step": "step_by_step",
    "Paper figures": "paper_figures",
    "Head discovery": "head_discovery",
    "Head atlas": "head_atlas",
    "What if": "what_if",
    "Positional encoding": "positional_encoding",
    "Model and training": "model_and_training",
    "Translate and explore": "",
}


def spread(name: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{name}: median {statistics.median(ordered):.2f} s, p95 {p95:.2f} s (n = {len(ordered)})"


def submit_in_browser(page, sentence: str) -> float:
    """Seconds from pressing Translate until the page's run is over and the sentence's heatmap is drawn."""
    page.get_by_label("English sentence").fill(sentence)
    started = time.perf_counter()
    page.get_by_role("button", name="Translate").click()
    page.wait_for_function(SUBMITTED_JS, arg=sentence, timeout=300_000, polling=20)
    return time.perf_counter() - started


def browser_latency(checkpoint: str | None, count: int = 25) -> None:
    """What a visitor waits for, measured in Chromium against a fresh ``streamlit run app.py``: submit → chart for
    ``count`` unseen everyday sentences (tatoeba_new), each first (cold: translated) and again after the others
    (warm: the session's cache), and each page's first and second visit from its sidebar link until its run is
    over."""
    if browser_missing("browser latency"):
        return
    from playwright.sync_api import sync_playwright

    path = DATA_ROOT / "test" / "tatoeba_new.en"
    sentences = path.read_text(encoding="utf-8").splitlines()[:count]
    environment = {**os.environ, **({"TRANSFORMER_CHECKPOINT": checkpoint} if checkpoint else {})}
    with (
        tempfile.TemporaryDirectory() as folder,
        sync_playwright() as playwright,
        served(playwright, REPOSITORY / "app.py", environment, Path(folder) / "server.log") as (page, address, _),
    ):
        open_when_serving(page, address)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer image", state="attached", timeout=300_000)
        # Warm: the server's translation process is searching, not the server while that process starts.
        wait_for_translation_process(Path(folder) / "server.log")
        submit_in_browser(page, "A first sentence, so that the model and the page are loaded.")
        cold = [submit_in_browser(page, sentence) for sentence in sentences]
        warm = [submit_in_browser(page, sentence) for sentence in sentences]
        visits: dict[str, list[float]] = {"first": [], "second": []}
        for visit in visits:
            for name, path in APP_PAGES.items():
                started = time.perf_counter()
                page.get_by_role("link", name=name).click()
                # The page is on its way once the address names it; then its run must be over.
                page.wait_for_url(lambda url, path=path: urlsplit(url).path.strip("/") == path, timeout=300_000)
                page.wait_for_function(SETTLED_JS, timeout=300_000, polling=20)
                visits[visit].append(time.perf_counter() - started)
                print(f"  {visit} visit of {name}: {visits[visit][-1]:.2f} s")
    print(f"\nIn Chromium, {len(sentences)} tatoeba_new sentences, the page's default decoding:")
    print(spread("submit → chart, cold (each sentence's first translation)", cold))
    print(spread("submit → chart, warm (the same sentence again)", warm))
    for visit, seconds in visits.items():
        print(spread(f"{visit} visit of a page (click → run over), over the {len(APP_PAGES)} pages", seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--only-pages", action="store_true", help="only the first visits of the figure pages")
    parser.add_argument("--only-start", action="store_true", help="only the first render after start-up")
    parser.add_argument("--browser", action="store_true", help="only what a visitor waits for, in Chromium")
    args = parser.parse_args()
    loaded = load_checkpoint(args.checkpoint)
    print(f"checkpoint {loaded.path}")
    if args.browser:
        browser_latency(args.checkpoint)
        return
    if args.only_pages or args.only_start:
        (figure_pages if args.only_pages else first_render)(args.checkpoint)
        return
    precisions = sorted(PRECISIONS, key=lambda precision: precision != default_precision())
    for precision in precisions:
        submit_latency(loaded, args.repeats, precision)
    for precision in precisions:
        dev_sentences_latency(loaded, precision)
    if not args.skip_browser:
        first_render(args.checkpoint)
        figure_pages(args.checkpoint)


if __name__ == "__main__":
    main()
