"""How many page runs use the interpreter at once: one per core (two at least), in the order they were asked for.

More threads would only take turns at Python's interpreter lock in an order left to chance: under load some
visitors waited many times longer than others (``benchmarks/load.py``). ``app.py`` runs every page inside
``page_slots().run()``. A run that waits for the shared model (:class:`transformer.serving.Translator`) leaves its
slot meanwhile (``paused()``), so that the sessions behind it can reach the model's queue too and their sentences
are searched in the same batch instead of one or two at a time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st


class PageSlots:
    """A counting semaphore for page runs that a run can step out of while it waits for something else."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.count = count
        self._free = threading.Semaphore(count)
        self._holding = threading.local()

    def holds(self) -> bool:
        """Whether the calling thread is inside :meth:`run` (and not paused)."""
        return getattr(self._holding, "value", False)

    @contextmanager
    def run(self) -> Iterator[None]:
        """Hold a slot for the block (waiting for one if all are taken)."""
        self._free.acquire()
        self._holding.value = True
        try:
            yield
        finally:
            self._holding.value = False
            self._free.release()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Leave the slot for the block and take one again after it; outside :meth:`run`, nothing to leave."""
        if not self.holds():
            yield
            return
        self._holding.value = False
        self._free.release()
        try:
            yield
        finally:
            self._free.acquire()
            self._holding.value = True


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@st.cache_resource(show_spinner=False)
def page_slots() -> PageSlots:
    """The server's page slots, one per core and two at least (so that one long measurement never holds up
    everyone)."""
    return PageSlots(max(2, cores()))
