"""Attention Explorer: translate an English sentence into German and explore every attention head.

Run with ``streamlit run app.py``. The pages and their navigation: :mod:`pages.navigation`; the main page itself
is :mod:`pages.explore`.
"""

from __future__ import annotations

import faulthandler
import signal

# Imported by every run before any figure is built. Plotly looks NumPy and pandas up in `sys.modules` without
# importing them, and on a fresh server another session's run may be halfway through importing them (torch brings
# NumPy): a class opening the app at once then showed one visitor "partially initialized module 'numpy' has no
# attribute 'ndarray'". An import statement waits until the other thread has finished.
import numpy  # noqa: F401
import pandas  # noqa: F401
import streamlit as st

from pages import lesson_bar
from pages.navigation import app_pages, routed
from pages.page_slots import page_slots

# `kill -USR1 <server pid>` writes every thread's stack to the server's standard error: what a stuck server waits for.
if hasattr(signal, "SIGUSR1"):
    faulthandler.register(signal.SIGUSR1, all_threads=True)

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
# Less empty space above each page's title, so that the first chart is on the first screen (1280 × 800).
st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 2.5rem; }</style>")


with page_slots().run(), routed():  # pages run one per core at once, in arrival order (pages/page_slots.py)
    lesson_bar.play(st.navigation(app_pages()))  # the page, under a lesson's bar while one is on
