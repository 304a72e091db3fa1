"""The loaded model: its configuration and parameter counts, its training curves and learning-rate schedule (§5.3)
alone and on its own training log, label smoothing (§5.4) with the floors it puts under the log's losses, and the
scores its model card reports."""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from pages import url_state
from pages.common import page, section
from pages.figures import show_figure
from pages.i18n import escaped, language, t
from pages.url_state import Field
from transformer.analysis.training_log import schedule_check, smoothed_target, smoothing_floor
from transformer.formats.checkpoint import LOG_FILES, TRAINER_FILE
from transformer.formats.runs import portable, portable_path, read_metrics, training_log
from transformer.paper.schedule import Schedule
from transformer.plots import training as plot_training

MODEL_CARD = "MODEL_CARD.md"
DEFAULT_LABEL_SMOOTHING = 0.1  # the trainer's default (--label-smoothing), the paper's ε_ls


def model_card(checkpoint: Path, language: str) -> Path | None:
    """The checkpoint's model card in ``language`` (``MODEL_CARD.ko.md``: a shorter summary), else the English one;
    None when it has neither."""
    translated = checkpoint / f"{Path(MODEL_CARD).stem}.{language}.md"
    for card in (translated, checkpoint / MODEL_CARD):
        if card.is_file():
            return card
    return None


def trained_schedule(checkpoint: Path, meta: dict) -> dict:
    """The trainer's arguments the checkpoint was trained with: recorded in meta.json by an export or average, or,
    for a checkpoint still in its run folder, in the trainer state saved with it ({} when neither is readable)."""
    arguments = meta.get("training_args")
    if not isinstance(arguments, dict):
        try:
            arguments = json.loads((checkpoint / TRAINER_FILE).read_text(encoding="utf-8")).get("args", {})
        except (OSError, json.JSONDecodeError, AttributeError):
            return {}
    return arguments if isinstance(arguments, dict) else {}


st.set_page_config(page_title=t("model.title"), page_icon="📈", layout="wide")

