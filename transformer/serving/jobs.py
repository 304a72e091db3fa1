"""Long jobs outside the page runs: a queue that runs a tiny model's training (and any other job of :data:`KINDS`) in
worker processes, so that a page that asked for one finishes its run at once and every other visitor's page goes on.

The app runs at most a few pages at once (:mod:`pages.page_slots`); a training of up to 90 seconds inside a page run
held one of those slots, and on a 2-core server two students pressing *Train* stalled every other visitor
(docs/reliability.md). Here a job waits in a first-come queue with its place shown; ``workers`` of them run at once,
each in a child process (``python -m transformer.serving.jobs``) with one PyTorch thread, so a page and a job never
take turns at one interpreter. The job's progress (each snapshot) comes back as it is made and stays with the job:
a student who leaves the page and comes back, or reloads it with the job's id in the address, finds it where it got
to, or finished. Each owner (a browser session) may have ``per_owner`` unfinished jobs; the queue holds at most
``capacity``.

Parent and child talk in the frames of :mod:`transformer.serving.process` (a 1-byte kind, an 8-byte length, the
bytes): a request is JSON ({kind, settings}); each piece of progress JSON followed by raw float32 arrays; no pickle.
A job the owner cancels ends its child, and the worker starts a fresh one for the next job.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transformer.serving.process import (
    ANSWER,
    FAILURE,
    READY,
    REQUEST,
    read_frame,
    request_payloads,
    stop,
    write_frame,
)

WAITING, RUNNING, FINISHED, FAILED, CANCELLED = "waiting", "running", "finished", "failed", "cancelled"
ENDED = (FINISHED, FAILED, CANCELLED)


class JobError(RuntimeError):
    """A job cannot be queued (the owner's limit, the queue's capacity, an unknown kind)."""


@dataclass
class Job:
    """One job: who asked (``owner``), what (``kind`` and JSON ``settings``), where it is (``state``), and its
    progress so far (decoded by the kind, oldest first)."""

    id: str
    owner: str
    kind: str
    settings: dict[str, Any]
    state: str = WAITING
    progress: list[Any] = field(default_factory=list)
    error: str | None = None
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    ended: float | None = None

    @property
    def done(self) -> bool:
        return self.state in ENDED


# ------------------------------------------------------------------------------------------------ payloads
def encode_progress(record: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """JSON ``record`` and named float32 arrays as one payload (the arrays' names and shapes in the JSON)."""
    shapes, blobs = {}, []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array, dtype=np.float32)
        shapes[name] = list(array.shape)
        blobs.append(array.tobytes())
    header = json.dumps({"record": record, "shapes": shapes}).encode("utf-8")
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def decode_progress(payload: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    (size,) = struct.unpack_from("<Q", payload)
    header = json.loads(payload[8 : 8 + size].decode("utf-8"))
    arrays, offset = {}, 8 + size
    for name, shape in header["shapes"].items():
        count = int(np.prod(shape))
        arrays[name] = np.frombuffer(payload, np.float32, count, offset).reshape(shape).copy()
        offset += 4 * count
    if offset != len(payload):
        raise ValueError(f"{len(payload) - offset} bytes left after the arrays")
    return header["record"], arrays


# ------------------------------------------------------------------------------------------------ kinds of job
def _toy_run(settings: dict[str, Any]) -> Iterator[bytes]:
    from transformer.features.toy import ToySettings, train

    for snapshot in train(ToySettings(**settings)):
        record = {"step": snapshot.step, "seconds": snapshot.seconds, "label": snapshot.label}
        yield encode_progress({**record, "metrics": snapshot.metrics}, snapshot.attention)


def _toy_read(payload: bytes):
    from transformer.features.toy import ToySnapshot

    record, arrays = decode_progress(payload)
    metrics = {str(k): float(v) for k, v in record["metrics"].items()}
    return ToySnapshot(int(record["step"]), float(record["seconds"]), str(record["label"]), arrays, metrics)


def _sleep_run(settings: dict[str, Any]) -> Iterator[bytes]:
    """A job that only waits (tests and the load benchmark's queue checks): ``steps`` pieces, ``seconds`` apart;
    ``fail_at`` raises at that piece."""
    for step in range(int(settings.get("steps", 3))):
        if settings.get("fail_at") == step:
            raise RuntimeError(f"failed at step {step} as asked")
        time.sleep(float(settings.get("seconds", 0.1)))
        yield encode_progress({"step": step + 1}, {})


def _sleep_read(payload: bytes) -> int:
    return int(decode_progress(payload)[0]["step"])


# kind → (run in the child: settings → payloads, read in the parent: payload → progress item)
KINDS: dict[str, tuple[Callable[[dict[str, Any]], Iterator[bytes]], Callable[[bytes], Any]]] = {
    "toy": (_toy_run, _toy_read),
    "sleep": (_sleep_run, _sleep_read),
}


# ------------------------------------------------------------------------------------------------ the queue
class _Worker:
    """One child process (started on first use, again after a cancel or a crash) and the thread that feeds it."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.process: subprocess.Popen | None = None
        self.job: Job | None = None
        self.running: subprocess.Popen | None = None  # the child while it runs ``job`` (set under the queue's lock)
        self.thread = threading.Thread(target=self._loop, name="job-worker", daemon=True)
        self.thread.start()

    def _child(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            repository = str(Path(__file__).resolve().parent.parent.parent)
            paths = [repository, *filter(None, [os.environ.get("PYTHONPATH")])]
            environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "OMP_NUM_THREADS": "1"}
            command = [sys.executable, "-m", "transformer.serving.jobs"]
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment)
        return self.process

    def _loop(self) -> None:
        while True:
            job = self.queue._next(self)
            if job is None:
                return
            try:
                self._run(job)
            except Exception as error:  # a dead or confused child: the job fails, the next one gets a new child
                self.queue._end(job, FAILED, f"{type(error).__name__}: {error}")
                self.close()
            finally:
                self.job = None

    def _run(self, job: Job) -> None:
        process = self._child()
        with self.queue._changed:
            if job.state == CANCELLED:  # cancelled before it started: the child never saw it and stays
                return
            self.running = process  # what a cancel ends (JobQueue.cancel), exactly this child
        try:
            _, read = KINDS[job.kind]
            write_frame(process.stdin, REQUEST, json.dumps({"kind": job.kind, "settings": job.settings}).encode())
            while True:
                kind, payload = read_frame(process.stdout)
                if job.state == CANCELLED:
                    # The child may still be in the cancelled job: never give it another, or the next job would
                    # read this one's frames (another session's training).
                    self._discard(process)
                    return
                if kind == ANSWER:
                    self.queue._progress(job, read(payload))
                elif kind == READY:
                    self.queue._end(job, FINISHED)
                    return
                else:
                    self.queue._end(job, FAILED, payload.decode("utf-8", "replace"))
                    return
        finally:
            with self.queue._changed:
                self.running = None

    def _discard(self, process: subprocess.Popen) -> None:
        if self.process is process:
            self.process = None
        end_child(process)

    def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            end_child(process)


def end_child(process: subprocess.Popen) -> None:
    """End a worker's child: its input closed (it ends by itself), killed if it does not within 5 s."""
    if process.poll() is None:
        with suppress(OSError):
            process.stdin.close()
        stop(process, grace=5.0)


class JobQueue:
    """First come, first served, ``workers`` jobs at a time, each in its own worker process (see the module)."""

    def __init__(self, workers: int = 1, per_owner: int = 1, capacity: int = 64) -> None:
        if workers < 1 or per_owner < 1 or capacity < 1:
            raise ValueError("workers, per_owner and capacity must be at least 1")
        self.per_owner = per_owner
        self.capacity = capacity
        self._jobs: dict[str, Job] = {}
        self._waiting: list[Job] = []
        self._changed = threading.Condition()
        self._closed = False
        self._workers = [_Worker(self) for _ in range(workers)]

    # ---- what pages call
    def submit(self, owner: str, kind: str, settings: dict[str, Any]) -> Job:
        """Queue a job; :class:`JobError` when ``owner`` has ``per_owner`` unfinished jobs or the queue is full."""
        if kind not in KINDS:
            raise JobError(f"unknown kind of job {kind!r}")
        json.dumps(settings)  # only JSON goes to a worker
        with self._changed:
            if self._closed:
                raise JobError("the job queue is closed")
            unfinished = [job for job in self._jobs.values() if job.owner == owner and not job.done]
            if len(unfinished) >= self.per_owner:
                raise JobError(f"this session already has {len(unfinished)} job(s) waiting or running")
            if len(self._waiting) >= self.capacity:
                raise JobError(f"the queue is full ({self.capacity} jobs waiting)")
            # The id is what a link carries (toy_job=…): a secret, so that no visitor finds another's job by counting.
            job = Job(secrets.token_urlsafe(16), owner, kind, settings)
            self._jobs[job.id] = job
            self._waiting.append(job)
            self._forget_old()
            self._changed.notify_all()
        return job

    def get(self, job_id: str | None) -> Job | None:
        with self._changed:
            return self._jobs.get(job_id or "")

    def place(self, job: Job) -> int:
        """1 for the next job to start, 2 for the one after…; 0 when it is running or ended."""
        with self._changed:
            return self._waiting.index(job) + 1 if job in self._waiting else 0

    @property
    def waiting(self) -> int:
        with self._changed:
            return len(self._waiting)

    @property
    def running(self) -> int:
        with self._changed:
            return sum(job.state == RUNNING for job in self._jobs.values())

    def cancel(self, job: Job) -> None:
        """Stop a job, waiting or running; its progress so far stays."""
        with self._changed:
            if job.done:
                return
            if job in self._waiting:
                self._waiting.remove(job)
            job.state, job.ended = CANCELLED, time.monotonic()
            # The child running this job, taken under the lock: never one its worker has started since.
            children = [w.running for w in self._workers if w.job is job and w.running is not None]
            self._changed.notify_all()
        for process in children:
            end_child(process)  # the worker sees its pipe close and starts a fresh child for its next job

    def wait(self, job: Job, timeout: float | None = None) -> bool:
        """Block until ``job`` has ended (True) or ``timeout`` seconds have passed (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not job.done:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def close(self) -> None:
        with self._changed:
            self._closed = True
            for job in self._waiting:
                job.state = CANCELLED
            self._waiting.clear()
            self._changed.notify_all()
        for worker in self._workers:
            worker.close()

    # ---- what workers call
    def _next(self, worker: _Worker) -> Job | None:
        with self._changed:
            while not self._waiting and not self._closed:
                self._changed.wait()
            if self._closed:
                return None
            job = self._waiting.pop(0)
            job.state, job.started = RUNNING, time.monotonic()
            worker.job = job
            self._changed.notify_all()
            return job

    def _progress(self, job: Job, item: Any) -> None:
        with self._changed:
            job.progress.append(item)
            self._changed.notify_all()

    def _end(self, job: Job, state: str, error: str | None = None) -> None:
        with self._changed:
            if not job.done:
                job.state, job.error, job.ended = state, error, time.monotonic()
            self._changed.notify_all()

    def _forget_old(self, keep: int = 512) -> None:
        """Ended jobs beyond the newest ``keep`` are forgotten (a long-running server's memory)."""
        ended = [job for job in self._jobs.values() if job.done]
        for job in ended[: max(0, len(ended) - keep)]:
            del self._jobs[job.id]


# ------------------------------------------------------------------------------------------------ the child
def child(stdin, stdout) -> None:
    """Run the jobs the parent sends, one after another, until its pipe closes."""
    import torch

    torch.set_num_threads(1)
    for payload in request_payloads(stdin, stdout):
        try:
            request = json.loads(payload)
            run, _ = KINDS[request["kind"]]
            for piece in run(request["settings"]):
                write_frame(stdout, ANSWER, piece)
            write_frame(stdout, READY, b"{}")
        except Exception as error:
            write_frame(stdout, FAILURE, f"{type(error).__name__}: {error}".encode())


def settings_of(dataclass_instance) -> dict[str, Any]:
    """A settings dataclass as the JSON a job takes."""
    return asdict(dataclass_instance)


def main(argv: list[str] | None = None) -> int:
    """The worker process the job queue starts: no options; it reads job requests as frames on its standard input
    and answers on its standard output until the input closes."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m transformer.serving.jobs",
        description="A job queue's worker process (started by the app, not by hand): runs the jobs it reads as "
        "frames on standard input, answering on standard output, until the input closes.",
    ).parse_args(argv)
    child(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
