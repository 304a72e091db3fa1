"""Every figure read by every reader: each chart's colours stay apart under simulated deuteranopia, protanopia and
tritanopia (:mod:`transformer.plots.palettes`), and every explicit colour stands out from the page it is drawn on,
the light one as built and the dark one after :func:`transformer.plots.style.for_dark`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
import pytest
from test_plots import TOKENS, marked_alignment, row_normalised

from transformer.analysis.beam import BeamTree, TokenProbability
from transformer.analysis.complexity import LayerTimes
from transformer.analysis.logit_lens import LogitLens
from transformer.analysis.steps import STEPS, HeadSteps, NextTokens, head_scaling, scaling_demo
from transformer.features.toy import ToySnapshot
from transformer.paper.config import preset
from transformer.paper.model import Transformer
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.paper.schedule import Schedule
from transformer.plots import atlas as plot_atlas
from transformer.plots import attention as plot_attention
from transformer.plots import attribution as plot_attribution
from transformer.plots import colours, palettes
from transformer.plots import complexity as plot_complexity
from transformer.plots import grid as plot_grid
from transformer.plots import head_scores as plot_head_scores
from transformer.plots import logit_lens as plot_lens
from transformer.plots import positional as plot_positional
from transformer.plots import scaling as plot_scaling
from transformer.plots import steps as plot_steps
from transformer.plots import toy as plot_toy
from transformer.plots import training as plot_training
from transformer.plots import whatif as plot_whatif
from transformer.plots.style import (
    DARK_BACKGROUND,
    LIGHT_BACKGROUND,
    MARK_CONTRAST,
    TEXT_CONTRAST,
    dark_colour,
    for_dark,
)
from transformer.search.decode import BeamNode, DecodingOptions

# The smallest CAM02-UCS ΔE two colours of one chart may have for any reader. One unit is about the smallest
# difference seen between two large patches side by side; chart marks are thin lines and small points, matched
# against a legend rather than against each other, so ten times that is asked. Okabe and Ito's palette, made for
# colour-blind readers, reaches 11.0 at worst (orange against reddish purple under tritanopia).
MIN_DIFFERENCE = 10.0


# ------------------------------------------------------------------------------------------------ the figures
def beam_tree() -> go.Figure:
    """Root → two kept, one pruned; the first kept → one finished (chosen) and one pruned."""
    nodes = [
        BeamNode(0, None, 0, 1, 0.0, 0.0, "root"),
        BeamNode(1, 0, 1, 5, -0.5, -0.5, "kept"),
        BeamNode(2, 0, 1, 6, -0.9, -0.9, "kept"),
        BeamNode(3, 0, 1, 7, -2.0, -2.0, "pruned"),
        BeamNode(4, 1, 2, 2, -0.7, -0.4, "finished"),
        BeamNode(5, 2, 2, 8, -3.0, -1.5, "pruned"),
    ]
    tree = BeamTree(nodes, DecodingOptions(beam_size=2), [5, 2])
    return plot_whatif.beam_tree(tree, ["<s>", "▁das", "▁ein", "▁der", "</s>", "▁Haus"], chosen=4)


def training_records() -> list[dict]:
    health = {
        "encoder_position_cosine": [0.2, 0.4],
        "encoder_entropy_normalised": [0.5, 0.6],
        "cross_entropy_normalised": [0.4, 0.7],
        "cross_alignment_best": 0.3,
    }
    return [
        {"kind": "train", "step": 100, "loss": 6.0, "nll": 5.5, "lr": 1e-4, "train_hours": 0.1},
        {"kind": "dev", "step": 100, "dev_loss": 5.8, "dev_nll": 5.2, "dev_bleu": 1.0, "train_hours": 0.1, **health},
        {"kind": "init", "step": 150, "checkpoint": "base", "dev": "multi30k_val", "train_hours": 0.2},
        {"kind": "train", "step": 200, "loss": 4.0, "nll": 3.5, "lr": 2e-4, "train_hours": 0.3},
        {"kind": "dev", "step": 200, "dev_loss": 4.2, "dev_nll": 3.9, "dev_bleu": 9.0, "train_hours": 0.3, **health},
    ]


def head_steps() -> HeadSteps:
    """A decoder self-attention head (layer 1, head 2 of 2, d_model 8) on four tokens, from random numbers."""
    rng = np.random.default_rng(0)
    tokens, width, d_k = ["<s>", "▁das", "▁Haus", "."], 8, 4

    def matrix(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    q, k, v = matrix(4, d_k), matrix(4, d_k), matrix(4, d_k)
    mask = np.tril(np.ones((4, 4), dtype=bool))
    scores = q @ k.T
    scaled = scores / np.sqrt(d_k)
    masked = np.where(mask, scaled, -np.inf)
    weights = np.exp(masked - masked.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    x, concatenated = matrix(4, width), matrix(4, width)
    return HeadSteps(
        kind="decoder",
        layer=0,
        head=1,
        query_tokens=tokens,
        key_tokens=tokens,
        x=x,
        memory=None,
        embedding=matrix(4, width),
        positional=matrix(4, width),
        w_q=matrix(width, d_k),
        w_k=matrix(width, d_k),
        w_v=matrix(width, d_k),
        q=q,
        k=k,
        v=v,
        scores=scores,
        scaled=scaled,
        mask=mask,
        masked=masked,
        weights=weights,
        head_output=weights @ v,
        concatenated=concatenated,
        projected=matrix(4, width),
        residual=matrix(4, width),
        output=matrix(4, width),
        model_concatenated=concatenated,
        model_projected=matrix(4, width),
        model_output=matrix(4, width),
    )


def decoding() -> go.Figure:
    steps = head_steps()
    upcoming = NextTokens(
        position_tokens=steps.query_tokens,
        chosen=["▁das", "▁Haus", ".", "</s>"],
        chosen_probability=np.array([0.6, 0.5, 0.7, 0.9]),
        chosen_rank=np.array([1, 2, 1, 1]),
        top_tokens=[["▁das", "▁ein"], ["▁Dach", "▁Haus"], [".", "!"], ["</s>", "."]],
        top_probabilities=np.array([[0.6, 0.2], [0.3, 0.5], [0.7, 0.1], [0.9, 0.05]]),
    )
    return plot_steps.decoding_figure(steps.weights[1], row_normalised((1, 5))[0], TOKENS, upcoming, 1, 0, 1)


def atlas() -> go.Figure:
    """One head of every group, the first selected with two related heads."""
    groups = [*plot_atlas.GROUP_COLOURS]
    records = [
        {
            "kind": ("encoder", "decoder", "cross")[index % 3],
            "layer": 1 + index // 4,
            "head": 1 + index % 4,
            "cluster": "syntax:nsubj" if group == "syntax" else group,
            "x": float(np.cos(index)),
            "y": float(np.sin(index)),
            "related": [["decoder", 1, 2], ["encoder", 2, 1]] if index == 0 else [],
        }
        for index, group in enumerate(groups)
    ]
    return plot_atlas.atlas_map(records, 0, "atlas")


def toy_snapshots() -> list[ToySnapshot]:
    return [
        ToySnapshot(step, step / 10, f"step {step}", {}, {"loss": 3 / step, "exact_match": 0.1, "token_accuracy": 0.3})
        for step in (1, 10, 20)
    ]


def steps_figures() -> dict[str, Callable[[], go.Figure]]:
    return {f"step {step.key}": (lambda key=step.key: plot_steps.step_figure(head_steps(), key, 2)) for step in STEPS}


FIGURES: dict[str, Callable[[], go.Figure]] = {
    "attention heatmap": lambda: plot_attention.attention_heatmap(row_normalised((5, 3)), TOKENS, TOKENS[:3], "h"),
    "causal heatmap": lambda: plot_attention.attention_heatmap(
        row_normalised((5, 5), causal=True), TOKENS, TOKENS, "d", causal=True
    ),
    "line view, 16 heads": lambda: plot_attention.token_lines(row_normalised((16, 5, 5)), TOKENS, TOKENS, title="t"),
    "line view, one query": lambda: plot_attention.token_lines(
        row_normalised((3, 5, 5)), TOKENS, TOKENS, query_index=2
    ),
    "score map": lambda: plot_head_scores.score_heatmap(
        np.array([[0.1, 0.8], [0.5, 0.9]]), "s", zrange=(0, 1), near_best=np.array([[False, True], [True, True]])
    ),
    "model view grid": lambda: plot_grid.model_view_grid(
        row_normalised((2, 3, 5, 5), causal=True), TOKENS, TOKENS, "g", causal=True, opened=(1, 2)
    ),
    "alignment": marked_alignment,
    "head atlas": atlas,
    "attribution": lambda: plot_attribution.attribution_figure(
        TOKENS, np.array([0.5, -0.2, 0.1, -0.4, 0.3]), "a", attention=row_normalised((1, 5))[0]
    ),
    "faithfulness": lambda: plot_attribution.faithfulness_figure(
        ["attention", "random"], [3.0, 0.5], [4.0, 1.0], "f", intervals=[[(2.5, 3.4), None], [(3.0, 5.0), None]]
    ),
    "complexity path": lambda: plot_complexity.path_figure([f"w{i}" for i in range(12)], 1, 9),
    "complexity timing": lambda: plot_complexity.timing_figure(
        LayerTimes(64, 4, 1, 3, (16, 64, 256), (0.1, 0.4, 3.0), (0.5, 2.0, 8.0), 1.0)
    ),
    "logit lens": lambda: plot_lens.lens_figure(
        LogitLens(TOKENS, row_normalised((2, 5)), np.array([[1, 0, 2, 0, 0], [0, 0, 0, 0, 1]]), [TOKENS, TOKENS]), "t"
    ),
    "positional table": lambda: plot_positional.positional_encoding_heatmap(sinusoidal_positional_encoding(40, 16)),
    "sinusoids": lambda: plot_positional.sinusoid_curves(sinusoidal_positional_encoding(40, 16).numpy(), [0, 5]),
    "position similarity": lambda: plot_positional.position_similarity(sinusoidal_positional_encoding(40, 16)),
    "offset linearity": lambda: plot_positional.offset_linearity(sinusoidal_positional_encoding(60, 16).numpy(), 5)[0],
    "embedding norms": lambda: plot_positional.embedding_norms(Transformer(preset("tiny"))),
    "scaling demo": lambda: plot_scaling.scaling_figure(scaling_demo(64), [scaling_demo(d) for d in (4, 64)]),
    "head scaling": lambda: plot_scaling.head_scaling_figure(head_scaling(head_steps()), head_steps()),
    **steps_figures(),
    "query row": lambda: plot_steps.query_row_figure(head_steps(), 2),
    "multi-head": lambda: plot_steps.multihead_figure(row_normalised((2, 4, 4), causal=True), head_steps(), 2),
    "decoding": decoding,
    "toy curve": lambda: plot_toy.training_curve(toy_snapshots()),
    "toy tiles": lambda: plot_toy.head_tiles(row_normalised((1, 2, 4, 5)), TOKENS[:4], TOKENS, "cross", 10),
    "training curves": lambda: plot_training.training_curves(training_records()),
    "health curves": lambda: plot_training.health_curves(training_records()),
    "learning rate": lambda: plot_training.learning_rate_curve(Schedule(512, 4000), 20000, current_step=10000),
    "recorded schedule": lambda: plot_training.recorded_schedule(training_records(), Schedule(512, 4000)),
    "smoothed target": lambda: plot_training.smoothed_target_figure(0.1, 8000),
    "smoothing on the log": lambda: plot_training.smoothing_on_log(training_records(), 0.1, 8000),
    "beam tree": beam_tree,
    "token probabilities": lambda: plot_whatif.token_probabilities(
        {"given": [TokenProbability(0, 5, "▁das", 0.6, -0.5, 1, [("▁das", 0.6)])]}, "p"
    ),
    "prune curve": lambda: plot_whatif.prune_curve([{"heads_off": 0, "bleu": 20.0, "chrf": 40.0}], 20.0, 16),
    "difference": lambda: plot_whatif.difference_heatmap(row_normalised((5, 5)) - 0.2, TOKENS, TOKENS, "d"),
}


# ------------------------------------------------------------------------------------------------ what is checked
@dataclass
class Colours:
    """Explicit colours of one thing a reader must see: text, or a mark (a line, a point, a bar, an outline), whose
    outline may carry the contrast instead of its fill (WCAG 1.4.11 counts a visual boundary)."""

    what: str
    where: str
    colours: list[str]
    outline: list[str] = field(default_factory=list)


def _listed(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [item for item in value if isinstance(item, str)]


def _axis(reference: str | None, default: str) -> str:
    return (reference or default).split(" ")[0]


def seen(fig: go.Figure) -> Iterator[Colours]:
    """Every explicit colour of ``fig`` that a reader must tell from the page. Not here, on purpose: colour scales
    and everything drawn on a heatmap's cells (they stand against the cells, the page never shows behind them),
    filled areas (shaded bands and hatching behind the marks), and the marks of a trace drawn translucent (opacity
    encodes a weight: the line view's lines, the histograms laid over each other)."""
    spec = json.loads(fig.to_json())
    heatmap_axes = set()
    for index, trace in enumerate(spec["data"]):
        where = f"trace {index} ({trace.get('name', trace.get('type', 'scatter'))})"
        if trace.get("type") == "heatmap":
            heatmap_axes.add((_axis(trace.get("xaxis"), "x"), _axis(trace.get("yaxis"), "y")))
        for font in ("textfont", "insidetextfont", "outsidetextfont"):
            yield Colours("text", f"{where} {font}", _listed(trace.get(font, {}).get("color")))
        if trace.get("opacity", 1) < 1:
            continue
        mode = trace.get("mode", "lines" if trace.get("type") == "scatter" else "")
        line = trace.get("line", {})
        if "lines" in mode and line.get("width", 2) > 0:
            yield Colours("mark", f"{where} line", _listed(line.get("color")))
        marker = trace.get("marker", {})
        drawn = trace.get("type") in ("bar", "histogram") or "markers" in mode
        if drawn and marker.get("opacity", 1) > 0:
            rim = marker.get("line", {})
            outline = _listed(rim.get("color")) if rim.get("width", 1) > 0 else []
            yield Colours("mark", f"{where} marker", _listed(marker.get("color")), outline)
        for bars in ("error_x", "error_y"):
            yield Colours("mark", f"{where} {bars}", _listed(trace.get(bars, {}).get("color")))
    layout = spec["layout"]
    yield Colours("text", "layout font", _listed(layout.get("font", {}).get("color")))
    yield Colours("text", "title", _listed(layout.get("title", {}).get("font", {}).get("color")))
    yield Colours("text", "legend", _listed(layout.get("legend", {}).get("font", {}).get("color")))
    for index, annotation in enumerate(layout.get("annotations", [])):
        yield Colours("text", f"annotation {index}", _listed(annotation.get("font", {}).get("color")))
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")):
            yield Colours("text", f"{name} ticks", _listed(axis.get("tickfont", {}).get("color")))
            yield Colours("text", f"{name} title", _listed(axis.get("title", {}).get("font", {}).get("color")))
    for index, shape in enumerate(layout.get("shapes", [])):
        yield Colours("text", f"shape {index} label", _listed(shape.get("label", {}).get("font", {}).get("color")))
        on_cells = (_axis(shape.get("xref"), "x"), _axis(shape.get("yref"), "y")) in heatmap_axes
        if not on_cells and shape.get("line", {}).get("width", 1) > 0:
            yield Colours("mark", f"shape {index}", _listed(shape.get("line", {}).get("color")))


# Deliberately faint, so not held to the contrast of what must be read: the pruned hypotheses' labels and points,
# the unlinked words' points (their words are still readable) and the masked cells' grey.
FAINT_TEXT = {palettes.NEUTRALS["faint_text"]}
FAINT_MARKS = {palettes.NEUTRALS["faint"]}
DARK_FAINT = (
    {dark_colour(colour, "text") for colour in FAINT_TEXT},
    {dark_colour(colour, "mark") for colour in FAINT_MARKS},
)
# theme → (its page, what makes a built figure ready for it, the faint text and marks there). The colour-blind palette
# is held to the dark page only: on white, Okabe and Ito's orange, sky blue and yellow stay under 3:1 (their
# lightness is what sets them apart for colour-blind readers).
THEMES = {
    "light": (LIGHT_BACKGROUND, lambda fig: fig, FAINT_TEXT, FAINT_MARKS),
    "dark": (DARK_BACKGROUND, for_dark, *DARK_FAINT),
    "dark, colour-blind palette": (
        DARK_BACKGROUND,
        lambda fig: for_dark(palettes.with_palette(fig, "colour_blind")),
        *DARK_FAINT,
    ),
}


def too_faint(fig: go.Figure, theme: str) -> list[str]:
    """What in ``fig``, on ``theme``'s page, does not reach 4.5:1 (text) or 3:1 (marks)."""
    background, _, faint_text, faint_marks = THEMES[theme]
    failures = []
    for item in seen(fig):
        faint = faint_text if item.what == "text" else faint_marks
        need = TEXT_CONTRAST if item.what == "text" else MARK_CONTRAST
        for colour in item.colours:
            rgba = colours.parse_colour(colour)
            assert rgba is not None, f"{item.where}: {colour!r} is not a colour the checks can read"
            # Translucent colours encode a weight, deliberately faint where it is small: an alignment link's
            # strength, a layer's place in the health curves.
            if colour in faint or rgba[3] < 1:
                continue
            best = max(colours.contrast_ratio(c, background) for c in [colour, *item.outline])
            if best < need:
                failures.append(f"{item.where}: {colour} on {background} is {best:.2f}:1, needs {need}:1")
    return failures


# ------------------------------------------------------------------------------------------------ contrast
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("name", FIGURES)
def test_every_explicit_colour_stands_out_from_the_page(name: str, theme: str):
    fig = THEMES[theme][1](FIGURES[name]())
    assert too_faint(fig, theme) == []
    if THEMES[theme][0] == DARK_BACKGROUND:  # and no light box is left on the dark page
        layout = fig.layout
        for box in (layout.plot_bgcolor, layout.paper_bgcolor):
            assert box is None or colours.relative_luminance(colours.over(box, DARK_BACKGROUND)) < 0.5, box
        go.Figure(fig.to_plotly_json())  # still a valid figure


def test_the_checks_see_what_they_check():
    """The collector finds the colours it is meant to hold to the page (so that an emptied check cannot pass)."""
    found = {colour for item in seen(beam_tree()) for colour in item.colours}
    assert {plot_whatif.CHOSEN, plot_whatif.STATUS_COLOURS["kept"], palettes.NEUTRALS["ink"]} <= found
    assert too_faint(go.Figure(go.Scatter(x=[0], y=[0], line={"color": "#dddddd"})), "light")  # 1.4:1
    text = go.Figure(go.Scatter(x=[0], y=[0], mode="text", text=["a"], textfont={"color": "#888888"}))
    assert too_faint(text, "light")  # 3.5:1 is enough for a mark, not for text
    assert too_faint(for_dark(text), "dark")  # a grey keeps its contrast on the dark page: still too faint


def test_contrast_ratio_follows_wcag():
    assert colours.contrast_ratio("black", "#fff") == pytest.approx(21)
    assert colours.contrast_ratio("#767676", "white") == pytest.approx(4.54, abs=0.01)  # the classic least grey
    assert colours.contrast_ratio("#0e1117", "#0e1117") == 1
    assert colours.over("rgba(0, 0, 0, 0.5)", "#ffffff")[:3] == (128, 128, 128)


def test_the_dark_theme_keeps_meaning():
    """Text turns light, faint stays faint, outlines on a heatmap's cells keep their colours, the data stays."""
    fig = for_dark(FIGURES["score map"]())
    assert [shape.line.color for shape in fig.layout.shapes] == [
        shape.line.color for shape in FIGURES["score map"]().layout.shapes
    ]
    tree = for_dark(beam_tree())
    pruned = next(trace for trace in tree.data if trace.name == "pruned")
    assert colours.contrast_ratio(pruned.textfont.color, DARK_BACKGROUND) < TEXT_CONTRAST  # still set back
    kept = next(trace for trace in tree.data if trace.name == "kept")
    assert colours.relative_luminance(kept.textfont.color) > 0.5  # ink turned light
    assert tree.layout.plot_bgcolor == "rgba(0, 0, 0, 0)"
    lines = for_dark(FIGURES["line view, one query"]())
    (highlight,) = lines.layout.shapes
    assert colours.parse_colour(highlight.fillcolor)[3] < 1  # the query's pale yellow row, translucent now
    heatmap = FIGURES["causal heatmap"]()
    dark = for_dark(FIGURES["causal heatmap"]())
    np.testing.assert_array_equal(np.asarray(dark.data[0].z, dtype=float), np.asarray(heatmap.data[0].z, dtype=float))
    assert dark.data[0].colorscale == heatmap.data[0].colorscale


# ------------------------------------------------------------------------------------------------ colour vision
@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, dict[str, float]]]:
    pytest.importorskip("colorspacious")
    return {palette: palettes.smallest_differences(palette) for palette in palettes.PALETTES}


