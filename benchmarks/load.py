"""A class at once: N browser sessions on one real server, each submitting its own sentences and switching views.

Starts ``streamlit run app.py`` on a free local port (the shipped model, or ``--checkpoint``), opens N sessions in
Debian's Chromium (Playwright, one context per session, all at the same time) and has each submit ``--requests``
different sentences; after each submit the session opens the *Model view* tab and comes back to *Heads*. Measured
per N: submit → chart latency (from the click on *Translate* until the run is over and the heatmap is drawn) and
view-switch latency, their p50 and p95, errors (uncaught page errors, console errors, exceptions shown by the app,
timeouts), and the server's peak resident memory (VmHWM of its process, so it only grows from one N to the next).

    python benchmarks/load.py [--sessions 1,4,8,16] [--requests 3] [--checkpoint DIR] [--json]

Targets (reported, not asserted here): 16 sessions with 0 errors; p95 at 8 sessions ≤ 3 × the single session's.
``tests/test_load.py`` runs a small configuration (4 sessions, 2 requests) and fails on any error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPOSITORY = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip
HEATMAP = ".js-plotly-plot .heatmaplayer image"
TIMEOUT_MS = 180_000
SUBJECTS = ["The children", "My brother", "The teacher", "Our neighbours", "The old man", "A young woman",
            "The students", "My sister"]  # fmt: skip
ACTIONS = ["are playing in the park", "reads a book every evening", "explains the lesson", "bought a new car",
           "walks to the station", "is cooking dinner", "wrote a letter to the mayor", "likes green tea"]  # fmt: skip


def sentences(session: int, count: int) -> list[str]:
    """Different everyday sentences for each session and request (so that no answer comes from another's cache)."""
    return [f"{SUBJECTS[(session + i) % len(SUBJECTS)]} {ACTIONS[(3 * session + i) % len(ACTIONS)]} "
            f"({session + 1}.{i + 1})." for i in range(count)]  # fmt: skip


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(checkpoint: str | None, log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """The real server on a free port; yields its origin and process, and ends it whatever happens."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    environment = {**os.environ, **({"TRANSFORMER_CHECKPOINT": checkpoint} if checkpoint else {})}
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=REPOSITORY, env=environment, stdout=output, stderr=subprocess.STDOUT)
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{origin}/_stcore/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the server did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)
        yield origin, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def peak_memory_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def one_session(browser, origin: str, index: int, requests: int) -> dict:
    """One visitor: open the app, then submit sentences and switch views; their latencies and errors."""
    from playwright.async_api import TimeoutError as PlaywrightTimeoutError

    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"session {index}: uncaught {error}"))
    page.on("console", lambda message: message.type == "error" and errors.append(
        f"session {index}: console {message.text}"))  # fmt: skip
    submits, switches = [], []
    try:
        await page.goto(f"{origin}/?kind=encoder", timeout=TIMEOUT_MS)
        await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
        for sentence in sentences(index, requests):
            await page.get_by_label("English sentence").fill(sentence)
            started = time.perf_counter()
            await page.get_by_role("button", name="Translate").click()
            # The page writes the URL last, so a URL holding the sentence means the run is over.
            await page.wait_for_url(lambda url, s=sentence: parse_qs(urlsplit(url).query).get("text") == [s],
                                    timeout=TIMEOUT_MS)  # fmt: skip
            await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
            submits.append(time.perf_counter() - started)
            started = time.perf_counter()
            await page.get_by_role("tab", name="Model view", exact=True).click()
            await page.wait_for_function("() => new URL(location.href).searchParams.get('view') === 'Model view'",
                                         timeout=TIMEOUT_MS)  # fmt: skip
            await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
            switches.append(time.perf_counter() - started)
            await page.get_by_role("tab", name="Heads", exact=True).click()
            await page.wait_for_function("() => new URL(location.href).searchParams.get('view') === 'Heads'",
                                         timeout=TIMEOUT_MS)  # fmt: skip
        shown = await page.locator('[data-testid="stException"]').count()
        if shown:
            errors.append(f"session {index}: the app shows {shown} exception(s)")
    except PlaywrightTimeoutError as error:
        errors.append(f"session {index}: timed out ({str(error).splitlines()[0]})")
    finally:
        await context.close()
    return {"submits": submits, "switches": switches, "errors": errors}


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(origin: str, process: subprocess.Popen, counts: list[int], requests: int) -> list[dict]:
    from playwright.async_api import async_playwright

    results = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for count in counts:
                started = time.perf_counter()
                sessions = await asyncio.gather(*(one_session(browser, origin, i, requests) for i in range(count)))
                submits = [t for s in sessions for t in s["submits"]]
                switches = [t for s in sessions for t in s["switches"]]
                errors = [e for s in sessions for e in s["errors"]]
                results.append({
                    "sessions": count, "requests": len(submits), "expected_requests": count * requests,
                    "errors": len(errors), "error_messages": errors[:5],
                    "submit_p50_s": round(statistics.median(submits), 3) if submits else None,
                    "submit_p95_s": round(percentile(submits, 0.95), 3) if submits else None,
                    "switch_p50_s": round(statistics.median(switches), 3) if switches else None,
                    "switch_p95_s": round(percentile(switches, 0.95), 3) if switches else None,
                    "wall_s": round(time.perf_counter() - started, 1),
                    "server_peak_mb": round(peak_memory_mb(process.pid), 1),
                })  # fmt: skip
        finally:
            await browser.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,4,8,16", help="comma-separated session counts, run in turn")
    parser.add_argument("--requests", type=int, default=3, help="sentences each session submits")
    parser.add_argument("--checkpoint", default=None, help="checkpoint name or folder (default: the shipped model)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        print(f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 1
    counts = [int(part) for part in args.sessions.split(",") if part.strip()]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"load-server-{os.getpid()}.log"
    with serving(args.checkpoint, log) as (origin, process):
        results = asyncio.run(measure(origin, process, counts, args.requests))
    single = next((r["submit_p95_s"] for r in results if r["sessions"] == 1), None)
    summary = {"results": results, "single_session_p95_s": single}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{'sessions':>8} {'requests':>8} {'errors':>6} {'submit p50':>10} {'p95':>7} {'switch p50':>10} {'p95':>7} "
          f"{'server peak':>11}")  # fmt: skip
    for r in results:
        print(f"{r['sessions']:>8} {r['requests']:>4}/{r['expected_requests']:<3} {r['errors']:>6} "
              f"{r['submit_p50_s']:>9}s {r['submit_p95_s']:>6}s {r['switch_p50_s']:>9}s {r['switch_p95_s']:>6}s "
              f"{r['server_peak_mb']:>8} MB")  # fmt: skip
        for message in r["error_messages"]:
            print(f"         {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
