"""A training run as figures: loss, BLEU and health over steps or hours, the learning-rate schedule (§5.3) alone and
over the rate the log recorded, label smoothing (§5.4): its target and its floors under the log's losses, and the
parameter count per component."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer.analysis.training_log import (
    recorded_rates,
    restarts,
    schedule_check,
    smoothed_target,
    smoothing_floor,
)
from transformer.features.i18n import DEFAULT_LANGUAGE, words
from transformer.paper.model import Transformer
from transformer.paper.schedule import Schedule
from transformer.plots.colours import translucent
from transformer.plots.palettes import colour
from transformer.plots.style import empty_note, lay_out

RULE = colour("rule")  # the reference lines: warm-up, restarts, fine-tuning


def training_curves(records: list[dict], language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """Training loss, dev loss and dev BLEU; buttons switch the x axis between steps and training hours.

    Both losses are label-smoothed cross-entropies per target token (§5.4), so they compare directly; BLEU sits on
    a second y axis.
    """
    text = words(language, "plot_training")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    train = _records(records, "train", lambda r: "loss" in r)
    dev = _records(records, "dev")
    # Dev loss and BLEU also differ by marker: their orange and green come close for a reader without red–green vision.
    series = [
        (text["training_loss"], train, "loss", False, "lines", "blue", "circle"),
        (text["dev_loss"], dev, "dev_loss", False, "lines+markers", "orange", "circle"),
        (text["dev_bleu"], dev, "dev_bleu", True, "lines+markers", "green", "diamond"),
    ]
    by_step, by_hours = [], []
    for name, rows, field, secondary, mode, role, symbol in series:
        by_step.append([r["step"] for r in rows])
        by_hours.append([r.get("train_hours") for r in rows])
        line = _field_line(rows, field, name, mode, {"color": colour(role)}, marker={"symbol": symbol})
        fig.add_trace(line, secondary_y=secondary)
    starts = _records(records, "init")
    labelled = dev_set_changes(starts)
    marks = {
        axis: [
            fine_tuning_mark(r, r["step"] if axis == "step" else r.get("train_hours"), language, label)
            for r, label in zip(starts, labelled, strict=True)
        ]
        for axis in ("step", "hours")
    }
    if starts:  # the dashed lines' legend entry
        fig.add_trace(_legend_line(text["fine_tuning"], "dash"))
        by_step.append([None])
        by_hours.append([None])
    if not train and not dev:
        empty_note(fig, text["no_records"])
    lay_out(
        fig,
        text["curves_title"],
        460,
        top=90,
        legend_y=-0.2,
        updatemenus=[_axis_buttons(text, by_step, by_hours, marks)],
        shapes=marks["step"],
        hovermode="x unified",
    )
    fig.update_xaxes(title_text=text["step"])
    fig.update_yaxes(title_text=text["loss_axis"], secondary_y=False)
    fig.update_yaxes(title_text=text["dev_bleu"], secondary_y=True, rangemode="tozero", showgrid=False)
    return fig


def _records(records: list[dict], kind: str, keep: Callable[[dict], bool] | None = None) -> list[dict]:
    """The records of ``kind`` (those ``keep`` accepts, if given), by step."""
    return sorted(
        (r for r in records if r.get("kind") == kind and (keep is None or keep(r))),
        key=lambda r: r["step"],
    )


def _field_line(rows: list[dict], field: str, name: str, mode: str, line: dict, **style) -> go.Scatter:
    """The records' ``field`` over their steps, its value on hover."""
    return go.Scatter(
        x=[r["step"] for r in rows],
        y=[r.get(field) for r in rows],
        mode=mode,
        name=name,
        line=line,
        hovertemplate=f"{name}: %{{y:.3f}}<extra></extra>",
        **style,
    )


def _legend_line(name: str, dash: str) -> go.Scatter:
    """A legend entry for the grey vertical lines drawn as shapes (:func:`_vertical_line`), which have none."""
    return go.Scatter(x=[None], y=[None], mode="lines", name=name, line={"dash": dash, "color": RULE, "width": 1})


def _vertical_line(x: float | None, dash: str) -> dict:
    """A grey vertical line at ``x`` across the whole plot, as a layout shape."""
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "xref": "x",
        "y0": 0,
        "y1": 1,
        "yref": "paper",
        "line": {"dash": dash, "color": RULE, "width": 1},
    }


