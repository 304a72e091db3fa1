"""Positional encoding (§3.5) as figures: the table, chosen sinusoids, which positions look alike, the paper's claim
that a fixed offset is a linear map, and the encoding's size next to the token embeddings'."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.paper.model import Transformer
from transformer.plots.colours import translucent
from transformer.plots.palettes import colour
from transformer.plots.style import lay_out


def positional_encoding_heatmap(pe: np.ndarray, language: str = DEFAULT_LANGUAGE, learned: bool = False) -> go.Figure:
    """The §3.5 sinusoid table itself: one row per position, one column per dimension (``learned``: a model's learned
    table instead, its colours spanning its own largest weight)."""
    text = words(language, "plot_pe")
    pe = np.asarray(pe)
    num_positions, d_model = pe.shape
    limit = max(1.0, float(np.abs(pe).max())) if learned and pe.size else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=pe,
            colorscale="RdBu",
            zmid=0.0,
            zmin=-limit,
            zmax=limit,
            colorbar={"title": {"text": "PE"}, "thickness": 14},
            hovertemplate=f"{text['position']} %{{y}}<br>{text['dimension']} %{{x}}<br>PE %{{z:.3f}}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=text["dimension_axis"])
    fig.update_yaxes(title_text=text["position"], autorange="reversed")
    title = text["learned_title" if learned else "table_title"].format(positions=num_positions, d_model=d_model)
    return lay_out(fig, title, int(min(900, max(380, 3 * num_positions + 160))))


def wavelength(dimension: int, d_model: int) -> float:
    """2π · 10000^(2i/d_model) for dimension 2i or 2i+1: from 2π at i = 0 up to nearly 10000 · 2π (§3.5)."""
    return 2 * math.pi * 10000 ** ((dimension - dimension % 2) / d_model)


def sinusoid_curves(pe: np.ndarray, dimensions: list[int], language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """PE(pos, dimension) against position for the chosen dimensions: one sinusoid each, wavelengths in the legend."""
    text = words(language, "plot_pe")
    pe = np.asarray(pe)
    num_positions, d_model = pe.shape
    fig = go.Figure()
    for dimension in dimensions:
        if not 0 <= dimension < d_model:
            raise ValueError(f"dimension {dimension} is outside 0…{d_model - 1}")
        kind = "sin" if dimension % 2 == 0 else "cos"
        fig.add_trace(
            go.Scatter(
                x=np.arange(num_positions),
                y=pe[:, dimension],
                mode="lines",
                name=text["curve"].format(dimension=dimension, kind=kind, wavelength=wavelength(dimension, d_model)),
                hovertemplate=f"dim {dimension}<br>{text['position']} %{{x}}<br>PE %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=text["position"])
    fig.update_yaxes(title_text="PE(pos, dim)", range=[-1.1, 1.1])
    return lay_out(fig, text["curves_title"], 420, legend_y=-0.2)


def position_similarity(pe: np.ndarray, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """PE(pos)·PE(pos′) for every pair of positions: it depends only on the distance |pos − pos′|, peaking at 0."""
    text = words(language, "plot_pe")
    pe = np.asarray(pe, dtype=np.float64)
    similarity = pe @ pe.T  # (P, P)
    fig = go.Figure(
        go.Heatmap(
            z=similarity,
            colorscale="Viridis",
            colorbar={"title": {"text": text["dot_product"]}, "thickness": 14},
            hovertemplate=f"{text['position']} %{{y}} · {text['position']} %{{x}}<br>PE·PE = %{{z:.2f}}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=text["position"], scaleanchor="y", constrain="domain")
    fig.update_yaxes(title_text=text["position"], autorange="reversed", constrain="domain")
    return lay_out(fig, text["similarity_title"].format(diagonal=f"{pe.shape[1] / 2:g}"), 560)


def offset_rotation(d_model: int, offset: int) -> np.ndarray:
    """The exact M with PE(pos + k) = PE(pos) · M: a 2×2 rotation by k·ω_i on each (sin, cos) pair (§3.5)."""
    frequencies = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # ω_i, (D/2,)
    cos, sin = np.cos(offset * frequencies), np.sin(offset * frequencies)
    rotation = np.zeros((d_model, d_model))
    # sin(ω(p+k)) = sin(ωp)cos(ωk) + cos(ωp)sin(ωk); cos(ω(p+k)) = cos(ωp)cos(ωk) − sin(ωp)sin(ωk)
    rotation[0::2, 0::2] = np.diag(cos)
    rotation[1::2, 0::2] = np.diag(sin)
    rotation[0::2, 1::2] = np.diag(-sin)
    rotation[1::2, 1::2] = np.diag(cos)
    return rotation


def _relative_residual(predicted: np.ndarray, target: np.ndarray) -> np.ndarray:
    return np.linalg.norm(predicted - target, axis=1) / np.maximum(np.linalg.norm(target, axis=1), 1e-12)


def offset_linearity(pe: np.ndarray, offset: int, language: str = DEFAULT_LANGUAGE) -> tuple[go.Figure, dict[str, Any]]:
    """Check §3.5's claim that PE(pos + k) is a linear function of PE(pos), two ways.

    Fitted: a matrix M is fitted by least squares so that PE(pos + k) ≈ PE(pos) · M on the even positions and
    judged on the odd ones it never saw. (Fitting on a block of consecutive positions fails for a different
    reason: the low-frequency dimensions barely change over a block, so the fit is ill-conditioned there.) For the
    fit to span every sinusoid ``pe`` needs about 2 · d_model positions; with fewer, the held-out error grows.
    Exact: the block rotation of :func:`offset_rotation`, applied to every position.

    Residuals are relative, ‖PE(pos + k) − PE(pos) · M‖ / ‖PE(pos + k)‖. Returns the figure and
    ``{"offset", "max_residual", "mean_residual"}`` (held-out, fitted M) plus the exact rotation's
    ``rotation_max_residual`` and the position counts.
    """
    text = words(language, "plot_pe")
    pe = np.asarray(pe, dtype=np.float64)
    num_positions, d_model = pe.shape
    if not 1 <= offset <= num_positions - 3:
        raise ValueError(f"offset must lie in 1…{num_positions - 3} for {num_positions} positions, got {offset}")
    source, target = pe[:-offset], pe[offset:]  # row p: PE(p) and PE(p + k)
    fit, held_out = np.arange(0, len(source), 2), np.arange(1, len(source), 2)
    fitted, *_ = np.linalg.lstsq(source[fit], target[fit], rcond=None)
    fitted_residual = _relative_residual(source[held_out] @ fitted, target[held_out])
    rotation_residual = _relative_residual(source @ offset_rotation(d_model, offset), target)
    stats = {
        "offset": offset,
        "max_residual": float(fitted_residual.max()),
        "mean_residual": float(fitted_residual.mean()),
        "rotation_max_residual": float(rotation_residual.max()),
        "rotation_mean_residual": float(rotation_residual.mean()),
        "fit_positions": len(fit),
        "test_positions": len(held_out),
    }
    fig = go.Figure()
    hover = f"pos %{{x}}<br>{text['relative_residual']} %{{y:.2e}}<extra></extra>"
    for positions, residual, mode, name in (
        (held_out, fitted_residual, "markers", text["fitted"]),
        (np.arange(len(source)), rotation_residual, "lines", text["rotation"]),
    ):
        fig.add_trace(go.Scatter(x=positions, y=residual, mode=mode, name=name, hovertemplate=hover))
    fig.update_xaxes(title_text=text["position_pos"])
    fig.update_yaxes(title_text=text["relative_residual"], type="log", exponentformat="e")
    title = text["linearity_title"].format(
        offset=offset, largest=stats["max_residual"], rotation=stats["rotation_max_residual"]
    )
    return lay_out(fig, title, 420, legend_y=-0.25), stats


def embedding_norms(model: Transformer, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """How large the two summands of the encoder/decoder input are (§3.4–3.5): ‖embedding · √d_model‖ of every
    token against ‖PE(pos)‖ of every position, which is √(d_model / 2) for all of them."""
    text = words(language, "plot_pe")
    embedding = model.embedding.weight.detach().float().cpu().numpy()  # (V, D)
    keep = np.arange(len(embedding)) != model.config.pad_id  # the padding row is all zeros by construction
    token_norms = np.linalg.norm(embedding[keep], axis=1) * model.embedding_scale
    position_norms = np.linalg.norm(model.positions("encoder").detach().float().cpu().numpy(), axis=1)
    low, median, high = np.percentile(token_norms, [5, 50, 95])
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=[text["token_norms_title"], text["position_norms_title"]],
        horizontal_spacing=0.08,
    )
    histogram = go.Histogram(x=token_norms, nbinsx=60, name=text["token_embeddings"], marker_color=colour("blue"))
    fig.add_trace(histogram, 1, 1)
    fig.add_vline(
        x=float(position_norms.mean()),
        line_dash="dash",
        line_color=colour("red"),
        row=1,
        col=1,
        annotation_text=f"‖PE‖ = {position_norms.mean():.2f}",
    )
    positions = np.arange(len(position_norms))
    fig.add_trace(
        go.Scatter(
            x=np.concatenate([positions, positions[::-1]]),
            y=np.r_[[high] * len(positions), [low] * len(positions)],
            fill="toself",
            fillcolor=translucent(colour("blue"), 0.2),
            line={"width": 0},
            hoverinfo="skip",
            name=text["percentiles"],
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=positions,
            y=[median] * len(positions),
            mode="lines",
            line={"color": colour("blue")},
            name=text["median"].format(median=median),
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(x=positions, y=position_norms, mode="lines", line={"color": colour("red")}, name="‖PE(pos)‖"), 1, 2
    )
    fig.update_xaxes(title_text=text["norm"], row=1, col=1)
    fig.update_yaxes(title_text=text["tokens"], row=1, col=1)
    fig.update_xaxes(title_text=text["position"], row=1, col=2)
    fig.update_yaxes(title_text=text["norm"], rangemode="tozero", row=1, col=2)
    return lay_out(fig, text["norms_title"], 420, top=80, legend_y=-0.25, bargap=0.05)
