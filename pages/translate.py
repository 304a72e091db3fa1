"""The main page, *Translate and explore*, as the navigation runs it (:mod:`pages.navigation`); the page itself is
:mod:`pages.explore`.

On a server's first visit an empty chart says what is happening while Python imports torch, the model code and the
figures (a second or two, once per server): the browser fetches and starts plotly.js meanwhile.
"""

from __future__ import annotations

import sys

import plotly.graph_objects as go
import streamlit as st


def loading_figure() -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text="Loading the model and translating…", showarrow=False, font={"size": 16})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=160, margin={"l": 0, "r": 0, "t": 0, "b": 0}, plot_bgcolor="white")
    return fig


page = st.container()
loading = None
if "pages.explore" not in sys.modules:  # the first visit since the server started
    loading = st.empty()
    loading.plotly_chart(loading_figure(), config={"displayModeBar": False}, key="loading")
from pages import explore  # noqa: E402  (after the loading chart: this import is what takes the time)

with page:
    explore.main(loading)