def test_the_colour_blind_palette_keeps_every_charts_colours_apart(measured):
    low = {
        (chart, vision): round(difference, 1)
        for chart, by_vision in measured["colour_blind"].items()
        for vision, difference in by_vision.items()
        if difference < MIN_DIFFERENCE
    }
    assert low == {}
    assert set(measured["colour_blind"]) >= set(palettes.CHARTS)


def test_the_standard_palette_keeps_its_marks_apart(measured):
    """Chosen, kept and finished; flagged words; the highlighted bar; the open head's and the query's outlines."""
    low = {
        (chart, vision): round(difference, 1)
        for chart in palettes.MARKS
        for vision, difference in measured["standard"][chart].items()
        if difference < MIN_DIFFERENCE
    }
    assert low == {}


def test_diverging_scales_keep_their_ends_and_centre_apart(measured):
    assert min(measured["standard"]["RdBu scale"].values()) >= MIN_DIFFERENCE


def test_the_table_names_every_palette_chart_and_vision():
    pytest.importorskip("colorspacious")
    rows = list(palettes.colour_vision_rows(["colour_blind"]))
    assert len(rows) == (len(palettes.CHARTS) + len(palettes.DIVERGING)) * len(palettes.VISIONS)
    assert "deuteranopia" in palettes.colour_vision_table()


