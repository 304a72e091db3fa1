"""Positional encoding (§3.5): the sinusoid table, its wavelengths, its dot products, the paper's claim that a fixed
offset is a linear map, and how large the encoding is next to the token embeddings it is added to."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.common import page, section
from pages.figures import show_figure
from pages.i18n import language, t
from pages.url_state import Field
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.plots import positional as plot_positional

st.set_page_config(page_title=t("pe.title"), page_icon="〰️", layout="wide")

FIELDS = {
    "pe_positions": Field(None, url_state.integer(10, 512)),
    "pe_d_model": Field(None, int),
    "pe_dimensions": Field(None, url_state.integers(0, 4095), url_state.dump_integers),
    "pe_offset": Field(5, url_state.integer(1, 100)),
}


def default_dimensions(d_model: int) -> list[int]:
    return sorted({0, 1, d_model // 8 * 2, d_model // 4 * 2 + 1, d_model - 2})


def new_width() -> None:
    """A new d_model starts from its own default dimensions."""
    st.session_state["pe_dimensions"] = default_dimensions(st.session_state["pe_d_model"])


with page("positional", FIELDS) as loaded:
    config = loaded.config

    st.title(t("pe.title"))
    st.markdown(t("pe.intro"))
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right), \qquad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right)"
    )

    if config.positional == "learned":
        st.info(t("pe.learned"))
    elif config.positional != "paper" or config.position_offset:
        st.info(t("pe.other_table", offset=config.position_offset))
    even_widths = sorted({16, 32, 64, 128, 256, 512, 1024, config.d_model})
    max_positions = min(512, config.max_positions)
    url_state.ensure("pe_positions", min(100, max_positions), lambda value: 10 <= value <= max_positions)
    url_state.ensure("pe_d_model", config.d_model, even_widths.__contains__)
    left, right = st.columns(2)
    num_positions = left.slider(t("pe.positions"), 10, max_positions, key="pe_positions")
    d_model = right.select_slider(
        "d_model",
        even_widths,
        key="pe_d_model",
        on_change=new_width,
        help=t("pe.d_model_help", d_model=config.d_model),
    )
    pe = sinusoidal_positional_encoding(num_positions, d_model).numpy()
    if config.positional == "learned":
        st.header(t("pe.learned_table"))
        st.caption(t("pe.learned_caption"))
        learned = loaded.model.positions("encoder")[:num_positions].detach().float().cpu().numpy()
        show_figure(plot_positional.positional_encoding_heatmap(learned, language(), learned=True), key="pe_learned")

    st.header(t("pe.table"))
    st.caption(t("pe.table_caption"))
    show_figure(plot_positional.positional_encoding_heatmap(pe, language()), key="pe_heatmap")

    st.header(t("pe.sinusoids"))
    url_state.ensure("pe_dimensions", default_dimensions(d_model), url_state.indices_below(d_model))
    dimensions = st.multiselect(t("pe.dimensions"), list(range(d_model)), key="pe_dimensions")
    show_figure(plot_positional.sinusoid_curves(pe, dimensions, language()), key="pe_sinusoids")

    section(t("pe.alike"), t("pe.alike_text"))
    show_figure(plot_positional.position_similarity(pe, language()), key="pe_similarity")

    section(
        t("pe.offset"),
        t("pe.offset_text"),
        # Two lines, so that the formula fits the column without a scroll box.
        r"\begin{gathered}"
        r"\begin{pmatrix} PE_{(pos+k,\,2i)} \\ PE_{(pos+k,\,2i+1)} \end{pmatrix} = "
        r"\begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i \end{pmatrix}"
        r"\begin{pmatrix} PE_{(pos,\,2i)} \\ PE_{(pos,\,2i+1)} \end{pmatrix}, \\"
        r"\omega_i = 10000^{-2i/d_{\text{model}}}"
        r"\end{gathered}",
    )
    offset = st.slider(t("pe.offset_k"), 1, 100, key="pe_offset")
    st.caption(t("pe.offset_caption", positions=2 * d_model + offset + 1))
    figure, stats = plot_positional.offset_linearity(
        sinusoidal_positional_encoding(2 * d_model + offset + 1, d_model).numpy(), offset, language()
    )
    first, second, third = st.columns(3)
    first.metric(t("pe.largest_fitted"), f"{stats['max_residual']:.1e}")
    second.metric(t("pe.mean_fitted"), f"{stats['mean_residual']:.1e}")
    third.metric(t("pe.largest_rotation"), f"{stats['rotation_max_residual']:.1e}")
    show_figure(figure, key="pe_offset_linearity")

    section(t("pe.norms"), t("pe.norms_text", norm=(config.d_model / 2) ** 0.5, tokens=config.vocab_size))
    show_figure(plot_positional.embedding_norms(loaded.model, language()), key="pe_embedding_norms")
