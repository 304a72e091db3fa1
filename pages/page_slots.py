"""How many page runs use the interpreter at once: one per core (two at least), in the order they were asked for.

More threads would only take turns at Python's interpreter lock in an order left to chance: under load some
visitors waited many times longer than others (``benchmarks/load.py``). ``app.py`` runs every page inside
``page_slots().run()``. A run that waits for the shared model (:class:`transformer.serving.translator.Translator`)
leaves its slot meanwhile (``paused()``), so that the sessions behind it can reach the model's queue too and their
sentences are searched in the same batch instead of one or two at a time.

A batch itself runs with every slot taken (``exclusive()``): a search is thousands of short PyTorch calls, and each
must take the interpreter lock back from whatever Python runs beside it, so a search beside one busy thread took
many times its own time (measured in docs/reliability.md); with the pages held for the batch's fraction of a
second, it takes its own time, and the pages then run on.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx


class PageSlots:
    """A counting semaphore for page runs that a run can step out of while it waits for something else."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.count = count
        self._free = threading.Semaphore(count)
        self._holding = threading.local()
        self._held = 0  # slots held by running pages (not by exclusive())
        self._counting = threading.Lock()
        self._sole = threading.Lock()  # one exclusive() at a time, so two never hold half the slots each

    @property
    def running(self) -> int:
        """How many pages are running Python now (holding a slot and not paused)."""
        return self._held

    def _count(self, change: int) -> None:
        with self._counting:
            self._held += change

    def holds(self) -> bool:
        """Whether the calling thread is inside :meth:`run` (and not paused)."""
        return getattr(self._holding, "value", False)

    @contextmanager
    def run(self) -> Iterator[None]:
        """Hold a slot for the block (waiting for one if all are taken)."""
        self._free.acquire()
        self._holding.value = True
        self._count(1)
        try:
            yield
        finally:
            self._count(-1)
            self._holding.value = False
            self._free.release()

    @contextmanager
    def held(self) -> Iterator[None]:
        """:meth:`run`, unless the calling thread holds a slot already: a fragment's own rerun (``st.fragment``)
        does not pass through ``app.py`` and takes its slot here, while in a whole page's run it is inside one."""
        if self.holds():
            yield
            return
        with self.run():
            yield

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Leave the slot for the block and take one again after it; outside :meth:`run`, nothing to leave."""
        if not self.holds():
            yield
            return
        self._count(-1)
        self._holding.value = False
        self._free.release()
        try:
            yield
        finally:
            self._free.acquire()
            self._holding.value = True
            self._count(1)

    @contextmanager
    def exclusive(self, timeout: float = 0.5) -> Iterator[int]:
        """Take every slot for the block, so that no page runs Python meanwhile; yields how many were taken. Slots
        still held after ``timeout`` seconds (a page in a long measurement) are left to their pages and the block
        runs anyway (a page's Python between two waits lasts well under a tenth of a second). Call it outside
        :meth:`run`, or from within :meth:`paused`."""
        if self.holds():
            raise RuntimeError("exclusive() inside a page slot would wait for itself; pause the slot first")
        taken = 0
        with self._sole:
            deadline = time.monotonic() + timeout
            while taken < self.count and self._free.acquire(timeout=max(0.0, deadline - time.monotonic())):
                taken += 1
            try:
                yield taken
            finally:
                for _ in range(taken):
                    self._free.release()


def called_outside_the_slot(cached):
    """Call ``cached`` (an ``st.cache_data`` or ``st.cache_resource`` function) with the page's slot left
    (:meth:`PageSlots.paused`), and take the slot back after it.

    For cached functions whose work leaves the slot (a translation waiting for the shared model, a measurement of
    minutes): a session that finds another session computing the same entry waits on the cache's lock, and had it
    kept its slot meanwhile, the session computing could not take a slot back to finish. With every slot held by
    such waiters the server hung: a class opening the app at once, everyone's first page translating the same
    default sentence."""

    @functools.wraps(cached)
    def call(*args, **kwargs):
        with page_slots().paused():
            return cached(*args, **kwargs)

    return call


def fragment_in_a_slot(function):
    """``st.fragment`` whose own reruns take a page slot (:meth:`PageSlots.held`): a fragment's rerun does not pass
    through ``app.py``'s slot, while inside a whole page's run it is in that page's slot already."""

    @st.fragment
    @functools.wraps(function)
    def run(*args, **kwargs):
        with page_slots().held():
            return function(*args, **kwargs)

    return run


def browser_on_this_machine() -> bool:
    """Whether the session running this reached the server over the loopback interface, not through a proxy: its
    browser then runs on the server's own cores (``streamlit run app.py`` on a laptop). False outside a session."""
    if get_script_run_ctx() is None:
        return False
    try:
        if {name.lower() for name in st.context.headers} & {"x-forwarded-for", "forwarded", "x-real-ip"}:
            return False
        return st.context.ip_address is None  # Streamlit's answer for 127.0.0.1 and ::1
    except Exception:  # no connection to ask (a test's script runner)
        return False


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@st.cache_resource(show_spinner=False)
def page_slots() -> PageSlots:
    """The server's page slots, one per core and two at least (so that one long measurement never holds up
    everyone)."""
    return PageSlots(max(2, cores()))
