"""A class at once: N sessions on one real server, each submitting its own sentences and switching views.

Starts ``streamlit run app.py`` on a free local port (the shipped model, or ``--checkpoint``), opens N sessions at
the same time and has each submit ``--requests`` different sentences; after each submit the session opens the
*Model view* tab and comes back to *Heads*. Two kinds of visitor (``--client``):

- ``browser`` (default): Debian's Chromium through Playwright, one context per session. Submit → chart runs from
  the click on *Translate* until the run is over and the heatmap is drawn; errors are uncaught page errors, console
  errors, exceptions shown by the app and timeouts. The browsers share the machine with the server, so on a small
  machine this measures the browsers' drawing as much as the server.
- ``protocol``: Streamlit's own websocket protocol (the messages the browser exchanges with the server, through
  ``websockets`` and Streamlit's protobuf classes), one connection per session and no drawing. Submit → chart runs
  from sending the form until the server has sent the heatmap and finished the run: the server's part, as each
  student's own computer sees it. Errors: exceptions in the app's output, a run without the chart, timeouts.

``--pause SECONDS`` makes each session read like a person: after each chart it waits a random time between half and
one and a half times SECONDS (drawn from its own seeded generator) before its next action. Without it (the
default) every session acts the moment the previous answer is in, eight sessions each asking several times a
second: a stress test far beyond a class, which the pause turns into a class reading what it asked for. The
sessions of a count still start together, so every round begins with all of them submitting at once.

Measured per N: submit → chart and view-switch latency, their p50 and p95, errors, and the server's peak resident
memory (VmHWM of its process, so it only grows from one N to the next).

    python benchmarks/load.py [--sessions 1,4,8,16] [--requests 3] [--rounds 1] [--client browser|protocol]
                              [--pause SECONDS] [--checkpoint DIR] [--json]

``--class N`` (protocol client) is a class instead: N students follow the paper tour at a reading pace (8 s
between actions unless ``--pause``), each translating a sentence of their own; ``--trainers`` of them train a tiny
model (a job in the server's queue, waited for as the page waits) and ``--cards`` open a head's atlas card. Measured:
short actions' p50/p95/max, each job's time, errors. ``--origin URL`` drives a server already running instead of
starting one, e.g. ``scripts/serve_class.sh``'s proxy: each student loads the page first and keeps the cookie it
sets, as a browser does, and the sessions each copy of the app kept are counted.

    python benchmarks/load.py --class 30 [--trainers 5] [--cards 3] [--train-seconds 30] [--origin URL] [--json]

Targets (reported, not asserted here): 16 sessions with 0 errors; p95 at 8 sessions ≤ 3 × the single session's
(printed as that ratio, ``p95_ratio_8_to_1`` in the JSON, when both 1 and 8 are measured).
``tests/test_load.py`` runs a small configuration (4 sessions, 2 requests) and a class of 8 (one training), and
fails on any error; a class of 30 on one server: p95 of short actions ≤ 2 s, every job finished, 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:  # run as a script: benchmarks/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS, serving, wait_for_translation_process  # noqa: E402

BROWSER_ARGS = [*CHROMIUM_ARGS, "--disable-dev-shm-usage"]  # many pages at once: /dev/shm is small
HEATMAP = ".js-plotly-plot .heatmaplayer image"
TIMEOUT_MS = 180_000
SUBJECTS = [
    "The children",
    "My brother",
    "The teacher",
    "Our neighbours",
    "The old man",
    "A young woman",
    "The students",
    "My sister",
]
ACTIONS = [
    "are playing in the park",
    "reads a book every evening",
    "explains the lesson",
    "bought a new car",
    "walks to the station",
    "is cooking dinner",
    "wrote a letter to the mayor",
    "likes green tea",
]


def sentences(session: int, count: int) -> list[str]:
    """Different everyday sentences for each session and request (so that no answer comes from another's cache)."""
    return [
        f"{SUBJECTS[(session + i) % len(SUBJECTS)]} {ACTIONS[(3 * session + i) % len(ACTIONS)]} "
        f"({session + 1}.{i + 1})."
        for i in range(count)
    ]


def peak_memory_mb(pid: int) -> float:
    """The peak resident set (VmHWM) of the process and of each process it started (the translation process),
    added up, in MB (Linux)."""
    peaks = [status_field(process, "VmHWM") for process in [pid, *descendants(pid)]]
    found = [int(peak.split()[0]) / 1024 for peak in peaks if peak is not None]  # kB
    return sum(found) if found else float("nan")


def status_field(pid: int, name: str) -> str | None:
    """A field of the process's ``/proc/PID/status`` (Linux), as written there; None once the process has ended."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(f"{name}:")), None)


def cpu_seconds(pid: int) -> dict[str, float]:
    """CPU time (user + system) used so far by the server, by the processes it started (the translation process)
    and by this benchmark's own process (the clients), in seconds (Linux)."""

    def of(process: int) -> float:
        try:
            fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    own = os.times()
    return {"server": of(pid), "search": sum(of(child) for child in descendants(pid)), "clients": own.user + own.system}


def catches(pid: int, number: int) -> bool:
    """Whether the process has a handler for the signal (Linux; ``app.py`` sets one for SIGUSR1 on its first run,
    before which the signal would end the server)."""
    mask = status_field(pid, "SigCgt")
    return mask is not None and bool(int(mask, 16) >> (number - 1) & 1)


def descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                pids = [int(child) for child in children.read_text().split()]
            except OSError:
                continue
            found += pids
            queue += pids
    return found


class Reader:
    """A session's pauses between actions: uniform between half and one and a half times ``pause`` seconds, from a
    generator seeded with the session's index (so a run can be repeated); none for ``pause`` 0."""

    def __init__(self, index: int, pause: float) -> None:
        self.pause = pause
        self.random = random.Random(index)

    def next_pause(self) -> float:
        return self.random.uniform(0.5, 1.5) * self.pause if self.pause > 0 else 0.0

    async def read(self) -> None:
        seconds = self.next_pause()
        if seconds:
            await asyncio.sleep(seconds)


async def one_session(browser, origin: str, index: int, requests: int, pause: float = 0.0) -> dict:
    """One visitor: open the app, then submit sentences and switch views; their latencies and errors."""
    from playwright.async_api import TimeoutError as PlaywrightTimeoutError

    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"session {index}: uncaught {error}"))
    page.on(
        "console", lambda message: message.type == "error" and errors.append(f"session {index}: console {message.text}")
    )
    submits, switches = [], []
    reader = Reader(index, pause)
    try:
        await page.goto(f"{origin}/?kind=encoder", timeout=TIMEOUT_MS)
        await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
        for sentence in sentences(index, requests):
            await page.get_by_label("English sentence").fill(sentence)
            started = time.perf_counter()
            await page.get_by_role("button", name="Translate").click()
            # The page writes the URL last, so a URL holding the sentence means the run is over.
            await page.wait_for_url(
                lambda url, s=sentence: parse_qs(urlsplit(url).query).get("text") == [s], timeout=TIMEOUT_MS
            )
            await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
            submits.append(time.perf_counter() - started)
            await reader.read()
            started = time.perf_counter()
            await page.get_by_role("tab", name="Model view", exact=True).click()
            await page.wait_for_function(
                "() => new URL(location.href).searchParams.get('view') === 'Model view'", timeout=TIMEOUT_MS
            )
            await page.wait_for_selector(HEATMAP, state="attached", timeout=TIMEOUT_MS)
            switches.append(time.perf_counter() - started)
            await reader.read()
            await page.get_by_role("tab", name="Heads", exact=True).click()
            await page.wait_for_function(
                "() => new URL(location.href).searchParams.get('view') === 'Heads'", timeout=TIMEOUT_MS
            )
            await reader.read()
        shown = await page.locator('[data-testid="stException"]').count()
        if shown:
            errors.append(f"session {index}: the app shows {shown} exception(s)")
    except PlaywrightTimeoutError as error:
        try:  # what the stuck page showed: a spinner, an error, or a page drawn without its chart
            shown = " ".join((await page.locator("body").inner_text(timeout=5000)).split())[:300]
        except PlaywrightTimeoutError:
            shown = "(the page did not answer)"
        errors.append(f"session {index}: timed out ({str(error).splitlines()[0]}) at {page.url} showing: {shown}")
    finally:
        await context.close()
    return {"submits": submits, "switches": switches, "errors": errors}


