"""Plotly figures, by subject: attention (heatmaps, the layers × heads grid, the paper-style token lines, score
maps), positional encoding, training (curves, health, the learning-rate schedule, parameter counts), the paper's
Figures 3–5, and bertviz's views as offline HTML. Their discrete colours live in :mod:`transformer.plots.palettes`
(a standard and a colour-blind palette); :mod:`transformer.plots.style` re-styles a built figure for a projector or a
dark page.

Every builder is a pure function from arrays (or an explicitly passed model) to a figure or an HTML page: no
Streamlit and no hidden model calls, so the same figures serve the app, notebooks and the tests. Attention arrays are
NumPy, shaped [layers, heads, queries, keys] as in :class:`transformer.analysis.attention.AttentionMaps`.
"""
