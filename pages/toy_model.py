"""A model trained live in class: the paper's Transformer, made tiny, learns to copy, reverse or sort a string here in
the visitor's session (:mod:`transformer.toy`), its loss and its heads redrawn every few steps, with the paper's
ablations as switches (one head, no positional encoding, no 1/√d_k).

A run lives in ``st.session_state`` keyed by its settings, one snapshot appended as each arrives: a finished run is
shown again whenever the visitor comes back to the same settings, and a run cut short (the Stop button, or any other
click, which makes Streamlit rerun the page) keeps what it had learned so far, marked as stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from pages import url_state
from pages.common import COMMON_FIELDS, presenter_controls, save_page, show_figure, sidebar_figure_format_picker
from pages.i18n import language, t
from pages.navigation import through_the_router
from pages.url_state import Field
from transformer.plots import toy as plot_toy
from transformer.toy import TASKS, ToyRun, ToySettings, ToySnapshot, new_run, torch_threads, train

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator

st.set_page_config(page_title=t("toy.title"), page_icon="🧸", layout="wide")

HEADS = (1, 2, 4, 8)
VIEWS = ("cross", "encoder")
SECONDS = (10, 90)
STEPS = (50, 3000)
RUNS_KEY = "_toy_runs"  # settings → ToyRun, this session's runs
KEPT_RUNS = 8  # the oldest runs beyond this many are dropped
FIELDS = {
    "toy_task": Field("reverse", url_state.choice(TASKS)),
    "toy_heads": Field(8, url_state.choice(HEADS)),
    "toy_pe": Field(True, url_state.flag, url_state.dump_flag),
    "toy_scaled": Field(True, url_state.flag, url_state.dump_flag),
    "toy_seed": Field(0, url_state.integer(0, 999)),
    "toy_seconds": Field(SECONDS[1], url_state.integer(*SECONDS)),
    "toy_steps": Field(STEPS[1], url_state.integer(*STEPS)),
    "toy_view": Field(VIEWS[0], url_state.choice(VIEWS)),
    "toy_step": Field(None, url_state.integer(0, STEPS[1])),  # the snapshot shown once a run has ended
}


def runs() -> dict[ToySettings, ToyRun]:
    return st.session_state.setdefault(RUNS_KEY, {})


def keep_run(run: ToyRun) -> None:
    """Remember ``run`` under its settings (as the newest), forgetting the oldest beyond :data:`KEPT_RUNS`."""
    kept = runs()
    kept.pop(run.settings, None)
    kept[run.settings] = run
    while len(kept) > KEPT_RUNS:
        kept.pop(next(iter(kept)))


def expectations(settings: ToySettings) -> list[str]:
    """What this run should show: the task's pattern, then a word on each ablation switched on."""
    if not settings.positional_encoding:
        notes = [t("toy.expect_no_pe_sort" if settings.task == "sort" else "toy.expect_no_pe_order")]
    else:
        notes = [t(f"toy.expect_{settings.task}")]
    if settings.heads == 1:
        notes.append(t("toy.expect_one_head", d_k=settings.d_model))
    if not settings.scaled:
        notes.append(t("toy.expect_unscaled", d_k=settings.d_model // settings.heads))
    return notes


def show_metrics(snapshot: ToySnapshot) -> None:
    first, second, third, fourth = st.columns(4)
    first.metric(t("toy.step"), f"{snapshot.step:,}")
    second.metric(t("toy.seconds"), f"{snapshot.seconds:.1f}")
    third.metric(t("toy.loss"), f"{snapshot.metrics['loss']:.3f}" if "loss" in snapshot.metrics else "–")
    fourth.metric(t("toy.exact_match"), f"{100 * snapshot.metrics['exact_match']:.1f}%")


def show_run(run: ToyRun, view: str, shown: int, key: str) -> None:
    """Snapshot ``shown``'s numbers, the run's curve and the snapshot's attention (``key``: distinct per drawing)."""
    snapshot = run.snapshots[shown]
    show_metrics(snapshot)
    show_figure(plot_toy.training_curve(run.snapshots, language()), key=f"toy_curve_chart{key}", filename="toy_curve")
    if view == "cross":
        queries, keys = run.output_tokens, run.source_tokens
    else:
        queries, keys = run.source_tokens, run.source_tokens
    figure = plot_toy.head_tiles(snapshot.attention[view], queries, keys, view, snapshot.step, language())
    show_figure(figure, key=f"toy_attention_chart{key}", filename=f"toy_{view}_step_{snapshot.step}")


def train_live(settings: ToySettings, view: str, buttons: DeltaGenerator) -> None:
    """Train, drawing every snapshot as it comes; a Stop button (in ``buttons``; any click does it) interrupts the
    page run."""
    run = new_run(settings)
    keep_run(run)
    buttons.button(t("toy.stop"), key="toy_stop", icon=":material/stop:")
    status, live = st.empty(), st.empty()
    with torch_threads():  # given back however the run ends (an interruption raises here)
        for snapshot in train(settings):
            run.snapshots.append(snapshot)
            status.info(
                t("toy.training", step=snapshot.step, seconds=snapshot.seconds), icon=":material/model_training:"
            )
            with live.container():
                show_run(run, view, -1, key=f"_live_{len(run.snapshots)}")
    run.finished = True
    url_state.assign({"toy_step": run.last.step})  # a new run opens on its last snapshot
    st.rerun()  # drawn again as a finished run, with its step slider


# ------------------------------------------------------------------------------------------------ page
through_the_router()
url_state.keep({**COMMON_FIELDS, **FIELDS}, "toy")
sidebar_figure_format_picker()
presenter_controls()

st.title(t("toy.title"))
st.markdown(t("toy.intro"))
left, middle, right = st.columns(3)
task_names = {name: t(f"toy.task_{name}") for name in TASKS}  # looked up now, in the page's language
task = left.radio(t("toy.task"), TASKS, key="toy_task", format_func=task_names.__getitem__, horizontal=True)
left.caption(t("toy.task_examples"))
heads = middle.select_slider(t("toy.heads"), HEADS, key="toy_heads", help=t("toy.heads_help"))
seed = middle.number_input(t("toy.seed"), 0, 999, key="toy_seed", help=t("toy.seed_help"))
positional = right.toggle(t("toy.pe"), key="toy_pe", help=t("toy.pe_help"))
scaled = right.toggle(t("toy.scaled"), key="toy_scaled", help=t("toy.scaled_help"))
with st.expander(t("toy.budget")):
    seconds = st.slider(t("toy.seconds_budget"), *SECONDS, key="toy_seconds")
    steps = st.slider(t("toy.steps_budget"), *STEPS, key="toy_steps", step=50)
settings = ToySettings(
    task=task,
    heads=heads,
    positional_encoding=positional,
    scaled=scaled,
    seed=int(seed),
    max_seconds=float(seconds),
    max_steps=int(steps),
)
buttons, notes = st.columns([1, 2], gap="large")  # the buttons and what to expect above the charts
with notes:
    st.subheader(t("toy.expect"))
    for note in expectations(settings):
        st.markdown(note)
view_names = {name: t(f"toy.view_{name}") for name in VIEWS}
view = buttons.radio(t("toy.view"), VIEWS, key="toy_view", format_func=view_names.__getitem__)
run = runs().get(settings)
label = t("toy.train_again") if run is not None else t("toy.train")
if buttons.button(label, key="toy_train", type="primary", icon=":material/model_training:"):
    save_page(FIELDS)
    train_live(settings, view, buttons)
elif run is None or not run.snapshots:
    st.info(t("toy.press_train"))
else:
    last = run.last
    if run.finished:
        st.success(t("toy.finished", steps=last.step, seconds=last.seconds))
    else:
        st.warning(t("toy.stopped", step=last.step, seconds=last.seconds))
    shown = 0
    if len(run.snapshots) > 1:
        steps_shown = [snapshot.step for snapshot in run.snapshots]
        url_state.ensure("toy_step", steps_shown[-1], steps_shown.__contains__)
        labels = {snapshot.step: snapshot.label for snapshot in run.snapshots}  # "step · seconds"
        chosen = st.select_slider(t("toy.shown_step"), steps_shown, key="toy_step", format_func=labels.__getitem__)
        shown = steps_shown.index(chosen)
    show_run(run, view, shown, key="")
    probe = {"source": " ".join(run.source_tokens), "output": " ".join(run.output_tokens)}
    st.caption(t("toy.probe_caption", **probe))
    st.caption(t("toy.held_out_caption", count=settings.held_out_size))
save_page(FIELDS)
