"""One model, many callers at once: the app's sessions share a loaded checkpoint through this module.

A server process loads each checkpoint once and every visitor's session runs in its own thread. Two things go
wrong when those threads use the model directly: switching heads off (:meth:`Transformer.head_mask`) or taking
gradients changes the shared modules, so a translation running at the same moment in another session would silently
lose those heads; and simultaneous searches each ask PyTorch for every core, so they slow each other down.

- :class:`Translator` is the queue in front of the shared model for translations: sentences that arrive while it
  is busy wait, and are then searched **together in one batch** (:func:`translate_many_with_attention`), so eight
  visitors who press *Translate* at once cost little more than one. A sentence that arrives while the model is free
  starts at once; nothing ever waits for a timer. The batch runs holding the checkpoint's ``lock``
  (:func:`exclusive`).
- :func:`scratch_model` lends a private copy of the model for work that changes it (ablations, head importance),
  so the shared model is only ever read, and a long measurement never holds up anyone's translation.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace

from transformer.analysis.attention import Translation, translate_many_with_attention
from transformer.formats.checkpoint import LoadedCheckpoint, available_memory
from transformer.paper.model import Transformer
from transformer.search.decode import DEFAULT_DECODING, DecodingOptions
from transformer.serving.process import TranslationProcess, TranslationProcessError

RESTART_SECONDS = 30.0  # a child process that failed is started again at most this often
MAX_BATCH = 16  # sentences in one search; more would only make the first of them wait for the longest
PROCESSES_VARIABLE = "TRANSFORMER_TRANSLATION_PROCESSES"  # the most translation processes at once
DEFAULT_PROCESSES = 4
CHILD_OVERHEAD = 450 * 2**20  # a child's Python and PyTorch beside its model (measured: 445 MB with the shipped one)
MEMORY_RESERVE = 1 << 30  # left free for the server's own pages when a child is started


class ChildProcesses:
    """How many translation processes run in this server, and whether one more may start: at most
    ``$TRANSFORMER_TRANSLATION_PROCESSES`` (default 4) at once, and only while the free memory holds its model and
    its Python beside a reserve for the pages. A model refused a child translates in the server's own process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0

    @staticmethod
    def limit() -> int:
        try:
            return max(0, int(os.environ.get(PROCESSES_VARIABLE, DEFAULT_PROCESSES)))
        except ValueError:
            return DEFAULT_PROCESSES

    def take(self, model: Transformer) -> str | None:
        """Reserve a place for one more child; None when taken, else why not (a place taken is given back with
        :meth:`give`)."""
        needed = CHILD_OVERHEAD + sum(p.numel() * p.element_size() for p in (*model.parameters(), *model.buffers()))
        with self._lock:
            if self.running >= self.limit():
                return f"{self.running} translation processes run already, the most {PROCESSES_VARIABLE} allows"
            free = available_memory()
            if free is not None and needed + MEMORY_RESERVE > free:
                return f"{free / 2**30:.1f} GB of memory are free; a process for this model needs {needed / 2**30:.1f}"
            self.running += 1
            return None

    def give(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


CHILDREN = ChildProcesses()  # one count per server process


@contextmanager
def exclusive(loaded: LoadedCheckpoint) -> Iterator[LoadedCheckpoint]:
    """Hold the checkpoint's lock for the block: no translation batch runs on its shared model meanwhile."""
    with loaded.lock:
        yield loaded


@contextmanager
def scratch_model(loaded: LoadedCheckpoint) -> Iterator[Transformer]:
    """A private copy of the checkpoint's model for the block, for work that changes a model (heads switched off,
    gradients). One copy per loaded checkpoint, made on first use and lent to one caller at a time; the shared model
    is never changed, so translations go on meanwhile."""
    with loaded.scratch_lock:
        if loaded.scratch is None:
            loaded.scratch = copy.deepcopy(loaded.model).eval()
        yield loaded.scratch


@dataclass
class _Request:
    text: str
    options: DecodingOptions
    max_tokens: int | None
    queued: float = field(default_factory=time.perf_counter)
    result: Translation | None = None
    error: BaseException | None = None

    @property
    def answered(self) -> bool:
        return self.result is not None or self.error is not None

    def key(self) -> tuple[DecodingOptions, int | None]:
        return self.options, self.max_tokens


class Translator:
    """Translations of one loaded checkpoint for many threads, batched while the model is busy.

    :meth:`translate` blocks until its sentence is translated. The caller whose sentence is waiting when the model
    becomes free takes every waiting sentence with the same decoding options (up to ``max_batch``, oldest first),
    searches them in one batch under the checkpoint's lock and hands each its result; the others keep waiting for
    theirs. Never call it while holding the checkpoint's lock (:func:`exclusive`): the caller running the batch
    waits for that lock. ``around_batch`` is entered around each batch (the app passes
    :meth:`pages.page_slots.PageSlots.exclusive`, so that no page runs Python during a search). ``batches`` holds
    the sentence counts of the latest searches (at most 1,000, so a server that runs for weeks does not grow it
    without end).

    With ``separate_process`` the batches are searched in a child process with its own copy of the model
    (:class:`~transformer.serving.process.TranslationProcess`, started in the background at once), so that the
    callers' threads run Python meanwhile instead of taking turns with the search; ``around_batch`` and the lock
    are then not needed and not taken. Until the child is ready, and whenever it fails (it is then started again,
    at most every :data:`RESTART_SECONDS`), batches run in this process as without it. ``process_threads`` is the
    child's PyTorch threads (default: every core), or a function asked before each batch (the app gives the search
    every core while no page is running, and leaves one to the pages otherwise).
    """

    def __init__(
        self,
        loaded: LoadedCheckpoint,
        max_batch: int = MAX_BATCH,
        around_batch: Callable[[], AbstractContextManager] = nullcontext,
        separate_process: bool = False,
        process_threads: int | Callable[[], int] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.loaded = loaded
        self.max_batch = max_batch
        self.around_batch = around_batch
        self.batches: deque[int] = deque(maxlen=1000)
        self._pending: list[_Request] = []
        self._busy = False
        self._changed = threading.Condition()
        self.separate_process = separate_process
        self.process_threads = process_threads
        self.process: TranslationProcess | None = None  # set once the child is ready
        self.process_failures: list[str] = []  # why the child could not start or failed (the latest 20)
        self._starting: threading.Thread | None = None
        self._last_start = float("-inf")
        self._place = threading.Lock()  # held while this queue holds a place among the CHILDREN
        self._has_place = False
        if separate_process:
            self._start_process()

    def _start_process(self) -> None:
        """Start the child in the background (unless one is starting, the last try was very recent, or the queue was
        closed: its model has left the cache)."""
        if not self.separate_process or (self._starting is not None and self._starting.is_alive()):
            return
        if time.monotonic() - self._last_start < RESTART_SECONDS:
            return
        self._last_start = time.monotonic()

        def start() -> None:
            started = time.perf_counter()
            refused = self._take_place()
            if refused:
                self._failed(f"not started: {refused}")
                return
            try:
                process = TranslationProcess(self.loaded.path, self.loaded.model, self._threads())
            except (TranslationProcessError, OSError) as error:
                self._give_place()
                self._failed(f"could not start: {error}")
                return
            if not self.separate_process:  # closed meanwhile
                process.close()
                self._give_place()
                return
            self.process = process
            print(
                f"translation process for {self.loaded.path}: ready (pid {process.pid}, "
                f"{time.perf_counter() - started:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

        # Not a daemon: Python waits for the start to end before it exits. A daemon thread still inside PyTorch (the
        # weights' checksum) when Python ends is stopped there, and that aborts the whole process.
        self._starting = threading.Thread(target=start, name="translation-process-start", daemon=False)
        self._starting.start()

    def _take_place(self) -> str | None:
        with self._place:
            if self._has_place:
                return None
            refused = CHILDREN.take(self.loaded.model)
            self._has_place = refused is None
            return refused

    def _give_place(self) -> None:
        with self._place:
            if self._has_place:
                self._has_place = False
                CHILDREN.give()

    def _threads(self) -> int | None:
        threads = self.process_threads
        return threads() if callable(threads) else threads

    def _failed(self, message: str) -> None:
        self.process_failures = [*self.process_failures[-19:], message]
        print(
            f"translation process for {self.loaded.path}: {message}; translating in the server",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """End the child process, if any (batches then run in this process)."""
        self.separate_process = False
        process, self.process = self.process, None
        if process is not None:
            process.close()
        self._give_place()

    @property
    def waiting(self) -> int:
        """Sentences queued and not yet being searched."""
        with self._changed:
            return len(self._pending)

    def translate(
        self, text: str, options: DecodingOptions = DEFAULT_DECODING, max_tokens: int | None = None
    ) -> Translation:
        """:func:`~transformer.analysis.attention.translate_with_attention` on the shared model; ``seconds["waited"]``
        is the time the sentence spent queued before its search began."""
        request = _Request(text, options, max_tokens)
        with self._changed:
            self._pending.append(request)
        while True:
            with self._changed:
                while self._busy and not request.answered:
                    self._changed.wait()
                if request.answered:
                    break
                self._busy = True  # this caller runs the next batch (which may or may not hold its own sentence)
            try:
                self._run_next_batch()
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _take_batch(self) -> list[_Request]:
        with self._changed:
            key = self._pending[0].key()
            batch = [request for request in self._pending if request.key() == key][: self.max_batch]
            for request in batch:
                self._pending.remove(request)
        return batch

    def _run_next_batch(self) -> None:
        process = self.process
        if process is not None:
            batch = self._take_batch()
            try:
                self._search(batch, functools.partial(process.translate_many, threads=self._threads()))
                return
            except TranslationProcessError as error:
                self.process = None
                self._give_place()
                self._failed(str(error))
                self._start_process()
                with self._changed:  # searched below, in this process, ahead of the sentences that came later
                    self._pending[:0] = batch
        elif self.separate_process:
            self._start_process()
        # Both taken before the batch is chosen, so that sentences queued meanwhile join it.
        with self.around_batch(), exclusive(self.loaded):
            self._search(
                self._take_batch(),
                functools.partial(translate_many_with_attention, self.loaded.model, self.loaded.tokenizer),
            )

    def _search(self, batch: list[_Request], translate_many: Callable[..., list[Translation]]) -> None:
        """Search one batch with ``translate_many`` and hand each request its result or the batch's failure;
        :class:`TranslationProcessError` leaves the requests unanswered and is raised."""
        options, max_tokens = batch[0].key()
        started = time.perf_counter()
        try:
            results = translate_many([r.text for r in batch], options, max_tokens)
        except TranslationProcessError:
            raise
        except BaseException as error:  # each caller of the batch gets the failure, not only the runner
            self.batches.append(len(batch))
            for request in batch:
                request.error = error
            if not isinstance(error, Exception):  # an interrupt: the runner's thread must stop too
                raise
            return
        self.batches.append(len(batch))
        for request, result in zip(batch, results, strict=True):
            request.result = replace(result, seconds={**result.seconds, "waited": started - request.queued})