FIELDS = {
    "lr_warmup": Field(None, url_state.integer(1, 100_000)),
    "lr_scale": Field(None, url_state.number(0.01, 10.0)),
    "lr_steps": Field(None, url_state.integer(1000, 300_000)),
    "ls_epsilon": Field(None, url_state.number(0.0, 0.5)),
}
with page("model", FIELDS) as loaded:
    config, meta = loaded.config, portable(loaded.meta)  # no folder of the machine it was trained on

    st.title(t("model.title"))
    st.caption(t("model.checkpoint", path=escaped(portable_path(str(loaded.path)), code=True)))

    st.header(t("model.configuration"))
    columns = st.columns(6)
    columns[0].metric(
        t("model.layers"), f"{config.encoder_layers} + {config.decoder_layers}", help=t("model.layers_help")
    )
    columns[1].metric(t("model.heads"), config.num_heads)
    columns[2].metric("d_model", config.d_model)
    columns[3].metric("d_ff", config.d_ff)
    columns[4].metric(t("model.vocabulary"), f"{config.vocab_size:,}")
    columns[5].metric(t("model.parameters"), f"{loaded.model.num_parameters() / 1e6:.1f} M")
    left, right = st.columns([7, 3])
    with left:
        st.markdown(t("model.per_component"))
        st.dataframe(
            plot_training.parameter_table(loaded.model, language()),
            hide_index=True,
            width="stretch",
            column_config={
                "component": st.column_config.TextColumn(t("model.component")),
                "parameters": st.column_config.NumberColumn(t("model.parameters"), format="localized"),
                "share": st.column_config.ProgressColumn(
                    t("model.share"), format="percent", min_value=0.0, max_value=1.0, width="medium"
                ),  # wide enough for its percentage beside the bar
            },
        )
    with right:
        st.markdown("**config.json**")
        st.json(config.to_dict(), expanded=False)
        st.markdown("**meta.json**")
        st.json(meta, expanded=False)

    st.header(t("model.curves"))
    log = training_log(loaded.path)
    records = read_metrics(log) if log is not None else []
    if records:
        st.caption(t("model.curves_caption", log=escaped(log.name, code=True), records=len(records)))
        show_figure(plot_training.training_curves(records, language()), key="training_curves")
    else:
        st.info(t("model.no_log", files=" / ".join(LOG_FILES)))

    st.header(t("model.health"))
    if plot_training.health_records(records):
        st.caption(t("model.health_caption"))
        show_figure(plot_training.health_curves(records, language()), key="health_curves")
    else:
        st.info(t("model.no_health"))

    section(
        t("model.schedule"),
        t("model.schedule_text"),
        r"lrate = scale \cdot d_{\text{model}}^{-0.5} \cdot "
        r"\min\left(step^{-0.5},\; step \cdot warmup\_steps^{-1.5}\right)",
    )
    arguments = trained_schedule(loaded.path, meta)
    trained_warmup, trained_scale = arguments.get("warmup"), arguments.get("lr_scale")
    step = meta.get("step") if isinstance(meta.get("step"), int) else None
    parent = meta.get("fine_tuned_from") if isinstance(meta.get("fine_tuned_from"), dict) else None
    start = parent["step"] if parent is not None and isinstance(parent.get("step"), int) else 0
    cooldown = arguments.get("cooldown") if isinstance(arguments.get("cooldown"), int) else 0
    last_step = (
        arguments.get("max_steps", 0) - start if cooldown > 0 and isinstance(arguments.get("max_steps"), int) else 0
    )
    schedule_known = isinstance(trained_warmup, int) and isinstance(trained_scale, (int, float))
    if not schedule_known:
        st.caption(t("model.no_schedule"))
        trained_warmup, trained_scale = 4000, 1.0
    else:
        st.caption(t("model.trained_with", warmup=trained_warmup, scale=trained_scale))
    if cooldown > 0 and last_step > 0:
        st.caption(t("model.cooldown", cooldown=cooldown, until=last_step + start))
    if start and step is not None:
        st.caption(
            t(
                "model.fine_tuned",
                parent=escaped(parent.get("checkpoint"), code=True),
                start=start,
                into=step - start,
                step=step,
            )
        )
        step -= start
    warmup_range = (max(1, min(100, trained_warmup)), max(20_000, trained_warmup))
    scale_range = (min(0.05, trained_scale), max(2.0, trained_scale))
    url_state.ensure("lr_warmup", trained_warmup, lambda value: warmup_range[0] <= value <= warmup_range[1])
    url_state.ensure("lr_scale", float(trained_scale), lambda value: scale_range[0] <= value <= scale_range[1])
    url_state.ensure(
        "lr_steps", min(300_000, max(5 * trained_warmup, int((step or 0) * 1.5), last_step, 1000)) // 1000 * 1000
    )
    first, second, third = st.columns(3)
    warmup = first.slider(t("model.warmup"), *warmup_range, step=100, key="lr_warmup")
    scale = second.slider(t("model.scale"), *scale_range, step=0.05, key="lr_scale")
    steps = third.slider(t("model.steps_shown"), 1000, 300_000, step=1000, key="lr_steps")
    shown = Schedule(config.d_model, warmup, scale, cooldown, last_step)
    show_figure(plot_training.learning_rate_curve(shown, steps, step, language()), key="learning_rate")
    if any("lr" in record for record in records):
        st.markdown(t("model.recorded_schedule"))
        trained = (
            Schedule(config.d_model, trained_warmup, trained_scale, cooldown, last_step) if schedule_known else None
        )
        show_figure(plot_training.recorded_schedule(records, trained, start, language()), key="recorded_schedule")
        if trained is not None:
            check = schedule_check(records, trained, start)
            st.caption(t("model.recorded_schedule_caption", records=len(check.steps), gap=check.largest_relative_gap))
        else:
            st.caption(t("model.recorded_schedule_unknown"))

    section(
        t("model.smoothing"),
        t("model.smoothing_text"),
        r"q(y) = (1 - \varepsilon_{ls})\,[y = y^{*}] + \frac{\varepsilon_{ls}}{V}, \qquad "
        r"\min_{p}\, H(q, p) = H(q) = -\sum_{y} q(y) \ln q(y)",
    )
    recorded_epsilon = arguments.get("label_smoothing")
    trained_epsilon = (
        float(recorded_epsilon)
        if isinstance(recorded_epsilon, (int, float)) and 0 <= recorded_epsilon <= 0.5
        else DEFAULT_LABEL_SMOOTHING
    )
    if trained_epsilon == recorded_epsilon:
        st.caption(t("model.smoothing_recorded", epsilon=trained_epsilon))
    else:
        st.caption(t("model.smoothing_default", epsilon=trained_epsilon))
    url_state.ensure("ls_epsilon", trained_epsilon, lambda value: 0.0 <= value <= 0.5)
    epsilon = st.slider(t("model.epsilon"), 0.0, 0.5, step=0.01, key="ls_epsilon")
    floor = smoothing_floor(epsilon, config.vocab_size)
    columns = st.columns(4)
    columns[0].metric(t("model.right_share"), f"{smoothed_target(epsilon, config.vocab_size)[0]:.6g}")
    columns[1].metric(t("model.least_loss"), f"{floor.loss:.4f}")
    columns[2].metric(t("model.floor_nll"), f"{floor.nll:.4f}")
    columns[3].metric(t("model.floor_perplexity"), f"{floor.perplexity:.4f}")
    show_figure(plot_training.smoothed_target_figure(epsilon, config.vocab_size, language()), key="smoothed_target")
    if any("loss" in record for record in records):
        show_figure(
            plot_training.smoothing_on_log(records, trained_epsilon, config.vocab_size, language()),
            key="smoothing_on_log",
        )
        st.caption(
            t(
                "model.smoothing_log_caption",
                log=escaped(log.name, code=True),
                epsilon=trained_epsilon,
                vocab=config.vocab_size,
            )
        )
    else:
        st.info(t("model.no_smoothing_log"))

    st.header(t("model.scores"))
    card = model_card(loaded.path, language())
    scores = meta.get("scores")
    if card is not None:
        with st.container(border=True):
            st.markdown(card.read_text(encoding="utf-8", errors="replace"))
        if card.name != MODEL_CARD:  # a summary: the full card is the English one
            st.caption(t("model.card_summary", card=MODEL_CARD))
            with st.expander(t("model.card_full")), st.container(key="english_model_card"):
                st.markdown((loaded.path / MODEL_CARD).read_text(encoding="utf-8", errors="replace"))
    if scores:
        st.markdown(t("model.recorded"))
        st.json(scores)
    if card is None and not scores:
        st.info(t("model.no_scores", card=MODEL_CARD))