@pytest.mark.parametrize("palette", palettes.PALETTES)
def test_sixteen_heads_differ_by_colour_and_dash(palette: str):
    styles = [palettes.head_style(head, palette) for head in range(16)]
    assert len(set(styles)) == 16
    # Heads drawn with the same dash must differ by colour, for every reader.
    pytest.importorskip("colorspacious")
    for dash in palettes.HEAD_DASHES:
        colours = [colour for colour, style in styles if style == dash]
        for vision in palettes.VISIONS:
            assert palettes.smallest_difference(colours, vision) >= MIN_DIFFERENCE, (dash, vision)
    # The figure draws each head's legend entry and lines in its style.
    fig = palettes.with_palette(FIGURES["line view, 16 heads"](), palette)
    drawn = {}
    for trace in fig.data:
        if trace.legendgroup:
            drawn.setdefault(trace.legendgroup, set()).add((trace.line.color, trace.line.dash))
    assert all(len(pairs) == 1 for pairs in drawn.values())
    assert len({pairs.pop() for pairs in drawn.values()}) == 16


# ------------------------------------------------------------------------------------------------ with_palette
def explicit_colours(fig: go.Figure) -> set[tuple[int, int, int]]:
    """Every explicit colour of a figure as the browser receives it (its template aside), as red, green, blue: any
    string under a key that names a colour (``color``, ``fillcolor``, ``colorway``, ``colorscale``, …)."""
    found: set[tuple[int, int, int]] = set()

    def walk(value, key: str) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                if name != "template":
                    walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str) and "color" in key:
            rgba = colours.parse_colour(value)
            if rgba is not None and rgba[3] > 0:
                found.add(rgba[:3])

    walk(json.loads(fig.to_json()), "")
    return found


