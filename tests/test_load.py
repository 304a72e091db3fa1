"""A class at once (``benchmarks/load.py`` run as users run it): four browser sessions on one real server, each
submitting its own sentences and switching views; a class of 8 on the paper tour with a training in the job queue; a
class through ``scripts/serve_class.sh``'s proxy. Latencies are the benchmark's to report; here any error fails."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.app_server import CHROMIUM, free_port

pytestmark = pytest.mark.server

REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.is_file() or importlib.util.find_spec("playwright") is None,
    reason="needs Debian's Chromium and Playwright",
)
def test_four_sessions_at_once_get_every_answer_without_errors():
    """On a freshly started server: every session's first page translates the same default sentence at once, while
    the model loads and the translation process starts."""
    command = [sys.executable, "benchmarks/load.py", "--sessions", "4", "--requests", "2", "--cold", "--json"]
    finished = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-2000:]
    summary = json.loads(finished.stdout)
    (result,) = summary["results"]
    assert result["errors"] == 0, (result["error_messages"], summary["server_log_tail"])
    assert result["requests"] == result["expected_requests"] == 8
    assert result["server_peak_mb"] > 0


@pytest.mark.slow
def test_eight_protocol_sessions_at_once_get_every_answer_and_share_the_model():
    """Eight sessions speaking Streamlit's websocket protocol (no browser): every submit gets its heatmap and every
    switch its model view, with no error and the model loaded once (memory does not grow by a model per session)."""
    command = [
        sys.executable,
        "benchmarks/load.py",
        "--client",
        "protocol",
        "--sessions",
        "1,8",
        "--requests",
        "2",
        "--json",
    ]
    finished = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-2000:]
    one, eight = json.loads(finished.stdout)["results"]
    assert one["errors"] == eight["errors"] == 0, eight["error_messages"]
    assert eight["requests"] == eight["expected_requests"] == 16
    model_mb = sum(f.stat().st_size for f in (REPOSITORY / "checkpoints" / "en-de-small").glob("*.safetensors")) / 1e6
    assert eight["server_peak_mb"] - one["server_peak_mb"] < 7 * model_mb  # not a copy of the model per session
    # Where the cores went: the pages, the translation process and the clients each used some, and together no
    # more than the machine has.
    cores = eight["cores"]
    assert all(cores[name] > 0 for name in ("server", "search", "clients")), cores
    assert sum(cores.values()) <= os.cpu_count() * 1.05, cores


def load_benchmark():
    spec = importlib.util.spec_from_file_location("load_benchmark", REPOSITORY / "benchmarks" / "load.py")
    load = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(load)
    return load


def test_rounds_alternate_the_counts_pool_their_figures_and_never_repeat_a_session(monkeypatch):
    """``--rounds``: 1, 8, 1, 8 sessions on one server, each count's latencies pooled over its rounds, and every
    session of every round a new one (its sentences are its index's, so a repeated index would be answered from the
    translation cache)."""
    load = load_benchmark()
    started = []

    async def session(origin, index, requests, pause):
        assert pause == 0.0  # the default: a stress test, no reading between actions
        started.append(index)
        return {"submits": [float(index)] * requests, "switches": [0.1] * requests, "errors": []}

    monkeypatch.setattr(load, "protocol_session", session)
    monkeypatch.setattr(load, "peak_memory_mb", lambda pid: 100.0 + len(started))
    server = subprocess.Popen([sys.executable, "-c", "pass"])
    server.wait()
    measuring = load.measure("http://x", server, [1, 8], requests=2, client="protocol", rounds=2)
    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # a thread of its own: no other test's event loop
        one, eight = thread.submit(load.asyncio.run, measuring).result()
    assert sorted(started) == list(range(18))  # 1 + 8 + 1 + 8 sessions, no index twice
    assert (one["requests"], one["expected_requests"]) == (4, 4) and (
        eight["requests"],
        eight["expected_requests"],
    ) == (32, 32)
    assert one["submit_p95_s"] == 9.0  # the second round's single session (index 9) is pooled with the first's (0)
    assert one["server_peak_mb"] == 110.0 and eight["server_peak_mb"] == 118.0  # read after each count's last round


def test_a_reading_session_pauses_between_half_and_one_and_a_half_times_the_pause_the_same_way_each_run():
    """``--pause``: a session waits after each chart like a person reading it, each session differently but the same
    in every run; with no pause it never waits."""
    load = load_benchmark()

    def pauses(index, pause, count=200):
        reader = load.Reader(index, pause)
        return [seconds for seconds in (reader.next_pause() for _ in range(count)) if seconds]

    first = pauses(3, 2.0)
    assert len(first) == 200 and all(1.0 <= seconds <= 3.0 for seconds in first)
    assert 1.8 < sum(first) / len(first) < 2.2 and max(first) - min(first) > 1.5  # spread over the whole range
    assert pauses(3, 2.0) == first  # a repeatable run
    assert pauses(4, 2.0) != first  # sessions do not act in step
    assert pauses(3, 0.0) == []


@pytest.mark.slow
def test_a_small_class_on_the_paper_tour_meets_no_error_and_its_training_finishes():
    """Six sessions follow the paper tour at a reading pace (protocol client): every step, a sentence of their own,
    one tiny model trained in the job queue while the others read on, one atlas card; no error, the job finished."""
    command = [
        sys.executable,
        "benchmarks/load.py",
        "--class",
        "6",
        "--trainers",
        "1",
        "--cards",
        "1",
        "--train-seconds",
        "10",
        "--pause",
        "1",
        "--json",
    ]
    finished = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-2000:]
    result = json.loads(finished.stdout)
    assert result["errors"] == 0, result["error_messages"]
    assert result["jobs_finished"] == 1 and len(result["job_s"]) == 1
    assert result["short_actions"] >= 6 * 17  # every tour step and a translation, per session


def two_free_ports() -> int:
    """A port P with P + 1 free too (the proxy's two copies listen on consecutive ports)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


@contextlib.contextmanager
def class_behind_a_proxy(tmp_path: Path):
    """``scripts/serve_class.sh --replicas 2`` on free ports, as a user starts it; yields the proxy's origin once the
    script says the class may come in."""
    port, first = free_port(), two_free_ports()
    command = ["bash", "scripts/serve_class.sh", "--replicas", "2", "--port", str(port), "--first-port", str(first)]
    output = tmp_path / "serve_class.log"
    with output.open("w") as log:
        script = subprocess.Popen(command, cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while "the class:" not in output.read_text() and script.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "the class:" in output.read_text(), output.read_text()[-3000:]
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(script.pid, signal.SIGTERM)  # the script stops the proxy and both copies
        script.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs HAProxy (apt-get install haproxy)")
def test_behind_the_proxy_a_class_meets_no_error_and_a_student_coming_back_finds_their_training(tmp_path):
    """Two copies of the app behind HAProxy: a class of 4 (one training) reaches both copies without an error; a
    student who starts a training, leaves and comes back three times with the job's address finds it every time.
    Each copy holds its own jobs, so without the sticky cookie about every other return would land on the copy that
    has never heard of the job ("Press Train")."""
    from streamlit.proto.Alert_pb2 import Alert

    load = load_benchmark()
    with class_behind_a_proxy(tmp_path) as origin:
        command = [sys.executable, "benchmarks/load.py", "--class", "4", "--trainers", "1", "--cards", "0"]
        command += ["--train-seconds", "10", "--pause", "1", "--origin", origin, "--json"]
        finished = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
        assert finished.returncode == 0, finished.stderr[-2000:]
        result = json.loads(finished.stdout)
        assert result["errors"] == 0, result["error_messages"]
        assert result["jobs_finished"] == 1
        assert len(result["sessions_per_copy"]) == 2 and sum(result["sessions_per_copy"].values()) == 4, result

        async def leave_and_come_back() -> list[list[tuple[int, str]]]:
            cookie = await asyncio.to_thread(load.first_page, origin)
            async with load.connect(origin, "198.51.100.7", cookie) as connection:
                visitor = load.Visitor(connection, 0)
                await visitor.run("")
                await visitor.run("", page="toy_model")
                await visitor.run(states={"Stop after this many seconds": [10]})
                await visitor.run(states={"Train": True})
                address = visitor.query
            assert "toy_job=" in address
            shown = []
            for _ in range(3):
                await asyncio.sleep(1.0)
                async with load.connect(origin, "198.51.100.7", cookie) as connection:  # a new page, the same browser
                    visitor = load.Visitor(connection, 0)
                    await visitor.run(address)
                    shown.append((await visitor.run(address, page="toy_model"))["alerts"])
            return shown

        # in a thread of its own: the browser tests' Playwright may keep an event loop running in this one
        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            returns = thread.submit(asyncio.run, leave_and_come_back()).result()
        for alerts in returns:
            texts = [body for _, body in alerts]
            assert not any(body.startswith("Press **Train**") for body in texts), texts  # the job was not found
            assert any(form in (Alert.INFO, Alert.SUCCESS) for form, _ in alerts), texts  # waiting, training or done
