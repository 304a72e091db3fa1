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
from pages.navigation import app_pages, first_paint, routed
from pages.page_slots import page_slots

# `kill -USR1 <server pid>` writes every thread's stack to the server's standard error: what a stuck server waits for.
if hasattr(signal, "SIGUSR1"):
    faulthandler.register(signal.SIGUSR1, all_threads=True)

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
# Less empty space above each page's title, so that the first chart is on the first screen (1280 × 800).
# Code in Markdown (the model card's commands) wraps rather than scrolling sideways in a box that a keyboard cannot
# reach (axe's scrollable-region-focusable). A slider's value is written in the text colour, not the accent colour:
# Streamlit's dark accent is 3.9:1 on the dark background, and an accent light enough for 4.5:1 would leave white
# button labels at 3.3:1 (docs/accessibility.md).
st.html(
    "<style>[data-testid='stMainBlockContainer'] { padding-top: 2.5rem; }"
    " [data-testid='stMarkdownContainer'] pre, [data-testid='stMarkdownContainer'] pre code"
    " { white-space: pre-wrap !important; overflow-wrap: anywhere; }"  # the code element sets its own inline
    " [data-testid='stSliderThumbValue'] { color: inherit; }"
    # Keyboard focus as a ring in the text colour (3:1 or more on either theme's background) where Streamlit shows
    # only a faint tint (radio buttons, switches, checkboxes, the sidebar's page links) or only a change of border
    # colour (select boxes, text fields).
    " label:has(input:focus-visible), [data-testid='stSidebarNav'] a:focus-visible,"
    " [data-baseweb='select']:has(input:focus-visible), [data-baseweb='input']:has(input:focus-visible),"
    " [data-baseweb='textarea']:has(textarea:focus-visible)"
    " { outline: 2px solid currentColor; outline-offset: 2px; border-radius: 4px; }"
    # The tab strip's focus guard below draws nothing, so it takes no place either.
    " [data-testid='stElementContainer']:has(> [data-testid='stHtml'] > script:only-child) { display: none; }</style>"
)


# Streamlit's tab strip can drop the keyboard's focus: when a run redraws the strip just after an arrow key opened a
# tab, the open tab is drawn for a moment without its tabindex, and the browser moves the focus to the page's body
# (about one arrow in twenty on a 2-core machine). The visitor's next arrow then does nothing, and Tab starts again from
# the top. This puts the focus back on that tab once it can take it again. Only that case: a tab that loses the
# focus while it still has its tabindex (a click elsewhere, another window) is left alone.
st.html(
    """<script>
if (!window.tabFocusGuard) {
  window.tabFocusGuard = true;
  document.addEventListener("focusout", (event) => {
    const tab = event.target;
    if (event.relatedTarget !== null || !tab.matches?.('[role="tab"]') || tab.hasAttribute("tabindex")) return;
    const started = performance.now();
    const restore = () => {
      if (document.activeElement !== document.body || !tab.isConnected) return;
      if (tab.hasAttribute("tabindex")) tab.focus({ preventScroll: true });
      else if (performance.now() - started < 2000) requestAnimationFrame(restore);
    };
    requestAnimationFrame(restore);
  }, true);
}
</script>""",
    unsafe_allow_javascript=True,
)


with page_slots().run(), routed():  # pages run one per core at once, in arrival order (pages/page_slots.py)
    chosen = st.navigation(app_pages())
    first_paint(chosen)  # a server's first visit sees its page while the model code loads
    lesson_bar.play(chosen)  # the page, under a lesson's bar while one is on