def connect(origin: str, address: str, cookie: str | None = None):
    """A websocket to the server's Streamlit stream, as from a student's own computer at ``address`` (as a proxy in
    front of the server would announce it: without this the server would take each session for a browser on its own
    machine and leave it a core while searching), sending ``cookie`` as a browser sends the cookies its first page
    set (a proxy's sticky cookie: see :func:`first_page`)."""
    import websockets

    headers = {"X-Forwarded-For": address, **({"Cookie": cookie} if cookie else {})}
    return websockets.connect(
        origin.replace("http", "ws", 1) + "/_stcore/stream",
        subprotocols=["streamlit"],
        additional_headers=headers,
        max_size=2**28,
        open_timeout=TIMEOUT_MS / 1000,
    )


def first_page(origin: str) -> str | None:
    """Load the app's page as a browser does before it opens the websocket; the cookies the answer sets, as one
    ``Cookie`` header (None if none). Behind ``scripts/serve_class.sh`` this is HAProxy's cookie naming the copy of
    the app that keeps this student from then on."""
    from http.cookies import SimpleCookie
    from urllib.request import urlopen

    with urlopen(origin + "/", timeout=TIMEOUT_MS / 1000) as answer:
        jar = SimpleCookie()
        for header in answer.headers.get_all("Set-Cookie") or []:
            jar.load(header)
    return "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items()) or None


