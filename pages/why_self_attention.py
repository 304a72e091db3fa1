"""Why self-attention (§4, Table 1): the table itself, the path a signal takes between two pieces of the visitor's
sentence through each kind of layer, and one self-attention layer timed against one recurrent layer on this server.

The sentence is cut by the loaded model's tokenizer, so its positions are the ones the encoder reads (n in Table 1
counts them). The timing runs only when asked for and is kept for the server's lifetime: later visitors see it
without waiting, with the thread count it was measured with.
"""

from __future__ import annotations

import os

import streamlit as st

from pages import url_state
from pages.common import leave_page, page
from pages.figures import show_figure
from pages.i18n import language, t
from pages.models import MAX_SOURCE_TOKENS
from pages.sentence import follow_sentence, linked_sentence_note
from pages.url_state import Field
from transformer.analysis.complexity import (
    PATH_KINDS,
    REPEATS,
    TABLE_1,
    LayerTimes,
    maximum_path_lengths,
    path_length,
    time_layers,
)
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import complexity as plot_complexity

st.set_page_config(page_title=t("why.title"), page_icon="⚖️", layout="wide")

KERNELS = (2, 9)  # the convolution's kernel widths offered
NEIGHBOURHOODS = (2, 16)  # restricted self-attention's neighbourhoods offered
# One torch thread for the timing: the server's cores are shared with the translations, and threads that wait for
# each other while another process holds the cores made every call take tens of milliseconds (analysis.complexity).
TIMING_THREADS = 1
FIELDS = {
    "why_text": Field(None, url_state.text(2000)),
    "why_first": Field(None, url_state.integer(0, MAX_SOURCE_TOKENS - 1)),
    "why_second": Field(None, url_state.integer(0, MAX_SOURCE_TOKENS - 1)),
    "why_k": Field(3, url_state.integer(*KERNELS)),
    "why_r": Field(4, url_state.integer(*NEIGHBOURHOODS)),
}


@st.cache_resource(show_spinner=False)
def server_timings() -> dict[tuple[int, int], LayerTimes]:
    """The timings measured on this server, by (d_model, heads): one store shared by every session."""
    return {}


with page("why_self_attention", FIELDS) as loaded:
    config = loaded.config
    follow_sentence("why_text")

    st.title(t("why.title"))
    st.markdown(t("why.intro"))

    text = st.text_input(t("why.sentence"), key="why_text", max_chars=2000).strip()
    linked_sentence_note("why_text")
    pieces = readable_pieces(loaded.tokenizer.pieces(loaded.tokenizer.encode(text)))
    cut = len(pieces) > MAX_SOURCE_TOKENS
    pieces = pieces[:MAX_SOURCE_TOKENS]
    if len(pieces) < 2:
        st.info(t("why.type_sentence"))
        leave_page()
    count = len(pieces)
    url_state.ensure("why_first", 0, lambda value: 0 <= value < count)
    url_state.ensure("why_second", count - 1, lambda value: 0 <= value < count)
    first_column, second_column, kernel_column, neighbourhood_column = st.columns([2, 2, 1, 1])
    first = first_column.selectbox(
        t("why.first"), range(count), key="why_first", format_func=lambda index: f"{index}: {pieces[index]}"
    )
    second = second_column.selectbox(
        t("why.second"), range(count), key="why_second", format_func=lambda index: f"{index}: {pieces[index]}"
    )
    k = kernel_column.slider(t("why.kernel"), *KERNELS, key="why_k", help=t("why.kernel_help"))
    r = neighbourhood_column.slider(
        t("why.neighbourhood"), *NEIGHBOURHOODS, key="why_r", help=t("why.neighbourhood_help")
    )
    st.caption(t("why.pieces_caption", count=count, last=count - 1) + (" " + t("why.cut", count=count) if cut else ""))

    st.header(t("why.table"))
    longest = maximum_path_lengths(count, k, r)
    here = {
        "self_attention": str(longest["self_attention"]),
        "recurrent": str(longest["recurrent"]),
        "convolutional": t("why.conv_cell", dilated=longest["dilated"], contiguous=longest["convolutional"]),
        "restricted": str(longest["restricted"]),
    }
    st.table(
        [
            {
                t("why.layer_type"): t(f"why.row_{row.key}"),
                t("why.complexity"): row.complexity_per_layer,
                t("why.sequential"): row.sequential_operations,
                t("why.max_path"): row.maximum_path_length,
                t("why.this_sentence"): here[row.key],
            }
            for row in TABLE_1
        ]
    )
    st.caption(t("why.table_caption", n=count, k=k, r=r))
    st.markdown(t("why.argument"))

    st.header(t("why.paths"))
    st.markdown(t("why.paths_text"))
    names = plot_complexity.kind_names(language(), k, r)
    for column, kind in zip(st.columns(len(PATH_KINDS)), PATH_KINDS, strict=True):
        column.metric(names[kind], path_length(kind, first, second, k, r))
    show_figure(plot_complexity.path_figure(pieces, first, second, k, r, language()), key="why_paths")

    st.header(t("why.timing"))
    timings = server_timings()
    measured = (config.d_model, config.num_heads)
    times = timings.get(measured)
    st.markdown(
        t(
            "why.timing_text",
            d_model=config.d_model,
            heads=config.num_heads,
            repeats=times.repeats if times else REPEATS,
        )
    )
    if st.button(t("why.measure"), key="why_measure", icon=":material/timer:"):
        with st.spinner(t("why.measuring")):
            times = timings[measured] = time_layers(
                d_model=config.d_model, num_heads=config.num_heads, threads=TIMING_THREADS
            )
    if times is None:
        st.info(t("why.not_measured"))
    else:
        show_figure(plot_complexity.timing_figure(times, language()), key="why_timing")
        st.caption(t("why.measured_caption", threads=times.threads, cores=os.cpu_count() or 1, seconds=times.seconds))
        st.dataframe(
            times.rows(),
            hide_index=True,
            column_config={
                "n": st.column_config.NumberColumn(t("why.length_column")),
                "self_attention_ms": st.column_config.NumberColumn(t("why.attention_ms"), format="%.3f"),
                "recurrent_ms": st.column_config.NumberColumn(t("why.recurrent_ms"), format="%.3f"),
            },
        )
