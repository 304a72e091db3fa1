"""Positional encoding (§3.5): the sinusoid table, its wavelengths, its dot products, the paper's claim that a fixed
offset is a linear map, and how large the encoding is next to the token embeddings it is added to."""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.common import page_checkpoint, save_page, show_figure
from pages.url_state import Field
from transformer.model import sinusoidal_positional_encoding
from transformer.plots import positional as plot_positional

st.set_page_config(page_title="Positional encoding", page_icon="〰️", layout="wide")

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


loaded = page_checkpoint("positional", FIELDS)
config = loaded.config

st.title("Positional encoding")
st.markdown(
    "Self-attention alone does not see word order, so the Transformer adds a *positional encoding* to each token "
    "embedding at the bottom of the encoder and decoder stacks (§3.5). Each dimension is a sinusoid of the "
    "position; the wavelengths form a geometric progression from 2π to 10000 · 2π:"
)
st.latex(
    r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right), \qquad "
    r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right)"
)

even_widths = sorted({16, 32, 64, 128, 256, 512, 1024, config.d_model})
max_positions = min(512, config.max_positions)
url_state.ensure("pe_positions", min(100, max_positions), lambda value: 10 <= value <= max_positions)
url_state.ensure("pe_d_model", config.d_model, even_widths.__contains__)
left, right = st.columns(2)
num_positions = left.slider("Positions", 10, max_positions, key="pe_positions")
d_model = right.select_slider(
    "d_model", even_widths, key="pe_d_model", on_change=new_width,
    help=f"The loaded model uses d_model = {config.d_model}.",
)  # fmt: skip
pe = sinusoidal_positional_encoding(num_positions, d_model).numpy()

st.subheader("The encoding table")
st.caption("One row per position, one column per dimension: fast sinusoids on the left, slow ones on the right.")
show_figure(plot_positional.positional_encoding_heatmap(pe), key="pe_heatmap")

st.subheader("Sinusoids of chosen dimensions")
url_state.ensure("pe_dimensions", default_dimensions(d_model), lambda chosen: all(0 <= i < d_model for i in chosen))
dimensions = st.multiselect("Dimensions", list(range(d_model)), key="pe_dimensions")
show_figure(plot_positional.sinusoid_curves(pe, dimensions), key="pe_sinusoids")

st.subheader("Which positions look alike")
st.markdown(
    "The dot product PE(pos) · PE(pos′) = Σᵢ cos(ωᵢ (pos − pos′)) depends only on the distance between the two "
    "positions, so every diagonal of this matrix is constant: nearby positions are similar, far ones are not."
)
show_figure(plot_positional.position_similarity(pe), key="pe_similarity")

st.subheader("A fixed offset is a linear map")
st.markdown(
    "The paper chose sinusoids because *for any fixed offset k, PE(pos+k) can be represented as a linear function "
    "of PE(pos)*, which should make it easy to attend by relative position. Each (sin, cos) pair is rotated by the "
    "angle k·ωᵢ:"
)
st.latex(
    r"\begin{pmatrix} PE_{(pos+k,\,2i)} \\ PE_{(pos+k,\,2i+1)} \end{pmatrix} = "
    r"\begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i \end{pmatrix}"
    r"\begin{pmatrix} PE_{(pos,\,2i)} \\ PE_{(pos,\,2i+1)} \end{pmatrix},"
    r"\qquad \omega_i = 10000^{-2i/d_{\text{model}}}"
)
offset = st.slider("Offset k", 1, 100, key="pe_offset")
st.caption(
    f"A d_model × d_model matrix M is fitted by least squares to PE(pos+k) ≈ PE(pos)·M on the even positions of "
    f"{2 * d_model + offset + 1} positions and tested on the odd ones; the exact rotation above is tested on all."
)
figure, stats = plot_positional.offset_linearity(
    sinusoidal_positional_encoding(2 * d_model + offset + 1, d_model).numpy(), offset
)
first, second, third = st.columns(3)
first.metric("Largest held-out residual, fitted M", f"{stats['max_residual']:.1e}")
second.metric("Mean held-out residual, fitted M", f"{stats['mean_residual']:.1e}")
third.metric("Largest residual, exact rotation", f"{stats['rotation_max_residual']:.1e}")
show_figure(figure, key="pe_offset_linearity")

st.subheader("Embedding and encoding, side by side")
st.markdown(
    f"The model adds PE to the token embedding multiplied by √d_model (§3.4). Every PE row has the same norm, "
    f"√(d_model / 2) = {(config.d_model / 2) ** 0.5:.2f} here; the histogram shows how large the scaled embeddings "
    f"of the loaded model's {config.vocab_size:,} tokens are in comparison."
)
show_figure(plot_positional.embedding_norms(loaded.model), key="pe_embedding_norms")
save_page(FIELDS)