async def protocol_session(
    origin: str, index: int, requests: int, pause: float = 0.0, cookie: str | None = None
) -> dict:
    """One visitor speaking Streamlit's websocket protocol: the same sentences and views as :func:`one_session`
    (sending ``cookie``, as :func:`connect`)."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    errors: list[str] = []
    submits, switches = [], []
    widgets: dict[str, str] = {}  # label (or "tabs", "page") → the id the server gave it
    fragments: dict[str, str] = {}  # label → the fragment (st.fragment) its control belongs to, if any
    reader = Reader(index, pause)

    async def run(connection, query: str, states: dict[str, object]) -> tuple[float, list[str]]:
        """Send one rerun with these widget values; the seconds until the run finished, and its charts' keys."""
        message = BackMsg()
        message.rerun_script.query_string = query
        message.rerun_script.page_script_hash = widgets.get("page", "")
        # As a browser does: a control inside a fragment reruns only that fragment (the last control's decides).
        message.rerun_script.fragment_id = fragments.get(next(reversed(states), ""), "")
        for label, value in states.items():
            if label not in widgets:
                raise LookupError(f"the page showed no {label!r} control")
            state = message.rerun_script.widget_states.widgets.add()
            state.id = widgets[label]
            if value is True:
                state.trigger_value = True
            else:
                state.string_value = str(value)
        started = time.perf_counter()
        await connection.send(message.SerializeToString())
        charts = []
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(await asyncio.wait_for(connection.recv(), TIMEOUT_MS / 1000))
            kind = reply.WhichOneof("type")
            if kind == "new_session":
                widgets["page"] = reply.new_session.page_script_hash
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                name = element.WhichOneof("type")
                if name in ("text_area", "button"):
                    widgets[getattr(element, name).label] = getattr(element, name).id
                    fragments[getattr(element, name).label] = reply.delta.fragment_id
                elif name == "plotly_chart":
                    charts.append(element.plotly_chart.id.rsplit("-", 1)[-1])
                elif name == "exception":
                    errors.append(f"session {index}: the app shows an exception: {element.exception.message[:120]}")
            elif kind == "delta" and reply.delta.WhichOneof("type") == "add_block":
                block = reply.delta.add_block
                if block.WhichOneof("type") == "tab_container":
                    widgets["tabs"] = block.tab_container.id
                    fragments["tabs"] = reply.delta.fragment_id
            elif kind == "script_finished":
                return time.perf_counter() - started, charts

    query = "kind=encoder"
    try:
        async with connect(origin, f"192.0.2.{index % 250 + 1}", cookie) as connection:
            await run(connection, query, {})
            for sentence in sentences(index, requests):
                seconds, charts = await run(connection, query, {"English sentence": sentence, "Translate": True})
                if "heatmap" not in charts:
                    errors.append(f"session {index}: no heatmap after submitting {sentence!r}")
                submits.append(seconds)
                await reader.read()
                seconds, charts = await run(connection, query, {"English sentence": sentence, "tabs": "Model view"})
                if not any(chart.startswith("model_view") for chart in charts):  # keyed by the head it opens
                    errors.append(f"session {index}: no model view after switching")
                switches.append(seconds)
                await reader.read()
                await run(connection, query, {"English sentence": sentence, "tabs": "Heads"})
                await reader.read()
    except (TimeoutError, OSError, LookupError, websockets.WebSocketException) as error:
        errors.append(f"session {index}: {type(error).__name__} {error}")
    return {"submits": submits, "switches": switches, "errors": errors}


