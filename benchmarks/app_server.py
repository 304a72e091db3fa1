"""The app's real server for the browser tests and the benchmarks: ``streamlit run`` on a free local port, ready once
its health check answers, and ended whatever happens (:func:`transformer.serving.process.stop`); and the Chromium
they drive."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from transformer.serving.process import stop

REPOSITORY = Path(__file__).resolve().parent.parent
# Debian's Chromium, which Playwright drives in the browser tests and benchmarks (no browser download), kept offline:
# its headless shell where installed (apt-get install chromium-headless-shell: the same engine without the
# browser's own interface, about a third less CPU per page opened), else the browser itself.
HEADLESS_SHELL, FULL_CHROMIUM = Path("/usr/bin/chromium-headless-shell"), Path("/usr/bin/chromium")
CHROMIUM = HEADLESS_SHELL if HEADLESS_SHELL.is_file() else FULL_CHROMIUM
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--font-render-hinting=none",  # text measured as a visitor's Chromium measures it, in the headless shell too
]
START_SECONDS = 120  # a cold start imports torch and Streamlit on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(process: subprocess.Popen, origin: str, log: Path | None) -> None:
    """Until ``origin``'s health check answers; RuntimeError (with the log's end) if the server ends or is late."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{origin}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    printed = log.read_text(errors="replace")[-3000:] if log else ""
    raise RuntimeError(f"streamlit did not start at {origin} (exit code {process.poll()}):\n{printed}")


@contextlib.contextmanager
def serving(
    checkpoint: str | None = None,
    log: Path | None = None,
    script: Path = REPOSITORY / "app.py",
    environment: dict[str, str] | None = None,
    only_config: bool = False,
    wait: bool = True,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``streamlit run script`` on a free port (with ``checkpoint`` as ``TRANSFORMER_CHECKPOINT`` when given); yields
    its origin and process. By default bound to 127.0.0.1 and headless; ``only_config`` leaves everything but the
    port to ``.streamlit/config.toml``. ``wait=False`` yields at once (for timing the start itself)."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", script.name, "--server.port", str(port)]
    if not only_config:
        command += ["--server.address", "127.0.0.1", "--server.headless", "true"]
    environment = {**(os.environ if environment is None else environment)}
    if checkpoint:
        environment["TRANSFORMER_CHECKPOINT"] = checkpoint
    origin = f"http://{'localhost' if only_config else '127.0.0.1'}:{port}"
    with log.open("wb") if log else contextlib.nullcontext(subprocess.DEVNULL) as output:
        process = subprocess.Popen(command, cwd=script.parent, env=environment, stdout=output, stderr=subprocess.STDOUT)
    try:
        if wait:
            wait_until_healthy(process, origin, log)
        yield origin, process
    finally:
        stop(process, grace=30)


def wait_for_translation_process(log: Path, timeout: float = 180.0) -> None:
    """Until the server's log says that its translation process is ready, or that it failed and the server translates
    itself (``transformer/serving/translator.py`` prints either); at once when the app runs without one. Measured
    after this, the figures are those of a server that has been running, not of its first minute."""
    if os.environ.get("TRANSFORMER_TRANSLATION_PROCESS", "1").strip() in ("0", "false", "no", "off"):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line for line in log.read_text(errors="replace").splitlines() if "translation process for" in line]
        if any("ready" in line or "translating in the server" in line for line in lines):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the translation process was not ready after {timeout:.0f} s")