def _axis_buttons(text: dict, by_step: list, by_hours: list, marks: dict) -> dict:
    """Two buttons that redraw every trace (and the fine-tuning marks) against steps or training hours."""

    def button(label: str, xs: list, title: str, shapes: list) -> dict:
        return {"label": label, "method": "update", "args": [{"x": xs}, {"xaxis.title.text": title, "shapes": shapes}]}

    return {
        "type": "buttons",
        "direction": "left",
        "x": 1.0,
        "xanchor": "right",
        "y": 1.12,
        "yanchor": "bottom",
        "showactive": True,
        "buttons": [
            button(text["by_step"], by_step, text["step"], marks["step"]),
            button(text["by_hours"], by_hours, text["hours"], marks["hours"]),
        ],
    }


HEALTH_PANELS = (  # the measure and whether it has one value per layer; titles are plot_training.<measure>
    ("encoder_position_cosine", True),
    ("encoder_entropy_normalised", True),
    ("cross_entropy_normalised", True),
    ("cross_alignment_best", False),
)


def health_records(records: list[dict]) -> list[dict]:
    """The dev records that carry the health measures (:mod:`transformer.analysis.health`), by step."""
    return _records(records, "dev", lambda r: isinstance(r.get("encoder_position_cosine"), list))


def health_curves(records: list[dict], language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """The health measures over training: one line per layer (darker = higher layer) in each of four panels.

    Collapse reads as cosines near 1 in the upper encoder layers and entropies near 1 (uniform attention); a healthy
    run keeps the cosines low, sharpens the entropies and raises the best head's alignment."""
    text = words(language, "plot_training")
    rows = health_records(records)
    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[text[field] for field, _ in HEALTH_PANELS],
        vertical_spacing=0.16,
        horizontal_spacing=0.08,
    )
    steps = [r["step"] for r in rows]
    per = text["layer"]

    def line(panel: int, values: list, name: str, shade: str, hover: str, **style) -> None:
        row, col = divmod(panel, 2)
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=values,
                mode="lines+markers",
                name=name,
                showlegend=False,
                line={"color": shade},
                hovertemplate=f"{hover} %{{y:.3f}}<extra></extra>",
                **style,
            ),
            row=row + 1,
            col=col + 1,
        )

    for index, (field, per_layer) in enumerate(HEALTH_PANELS):
        if not per_layer:
            line(index, [r.get(field) for r in rows], text["best_head"], colour("ink"), text["alignment"])
            continue
        layers = max((len(r.get(field) or []) for r in rows), default=0)
        for layer in range(layers):
            shade = 0.25 + 0.75 * (layer + 1) / layers
            hue = colour("mark_blue") if index % 2 == 0 else colour("mark_red")
            values = [(r.get(field) or [None] * layers)[layer] for r in rows]
            name = f"{per} {layer + 1}"
            line(index, values, name, translucent(hue, round(shade, 2)), f"{name}:", marker={"size": 4})
    if not rows:
        empty_note(fig, text["no_health"])
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(title_text=text["step"], row=2)
    return lay_out(fig, text["health_title"], 620, top=90)


def dev_set_changes(starts: list[dict]) -> list[bool]:
    """For each continuation start (``kind: init`` records, in order), whether it validates on another dev set than
    the one before: only those marks get a label, since a label on every continuation would pile up at the top."""
    return [
        bool(start.get("dev")) and start.get("dev") != previous.get("dev")
        for previous, start in itertools.pairwise([{}, *starts])
    ]


def fine_tuning_mark(record: dict, x: float | None, language: str = DEFAULT_LANGUAGE, labelled: bool = True) -> dict:
    """A dashed vertical line where a run started from a checkpoint (``--init-from``), labelled with its dev set."""
    text = words(language, "plot_training")
    dev = text["dev_set"].format(dev=record["dev"]) if labelled and record.get("dev") else ""
    return {
        **_vertical_line(x, "dash"),
        "label": {"text": dev, "textposition": "end", "xanchor": "right", "font": {"size": 11}},
    }