def standard_only() -> set[tuple[int, int, int]]:
    """The standard palette's colours that the colour-blind palette does not share."""
    standard = {palettes.rgb(c) for c in [*palettes.STANDARD.values(), *palettes.HEAD_COLOURS["standard"]]}
    other = {palettes.rgb(c) for c in [*palettes.COLOUR_BLIND.values(), *palettes.HEAD_COLOURS["colour_blind"]]}
    return standard - other


@pytest.mark.parametrize("name", ["beam tree", "training curves", "health curves", "alignment", "line view, 16 heads"])
def test_with_palette_recolours_a_built_figure(name: str):
    before = explicit_colours(FIGURES[name]())
    assert before & standard_only()  # the figure has colours to change
    fig = palettes.with_palette(FIGURES[name](), "colour_blind")
    after = explicit_colours(fig)
    assert not after & standard_only(), "standard colours left behind"
    assert after & {palettes.rgb(c) for c in [*palettes.OKABE_ITO.values(), palettes.VERMILLION]}
    assert list(fig.layout.colorway) == list(palettes.COLORWAYS["colour_blind"])
    go.Figure(fig.to_plotly_json())  # still a valid figure


def test_with_palette_keeps_opacity_and_meaning():
    tree = palettes.with_palette(beam_tree(), "colour_blind")
    finished = next(trace for trace in tree.data if trace.name == "finished")
    assert finished.marker.color == palettes.OKABE_ITO["orange"] and finished.marker.symbol == "diamond"
    chosen = next(trace for trace in tree.data if trace.mode == "lines" and trace.line.width == 3)
    assert chosen.line.color == palettes.COLOUR_BLIND["mark_red"]

    # The health curves' layers are one hue at several opacities: each keeps its own.
    def opacities(fig: go.Figure, colour: str) -> list[float]:
        rgbas = [colours.parse_colour(trace.line.color) for trace in fig.data if trace.line.color]
        return sorted(rgba[3] for rgba in rgbas if rgba[:3] == palettes.rgb(colour))

    health = FIGURES["health curves"]()
    before = opacities(health, palettes.STANDARD["mark_blue"])
    assert len(set(before)) == 2
    after = opacities(palettes.with_palette(health, "colour_blind"), palettes.COLOUR_BLIND["mark_blue"])
    assert after == before


def test_the_standard_palette_is_the_identity():
    fig = beam_tree()
    before = fig.to_json()
    assert palettes.with_palette(fig, "standard") is fig
    assert fig.to_json() == before
    with pytest.raises(ValueError, match="unknown palette"):
        palettes.with_palette(fig, "sepia")


def test_each_standard_colour_has_one_counterpart():
    """Roles that share a standard colour share its counterpart too, so re-colouring by colour is well defined."""
    mapping = palettes.palette_map("colour_blind")
    assert set(palettes.PALETTES["standard"]) == set(palettes.PALETTES["colour_blind"])
    assert palettes.rgb(palettes.STANDARD["mark_red"]) in mapping
    assert all(colours.parse_colour(colour) for colour in palettes.NEUTRALS.values())
