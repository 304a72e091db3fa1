"""One cache for work on a loaded model: :func:`per_model`.

Streamlit's caches hash every argument; a loaded model is too large to hash on every call (and two loads of the
same folder are the same model). A function of a loaded checkpoint is therefore cached by the checkpoint's folder
instead: the page calls ``function(loaded, …)`` as written, and the cache keys it by ``str(loaded.path)`` and the
other arguments, which must be hashable (text, numbers, tuples of token ids, decoding options).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st


def per_model(
    max_entries: int, resource: bool = False, spinner: bool | str = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Cache ``function(loaded, *arguments)`` per checkpoint folder and arguments: with ``st.cache_data`` (each
    caller gets its own copy of the result), or with ``resource`` ``st.cache_resource`` (one shared object: an index,
    the stored measurements). ``spinner``: what the page shows while it runs (False: nothing)."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        def keyed(folder: str, _loaded, *arguments):  # the folder is the key; the model is not hashed
            return function(_loaded, *arguments)

        # Streamlit tells caches apart by module and qualified name: each decorated function keeps its own.
        keyed.__module__, keyed.__qualname__, keyed.__name__ = (
            function.__module__,
            function.__qualname__,
            function.__name__,
        )
        cache = st.cache_resource if resource else st.cache_data
        cached = cache(max_entries=max_entries, show_spinner=spinner)(keyed)

        @functools.wraps(function)
        def call(loaded, *arguments):
            return cached(str(loaded.path), loaded, *arguments)

        call.clear = cached.clear
        return call

    return decorate