def learning_rate_curve(
    schedule: Schedule, steps: int, current_step: int | None = None, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """§5.3's schedule, lrate = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), over ``steps`` steps;
    with a cool-down, annealed linearly to zero over the ``cooldown`` steps ending at ``last_step``."""
    # The curve's corners join the sampled steps so they are drawn in place.
    grid = np.unique(np.r_[np.linspace(1, max(steps, 2), min(max(steps, 2), 1500)).round(), schedule.corners])
    grid = grid[grid >= 1].astype(int)
    text = words(language, "plot_training")
    rates = [schedule.rate(int(step)) for step in grid]
    fig = go.Figure(_rate_line(text, grid, rates, text["learning_rate"], digits=2, line={"color": colour("blue")}))
    fig.add_vline(
        x=schedule.warmup,
        line_dash="dot",
        line_color=RULE,
        annotation_text=text["warmup_ends"].format(warmup=schedule.warmup, peak=schedule.peak),
    )
    if current_step is not None:
        rate = schedule.rate(current_step)
        fig.add_trace(
            go.Scatter(
                x=[current_step],
                y=[rate],
                mode="markers",
                marker={"size": 11, "color": colour("red")},
                name=text["this_checkpoint"].format(step=current_step, rate=rate),
            )
        )
    _rate_axes(fig, text)
    title = text["schedule_title"].format(d_model=schedule.d_model, warmup=schedule.warmup, scale=schedule.scale)
    if schedule.cooldown > 0:
        title += text["cooldown"].format(cooldown=schedule.cooldown, last_step=schedule.last_step)
    return lay_out(fig, title, 400, legend_y=-0.25)


def _rate_line(text: dict, x: list, y: list, name: str, label: str = "lr", digits: int = 3, **style) -> go.Scatter:
    """A learning rate over steps, the step and the rate (``label``, ``digits`` after the point) on hover."""
    hover = f"{text['step']} %{{x}}<br>{label} %{{y:.{digits}e}}<extra></extra>"
    return go.Scatter(x=x, y=y, mode="lines", name=name, hovertemplate=hover, **style)


def _rate_axes(fig: go.Figure, text: dict) -> None:
    fig.update_xaxes(title_text=text["step"])
    fig.update_yaxes(title_text=text["learning_rate"], exponentformat="e")


def recorded_schedule(
    records: list[dict], schedule: Schedule | None, start: int = 0, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """The learning rate the log recorded at every training record (broken where a continuation restarted the
    schedule), and over the checkpoint's own span, from ``start``, §5.3's formula with the arguments it was trained
    with (:func:`transformer.analysis.training_log.schedule_check`; not drawn when ``schedule`` is None: unknown)."""
    text = words(language, "plot_training")
    steps, rates = recorded_rates(records)
    starts = [step for step in restarts(records) if step > 0]
    xs: list = []
    ys: list = []
    for step, rate in zip(steps, rates, strict=True):
        if xs and any(xs[-1] <= restart < step for restart in starts):
            xs.append(None)  # a restart: the recorded line breaks there
            ys.append(None)
        xs.append(step)
        ys.append(rate)
    fig = go.Figure(_rate_line(text, xs, ys, text["recorded_lr"], line={"color": colour("blue"), "width": 2}))
    if schedule is not None:
        check = schedule_check(records, schedule, start)
        name = text["formula_lr"].format(warmup=schedule.warmup, scale=schedule.scale, start=start)
        line = {"color": colour("red"), "dash": "dash", "width": 2}
        fig.add_trace(_rate_line(text, list(check.steps), list(check.formula), name, "§5.3:", line=line))
    if starts:  # the restarts' legend entry
        fig.add_trace(_legend_line(text["restart"], "dot"))
    if not steps:
        empty_note(fig, text["no_records"])
    lay_out(
        fig,
        text["recorded_schedule_title"],
        420,
        legend_y=-0.25,
        shapes=[_vertical_line(step, "dot") for step in starts],
        hovermode="closest",
    )
    _rate_axes(fig, text)
    return fig


def smoothed_target_figure(epsilon: float, vocab_size: int, language: str = DEFAULT_LANGUAGE) -> go.Figure:
    """§5.4's target for one position next to the one-hot target it replaces: the right token's share, one other
    token's, and all the other tokens' together (:func:`transformer.analysis.training_log.smoothed_target`)."""
    text = words(language, "plot_training")
    right, other = smoothed_target(epsilon, vocab_size)
    categories = [text["right_token"], text["other_token"], text["other_tokens"].format(count=vocab_size - 1)]
    targets = ((text["one_hot"], [1.0, 0.0, 0.0], RULE), (text["smoothed"], [right, other, 1 - right], colour("blue")))
    fig = go.Figure(
        [
            go.Bar(
                x=categories,
                y=values,
                name=name,
                marker_color=fill,
                text=[f"{value:.6g}" for value in values],
                textposition="outside",
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.6g}}<extra></extra>",
            )
            for name, values, fill in targets
        ]
    )
    fig.update_yaxes(title_text=text["probability"], range=[0, 1.15])
    title = text["target_title"].format(epsilon=epsilon, vocab=vocab_size)
    return lay_out(fig, title, 380, legend_y=-0.2, barmode="group")


