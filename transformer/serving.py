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
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace

from transformer.analysis.attention import Translation, translate_many_with_attention
from transformer.checkpoint import LoadedCheckpoint
from transformer.decode import DEFAULT_DECODING, DecodingOptions
from transformer.model import Transformer

MAX_BATCH = 16  # sentences in one search; more would only make the first of them wait for the longest


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
    """

    def __init__(
        self,
        loaded: LoadedCheckpoint,
        max_batch: int = MAX_BATCH,
        around_batch: Callable[[], AbstractContextManager] = nullcontext,
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

    def _run_next_batch(self) -> None:
        # Both taken before the batch is chosen, so that sentences queued meanwhile join it.
        with self.around_batch(), exclusive(self.loaded):
            with self._changed:
                key = self._pending[0].key()
                batch = [request for request in self._pending if request.key() == key][: self.max_batch]
                for request in batch:
                    self._pending.remove(request)
            started = time.perf_counter()
            options, max_tokens = key
            try:
                results = translate_many_with_attention(
                    self.loaded.model, self.loaded.tokenizer, [r.text for r in batch], options, max_tokens
                )
            except BaseException as error:  # each caller of the batch gets the failure, not only the runner
                for request in batch:
                    request.error = error
                if not isinstance(error, Exception):  # an interrupt: the runner's thread must stop too
                    raise
                return
            finally:
                self.batches.append(len(batch))
            for request, result in zip(batch, results, strict=True):
                request.result = replace(result, seconds={**result.seconds, "waited": started - request.queued})
