"""A model trained live in class: the paper's Transformer, made tiny, learns to copy, reverse or sort a string here in
the visitor's session (:mod:`transformer.features.toy`), its loss and its heads redrawn every few steps, with the
paper's ablations as switches (one head, no positional encoding, no 1/√d_k).

The training is a job in the server's queue (:mod:`transformer.serving.jobs`), not part of the page's run: the page
answers at once, shows the job's place while it waits and its snapshots as they come (redrawn every second), and the
visitor may click anything meanwhile, leave for another page or reload (the job's id is in the address) and find it
where it got to. Stop ends it. A run lives in ``st.session_state`` keyed by its settings once its job has ended: a
finished run is shown again whenever the visitor comes back to the same settings, and a stopped one keeps what it
had learned so far, marked as stopped.
"""

from __future__ import annotations

import os

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pages import url_state
from pages.choices import keyed
from pages.common import page
from pages.figures import show_figure
from pages.i18n import escaped, language, t
from pages.page_slots import cores, page_slots
from pages.url_state import Field
from transformer.features.toy import TASKS, ToyRun, ToySettings, ToySnapshot, new_run
from transformer.plots import toy as plot_toy
from transformer.serving.jobs import FAILED, FINISHED, WAITING, Job, JobError, JobQueue, settings_of

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
    "toy_job": Field("", url_state.text(40)),  # the training job on show, while it waits or runs
}
POLL_SECONDS = 1.0  # how often a waiting or running job is redrawn


@st.cache_resource(show_spinner=False)
def job_queue() -> JobQueue:
    """The server's queue of trainings: one worker per core but one (one at least; ``TRANSFORMER_JOB_WORKERS``
    overrides), so that the pages keep a core; one job per session; 64 waiting at most."""
    workers = int(os.environ.get("TRANSFORMER_JOB_WORKERS") or max(1, cores() - 1))
    return JobQueue(workers=workers, per_owner=1, capacity=64)


def owner() -> str:
    """Who asks: the browser session (a reload is a new session, which finds its job by the id in the address)."""
    context = get_script_run_ctx()
    return context.session_id if context is not None else "local"


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


def run_of(job: Job, settings: ToySettings) -> ToyRun:
    """The run a job has made so far: its snapshots, finished when the job has."""
    run = new_run(settings)
    run.snapshots = list(job.progress)
    run.finished = job.state == FINISHED
    return run


@st.fragment(run_every=POLL_SECONDS)
def follow(job_id: str, settings: ToySettings, view: str) -> None:
    """A waiting or running job, redrawn every second (in a page slot, as every run); when it has ended, the whole
    page runs again and keeps its run."""
    with page_slots().held():
        queue = job_queue()
        job = queue.get(job_id)
        if job is None or job.done:
            st.rerun()
        if st.button(t("toy.stop"), key="toy_stop", icon=":material/stop:"):
            queue.cancel(job)
            st.rerun()
        if job.state == WAITING:
            st.info(t("toy.waiting", place=queue.place(job), running=queue.running), icon=":material/hourglass_top:")
            return
        run = run_of(job, settings)
        if run.last is None:
            st.info(t("toy.starting"), icon=":material/model_training:")
            return
        st.info(t("toy.training", step=run.last.step, seconds=run.last.seconds), icon=":material/model_training:")
        show_run(run, view, -1, key=f"_live_{len(run.snapshots)}")


def current_job(settings: ToySettings) -> Job | None:
    """The job of the address (this session's, or a reloaded one's) when it trains these settings."""
    job = job_queue().get(st.session_state.get("toy_job") or None)
    if job is None or job.kind != "toy" or job.settings != settings_of(settings):
        return None
    return job


def other_training(settings: ToySettings) -> None:
    """The address names a job that trains other settings (the visitor changed a control while it ran): say so, with
    the way to stop it, rather than hide a job that keeps this session from training anew. A job the queue does not
    know (ended long ago, or a made-up id) leaves the address."""
    job_id = st.session_state.get("toy_job") or None
    if job_id is None:
        return
    job = job_queue().get(job_id)
    if job is None or job.kind != "toy" or job.done:
        url_state.forget("toy_job")
        return
    st.info(t("toy.other_settings_training"), icon=":material/model_training:")
    if st.button(t("toy.stop_other"), key="toy_stop_other", icon=":material/stop:"):
        job_queue().cancel(job)
        url_state.forget("toy_job")
        st.rerun()


def end_job(job: Job, settings: ToySettings) -> None:
    """Keep an ended job's run under its settings and take the job out of the address."""
    run = run_of(job, settings)
    if run.snapshots:
        keep_run(run)
        url_state.assign({"toy_step": run.last.step})  # an ended run opens on its last snapshot
    if job.state == FAILED:
        st.session_state["_toy_failure"] = job.error
    url_state.forget("toy_job")


# ------------------------------------------------------------------------------------------------ page
with page("toy", FIELDS, model=False):
    st.title(t("toy.title"))
    st.markdown(t("toy.intro"))
    left, middle, right = st.columns(3)
    task_names = {name: t(f"toy.task_{name}") for name in TASKS}  # looked up now, in the page's language
    task = keyed(left.radio, t("toy.task"), TASKS, key="toy_task", format_func=task_names.__getitem__, horizontal=True)
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
        st.header(t("toy.expect"))
        for note in expectations(settings):
            st.markdown(note)
    view_names = {name: t(f"toy.view_{name}") for name in VIEWS}
    view = keyed(buttons.radio, t("toy.view"), VIEWS, key="toy_view", format_func=view_names.__getitem__)
    job = current_job(settings)
    if job is not None and job.done:
        end_job(job, settings)
        job = None
    if job is None:
        other_training(settings)
    run = runs().get(settings)
    failure = st.session_state.pop("_toy_failure", None)
    if failure:
        st.error(t("toy.failed", error=escaped(failure)))
    label = t("toy.train_again") if run is not None else t("toy.train")
    if job is None and buttons.button(label, key="toy_train", type="primary", icon=":material/model_training:"):
        try:
            job = job_queue().submit(owner(), "toy", settings_of(settings))
            url_state.assign({"toy_job": job.id})
        except JobError as error:
            st.warning(t("toy.refused", reason=escaped(error)))
    if job is not None:
        follow(job.id, settings, view)
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
            chosen = keyed(
                st.select_slider, t("toy.shown_step"), steps_shown, key="toy_step", format_func=labels.__getitem__
            )
            shown = steps_shown.index(chosen)
        show_run(run, view, shown, key="")
        probe = {"source": " ".join(run.source_tokens), "output": " ".join(run.output_tokens)}
        st.caption(
            t(
                "toy.probe_caption",
                source=escaped(probe["source"], code=True),
                output=escaped(probe["output"], code=True),
            )
        )
        st.caption(t("toy.held_out_caption", count=settings.held_out_size))