def smoothing_on_log(
    records: list[dict], epsilon: float, vocab_size: int, language: str = DEFAULT_LANGUAGE
) -> go.Figure:
    """The log's label-smoothed losses beside its negative log-likelihoods (training and dev, nats per target
    token), with the two floors of ε over ``vocab_size`` tokens: the least label-smoothed loss, H(q), and the NLL of
    the model that reaches it (:func:`transformer.analysis.training_log.smoothing_floor`). Only the fields the log
    holds are drawn."""
    text = words(language, "plot_training")
    floor = smoothing_floor(epsilon, vocab_size)
    train, dev = _records(records, "train"), _records(records, "dev")
    series = [
        (text["training_loss"], train, "loss", "lines", "blue", "solid"),
        (text["training_nll"], train, "nll", "lines", "blue", "dot"),
        (text["dev_loss"], dev, "dev_loss", "lines+markers", "orange", "solid"),
        (text["dev_nll"], dev, "dev_nll", "lines+markers", "orange", "dot"),
    ]
    fig = go.Figure()
    for name, rows, field, mode, role, dash in series:
        rows = [r for r in rows if isinstance(r.get(field), (int, float))]
        if not rows:
            continue
        line = {"color": colour(role), "dash": dash}
        fig.add_trace(_field_line(rows, field, name, mode, line, marker={"size": 4}))
    for value, label, dash in (
        (floor.loss, text["loss_floor"].format(value=floor.loss), "dash"),
        (floor.nll, text["nll_floor"].format(value=floor.nll, perplexity=floor.perplexity), "dot"),
    ):
        fig.add_hline(
            y=value,
            line_dash=dash,
            line_color=colour("green"),
            annotation_text=label,
            annotation_position="top right",
        )
    if not fig.data:
        empty_note(fig, text["no_records"])
    fig.update_xaxes(title_text=text["step"])
    fig.update_yaxes(title_text=text["nats_axis"], rangemode="tozero")
    title = text["smoothing_title"].format(epsilon=epsilon, vocab=vocab_size)
    return lay_out(fig, title, 460, legend_y=-0.2, hovermode="x unified")


# ----------------------------------------------------------------------------------------------------- parameters
# Parameter names look like "decoder_layers.3.cross_attention.query.weight"; the norms after each sub-layer are
# "…self_attention_norm…", which the ".self_attention." patterns do not match.
PARAMETER_GROUPS = (  # names are plot_training.group_<key>
    ("embedding", lambda name: name.startswith("embedding.")),
    ("encoder_self", lambda name: name.startswith("encoder_layers.") and ".self_attention." in name),
    ("encoder_ffn", lambda name: name.startswith("encoder_layers.") and ".feed_forward." in name),
    ("decoder_self", lambda name: name.startswith("decoder_layers.") and ".self_attention." in name),
    ("cross", lambda name: ".cross_attention." in name),
    ("decoder_ffn", lambda name: name.startswith("decoder_layers.") and ".feed_forward." in name),
    ("norms", lambda name: "_norm." in name),
)


def parameter_table(model: Transformer, language: str = DEFAULT_LANGUAGE) -> list[dict]:
    """Parameter counts per component with each one's share of the total, ending with the total.

    Anything a future model adds outside these groups appears as "other" rather than vanishing from the sum.
    """
    text = words(language, "plot_training")
    counts = dict.fromkeys([key for key, _ in PARAMETER_GROUPS], 0)
    for name, parameter in model.named_parameters():
        group = next((key for key, matches in PARAMETER_GROUPS if matches(name)), "other")
        counts[group] = counts.get(group, 0) + parameter.numel()
    total = sum(counts.values())
    rows = [{"component": text[f"group_{key}"], "parameters": n, "share": n / total} for key, n in counts.items()]
    return [*rows, {"component": text["group_total"], "parameters": total, "share": 1.0}]