class Visitor:
    """One session speaking Streamlit's protocol for the class benchmark: reruns with widget values, following the
    pages a run switches to (a lesson step opens its page), and what each run showed."""

    def __init__(self, connection, index: int) -> None:
        self.connection = connection
        self.index = index
        self.page = ""  # the page script's hash
        self.pages: dict[str, str] = {}  # url path → page script hash
        self.query = ""
        self.widgets: dict[str, str] = {}  # label → id, from the last run

    async def run(self, query: str | None = None, states: dict[str, object] | None = None, page: str = "") -> dict:
        """One rerun (the current page, or ``page`` by its url path) until the page the run ends on has finished:
        seconds, alerts [(format, text)], charts' keys and exceptions."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        message = BackMsg()
        message.rerun_script.query_string = self.query if query is None else query
        message.rerun_script.page_script_hash = self.pages.get(page, self.page) if page else self.page
        for label, value in (states or {}).items():
            if label not in self.widgets:
                raise LookupError(f"the page showed no {label!r} control")
            state = message.rerun_script.widget_states.widgets.add()
            state.id = self.widgets[label]
            if value is True:
                state.trigger_value = True
            elif isinstance(value, list):  # a slider's value(s)
                state.double_array_value.data.extend(float(number) for number in value)
            else:
                state.string_value = str(value)
        started = time.perf_counter()
        await self.connection.send(message.SerializeToString())
        shown: dict[str, list] = {"alerts": [], "charts": [], "exceptions": []}
        self.widgets = {}
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(await asyncio.wait_for(self.connection.recv(), TIMEOUT_MS / 1000))
            kind = reply.WhichOneof("type")
            if kind == "navigation":
                self.page = reply.navigation.page_script_hash or self.page
                self.pages = {entry.url_pathname: entry.page_script_hash for entry in reply.navigation.app_pages}
            elif kind == "new_session":
                self.page = reply.new_session.page_script_hash or self.page
            elif kind == "page_info_changed":
                self.query = reply.page_info_changed.query_string
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                name = element.WhichOneof("type")
                if name in ("text_area", "text_input", "button", "slider"):
                    self.widgets[getattr(element, name).label] = getattr(element, name).id
                elif name == "alert":
                    shown["alerts"].append((element.alert.format, element.alert.body))
                elif name == "plotly_chart":
                    shown["charts"].append(element.plotly_chart.id.rsplit("-", 1)[-1])
                elif name == "exception":
                    shown["exceptions"].append(element.exception.message[:160])
            elif kind == "script_finished" and reply.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return {"seconds": time.perf_counter() - started, **shown}


def tour_steps() -> int:
    from transformer.features.lessons import read_lesson

    return len(read_lesson("paper_tour").steps)


async def class_session(
    origin: str, index: int, pause: float, train: bool, card: bool, train_seconds: int, job_timeout: float = 900.0
) -> dict:
    """One student of a class: the paper tour step by step at a reading pace, a sentence of their own translated on
    the first step that translates; with ``train``, a tiny model trained on the tour's training step (waiting for it
    to finish, the page asked again every two seconds as the browser's fragment does); with ``card``, a head's card of
    the atlas at the end. Short actions: every step, the translation, the card (seconds each)."""
    import websockets
    from streamlit.proto.Alert_pb2 import Alert

    short: list[float] = []
    jobs: list[float] = []
    errors: list[str] = []
    reader = Reader(index, pause)

    def check(result: dict, what: str) -> None:
        errors.extend(f"session {index}, {what}: the app shows an exception: {e}" for e in result["exceptions"])
        errors.extend(
            f"session {index}, {what}: an error box: {body[:120]}"
            for form, body in result["alerts"]
            if form == Alert.ERROR
        )

    cookie = None
    try:
        cookie = await asyncio.to_thread(first_page, origin)
        async with connect(origin, f"198.51.100.{index % 250 + 1}", cookie) as connection:
            visitor = Visitor(connection, index)
            check(await visitor.run(""), "the first page")
            translated = False
            for step in range(1, tour_steps() + 1):
                await reader.read()
                result = await visitor.run(f"lesson=paper_tour&lesson_step={step}")
                check(result, f"lesson step {step}")
                short.append(result["seconds"])
                if "Show the view" in visitor.widgets:  # the step's question, answered: its view revealed
                    await reader.read()
                    result = await visitor.run(states={"Show the view": True})
                    check(result, f"lesson step {step}'s view")
                    short.append(result["seconds"])
                if not translated and "Translate" in visitor.widgets and "English sentence" in visitor.widgets:
                    await reader.read()
                    sentence = sentences(index, 1)[0]
                    result = await visitor.run(states={"English sentence": sentence, "Translate": True})
                    check(result, "a translation")
                    if not result["charts"]:
                        errors.append(f"session {index}: no chart after submitting {sentence!r}")
                    short.append(result["seconds"])
                    translated = True
                if train and "Train" in visitor.widgets:
                    started = time.perf_counter()
                    await visitor.run(states={"Stop after this many seconds": [train_seconds]})  # the budget
                    result = await visitor.run(states={"Train": True})
                    check(result, "training")
                    ended = lambda r: any(f in (Alert.SUCCESS, Alert.WARNING) for f, _ in r["alerts"])  # noqa: E731
                    while not ended(result) and time.perf_counter() - started < job_timeout:
                        await asyncio.sleep(2.0)
                        result = await visitor.run()
                        check(result, "training")
                    if not ended(result):
                        errors.append(f"session {index}: the training did not end within {job_timeout:.0f} s")
                    elif not any(f == Alert.SUCCESS for f, _ in result["alerts"]):
                        errors.append(f"session {index}: the training ended without finishing")
                    jobs.append(time.perf_counter() - started)
                    train = False
            if card:
                await reader.read()
                head = f"encoder-5-{index % 8 + 1}"
                result = await visitor.run(f"atlas_head={head}", page="head_atlas")
                check(result, "an atlas card")
                short.append(result["seconds"])
    except (TimeoutError, OSError, LookupError, websockets.WebSocketException) as error:
        errors.append(f"session {index}: {type(error).__name__} {error}")
    return {"short": short, "jobs": jobs, "errors": errors, "cookie": cookie}


async def measure_class(
    origin: str,
    process: subprocess.Popen | None,
    students: int,
    trainers: int,
    cards: int,
    pause: float,
    train_seconds: int,
) -> dict:
    """A class at once: ``students`` sessions on the tour, the first ``trainers`` training, the next ``cards``
    opening an atlas card; short actions' p50/p95, the jobs' times, errors, the sessions each copy of the app kept
    (behind a proxy's sticky cookie) and, for a server started here (``process``), its cores and peak memory."""
    started, cpu = time.perf_counter(), cpu_seconds(process.pid) if process else {}
    visits = [
        class_session(origin, i, pause, i < trainers, trainers <= i < trainers + cards, train_seconds)
        for i in range(students)
    ]
    sessions = await asyncio.gather(*visits)
    wall = time.perf_counter() - started
    short = [value for session in sessions for value in session["short"]]
    jobs = [value for session in sessions for value in session["jobs"]]
    errors = [message for session in sessions for message in session["errors"]]
    used = cpu_seconds(process.pid) if process else {}
    copies = collections.Counter(session["cookie"] or "one server" for session in sessions)
    return {
        "students": students,
        "trainers": trainers,
        "cards": cards,
        "pause_s": pause,
        "train_seconds": train_seconds,
        "short_actions": len(short),
        "short_p50_s": round(statistics.median(short), 3) if short else None,
        "short_p95_s": round(percentile(short, 0.95), 3) if short else None,
        "short_max_s": round(max(short), 3) if short else None,
        "jobs_finished": len(jobs) - sum("training" in m for m in errors),
        "job_s": [round(value, 1) for value in jobs],
        "errors": len(errors),
        "error_messages": errors[:8],
        "wall_s": round(wall, 1),
        "sessions_per_copy": dict(sorted(copies.items())),
        "cores": {name: round((used[name] - cpu[name]) / wall, 2) for name in used} if process else None,
        "server_peak_mb": round(peak_memory_mb(process.pid), 1) if process else None,
    }


def warm_up(origin: str, log: Path, timeout: float = 180.0) -> None:
    """One visit (the model loads, the default sentence is translated), then wait until the server's translation
    process is ready or has failed (:func:`~benchmarks.app_server.wait_for_translation_process`)."""
    asyncio.run(protocol_session(origin, 0, 0))
    wait_for_translation_process(log, timeout)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(
    origin: str,
    process: subprocess.Popen,
    counts: list[int],
    requests: int,
    client: str = "browser",
    rounds: int = 1,
    pause: float = 0.0,
) -> list[dict]:
    """Each count of sessions in turn, ``rounds`` times over (1, 8, 1, 8, …): the counts compared then share the
    machine's slower and faster moments, and each count's figures pool all its rounds. Every session of every
    round submits sentences of its own, so no answer comes from the translation cache."""
    pooled = {
        count: {"submits": [], "switches": [], "errors": [], "wall_s": 0.0, "peak_mb": 0.0, "cpu_s": {}}
        for count in counts
    }
    async with contextlib.AsyncExitStack() as stack:
        browser = None
        if client == "browser":
            from playwright.async_api import async_playwright

            playwright = await stack.enter_async_context(async_playwright())
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            stack.push_async_callback(browser.close)
        first_session = 0
        for _ in range(rounds):
            for count in counts:
                started, cpu = time.perf_counter(), cpu_seconds(process.pid)
                indices = range(first_session, first_session + count)
                first_session += count
                if browser is not None:
                    visits = [one_session(browser, origin, i, requests, pause) for i in indices]
                else:
                    visits = [protocol_session(origin, i, requests, pause) for i in indices]
                sessions = await asyncio.gather(*visits)
                for name in ("submits", "switches", "errors"):
                    pooled[count][name] += [value for session in sessions for value in session[name]]
                pooled[count]["wall_s"] += time.perf_counter() - started
                for name, seconds in cpu_seconds(process.pid).items():
                    pooled[count]["cpu_s"][name] = pooled[count]["cpu_s"].get(name, 0.0) + seconds - cpu[name]
                pooled[count]["peak_mb"] = peak_memory_mb(process.pid)  # the peak so far, after this count's last round
    results = []
    for count, figures in pooled.items():
        submits, switches, errors = figures["submits"], figures["switches"], figures["errors"]
        results.append(
            {
                "sessions": count,
                "requests": len(submits),
                "expected_requests": count * requests * rounds,
                "errors": len(errors),
                "error_messages": errors[:5],
                "submit_p50_s": round(statistics.median(submits), 3) if submits else None,
                "submit_p95_s": round(percentile(submits, 0.95), 3) if submits else None,
                "switch_p50_s": round(statistics.median(switches), 3) if switches else None,
                "switch_p95_s": round(percentile(switches, 0.95), 3) if switches else None,
                "wall_s": round(figures["wall_s"], 1),
                # Cores each part kept busy on average (CPU seconds over wall seconds): the server (its pages and
                # Streamlit's own work), its translation process, and this benchmark's clients, which share the machine.
                "cores": {
                    name: round(seconds / figures["wall_s"], 2) if figures["wall_s"] else None
                    for name, seconds in figures["cpu_s"].items()
                },
                "server_peak_mb": round(figures["peak_mb"], 1),
            }
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,4,8,16", help="comma-separated session counts, run in turn")
    parser.add_argument("--requests", type=int, default=3, help="sentences each session submits")
    parser.add_argument(
        "--client",
        choices=("browser", "protocol"),
        default="browser",
        help="Chromium sessions, or Streamlit's websocket protocol without a browser",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure the session counts in turn this many times, pooling each's figures",
    )
    parser.add_argument(
        "--pause", type=float, default=0.0, help="seconds each session reads after each chart, on average (default 0)"
    )
    parser.add_argument("--checkpoint", default=None, help="checkpoint name or folder (default: the shipped model)")
    parser.add_argument(
        "--class",
        dest="students",
        type=int,
        default=0,
        help="a class of this many sessions on the paper tour (protocol client; see --trainers, --cards, --pause)",
    )
    parser.add_argument("--trainers", type=int, default=5, help="--class: students who train a tiny model")
    parser.add_argument("--cards", type=int, default=3, help="--class: students who open an atlas card")
    parser.add_argument("--train-seconds", type=int, default=30, help="--class: each training's budget (10-90)")
    parser.add_argument(
        "--origin",
        default=None,
        help="--class: drive a server already running at this address (e.g. scripts/serve_class.sh's proxy, "
        "http://127.0.0.1:8501) instead of starting one",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="start measuring at once: every session's first page on a server that has served none "
        "(default: after one visit, with the translation process ready)",
    )
    args = parser.parse_args(argv)
    if args.client == "browser" and not Path(CHROMIUM).is_file():
        print(f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 1
    counts = [int(part) for part in args.sessions.split(",") if part.strip()]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"load-server-{os.getpid()}.log"
    if args.students:
        return run_class(args, log)
    with serving(args.checkpoint, log) as (origin, process):
        if not args.cold:
            warm_up(origin, log)
        results = asyncio.run(measure(origin, process, counts, args.requests, args.client, args.rounds, args.pause))
        stuck = any(
            "timed out" in message or "TimeoutError" in message for r in results for message in r["error_messages"]
        )
        before = log.read_text(errors="replace") if stuck else ""
        # What the server's threads wait for (app.py's faulthandler), if the app has set its handler yet.
        if stuck and hasattr(signal, "SIGUSR1") and catches(process.pid, signal.SIGUSR1):
            os.kill(process.pid, signal.SIGUSR1)
            time.sleep(2)
    # The log up to the timeout (an exception shows there) and then the threads' stacks, each cut to its end.
    server_log = before[-12_000:] + log.read_text(errors="replace")[len(before) :][-12_000:] if stuck else None
    single = next((r["submit_p95_s"] for r in results if r["sessions"] == 1), None)
    eight = next((r["submit_p95_s"] for r in results if r["sessions"] == 8), None)
    # The target: p95 at 8 sessions at most 3 × the single session's.
    ratio = round(eight / single, 2) if single and eight else None
    summary = {
        "client": args.client,
        "pause_s": args.pause,
        "results": results,
        "single_session_p95_s": single,
        "p95_ratio_8_to_1": ratio,
        "server_log_tail": server_log,  # only after a timeout: the server's log, with every thread's stack
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(
        f"{'sessions':>8} {'requests':>8} {'errors':>6} {'submit p50':>10} {'p95':>7} {'switch p50':>10} {'p95':>7} "
        f"{'server peak':>11}  cores: server/search/clients"
    )
    for r in results:
        cores = "/".join(f"{value:.2f}" for value in r["cores"].values())
        print(
            f"{r['sessions']:>8} {r['requests']:>4}/{r['expected_requests']:<3} {r['errors']:>6} "
            f"{r['submit_p50_s']:>9}s {r['submit_p95_s']:>6}s {r['switch_p50_s']:>9}s {r['switch_p95_s']:>6}s "
            f"{r['server_peak_mb']:>8} MB  {cores}"
        )
        for message in r["error_messages"]:
            print(f"         {message}")
    if ratio is not None:
        print(f"p95 at 8 sessions / p95 of one: {ratio}× (target ≤ 3×)")
    return 0


def warm_up_copies(origin: str, visits: int = 8) -> None:
    """One visit to each copy of the app behind ``origin`` (a proxy that balances new visitors, without a cookie, in
    turn): visits until a copy's cookie comes back a second time, ``visits`` at most."""
    seen: set[str | None] = set()
    for _ in range(visits):
        cookie = first_page(origin)
        if cookie in seen:
            return
        seen.add(cookie)
        asyncio.run(protocol_session(origin, 0, 0, cookie=cookie))


def run_class(args: argparse.Namespace, log: Path) -> int:
    pause = args.pause if args.pause > 0 else 8.0  # a class reads: 8 s between actions on average unless told
    figures = (args.students, args.trainers, args.cards, pause, args.train_seconds)
    if args.origin:  # a server (or a proxy) already running
        warm_up_copies(args.origin.rstrip("/"))
        result = asyncio.run(measure_class(args.origin.rstrip("/"), None, *figures))
    else:
        with serving(args.checkpoint, log) as (origin, process):
            warm_up(origin, log)
            result = asyncio.run(measure_class(origin, process, *figures))
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{result['students']} students ({result['trainers']} training, {result['cards']} opening a card), "
        f"{result['wall_s']} s: short actions p50 {result['short_p50_s']} s, p95 {result['short_p95_s']} s, "
        f"max {result['short_max_s']} s; jobs {result['job_s']}; errors {result['errors']}"
    )
    if len(result["sessions_per_copy"]) > 1:
        print("sessions per copy of the app: " + ", ".join(f"{k} {v}" for k, v in result["sessions_per_copy"].items()))
    for message in result["error_messages"]:
        print(f"    {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
