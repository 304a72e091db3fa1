"""Lessons from the command line (:mod:`transformer.features.lessons`).

    python -m transformer lesson check FILE_OR_NAME                 # is the lesson file playable?
    python -m transformer lesson export NAME --out FILE.html [--language ko] [--checkpoint DIR] [--no-explorer]

``export`` writes the lesson as one self-contained web page (:mod:`transformer.plots.lesson`): every step's text and
question, and its figures computed now from the model for the step's sentence and controls, with plotly's
JavaScript inline. The file opens from disk or any static web server with no Python and no network. Views that
need the live app (training the toy model, the beam tree, a head's card…) are named in the file instead. The model
itself comes too (the one-file explorer of :mod:`transformer.features.web`, about 44 MB; ``--no-explorer`` leaves it
out): every step that shows a sentence's attention heads gets *Try your own sentence*, which translates what the student
types and opens the step's head on it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from transformer.analysis.alignment_choice import default_method
from transformer.analysis.attention import KINDS, merged_view, translate_with_attention
from transformer.analysis.steps import STEPS, head_steps, scaling_demo
from transformer.cli import command_parser, fail, load_or_report
from transformer.features.i18n import DEFAULT_LANGUAGE, LANGUAGES, message
from transformer.features.lessons import DEFAULT_SENTENCE, Lesson, LessonError, Step, read_lesson
from transformer.features.web import WebExportError, embeddable, explorer_html
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.formats.runs import read_metrics, training_log
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import attention as plot_attention
from transformer.plots import complexity as plot_complexity
from transformer.plots import grid as plot_grid
from transformer.plots import positional as plot_positional
from transformer.plots import scaling as plot_scaling
from transformer.plots import steps as plot_steps
from transformer.plots import training as plot_training
from transformer.plots.lesson import lesson_html
from transformer.plots.paper import paper_figures

# A page's view in the file: (checkpoint, the step's URL state, language) → plotly figures (none: not in the file).
View = Callable[[LoadedCheckpoint, dict[str, str], str], list]


def _number(state: dict[str, str], key: str, default: int) -> int:
    try:
        return int(state.get(key, default))
    except ValueError:
        return default


def _kind(state: dict[str, str], key: str) -> str:
    kind = state.get(key, "encoder")
    return kind if kind in KINDS else "encoder"


def _head_title(language: str, kind: str, layer: int, head: int) -> str:
    return (
        f"{message(language, f'kind.{kind}')}, {message(language, 'explore.layer', layer=layer + 1)}, "
        f"{message(language, 'explore.head', head=head + 1)}"
    )


def explore_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Translate and explore*: the Heads view (one head) or the Model view (every head of one kind)."""
    translation = translate_with_attention(loaded.model, loaded.tokenizer, state.get("text", DEFAULT_SENTENCE))
    maps = translation.maps
    if state.get("merge", "1") != "0":  # words, as the main page shows them by default
        maps = merged_view(maps, by_prediction=True)
    view = state.get("view", "Heads")
    if view == "Model view":
        kind = _kind(state, "grid_kind")
        queries, keys = maps.tokens(kind)
        title = message(language, f"kind.{kind}")
        return [
            plot_grid.model_view_grid(maps.weights(kind), queries, keys, title, kind == "decoder", language=language)
        ]
    if view != "Heads":
        return []
    kind = _kind(state, "kind")
    layer = min(max(_number(state, "layer", 1), 1), maps.num_layers) - 1
    head = min(max(_number(state, "head", 1), 1), maps.num_heads) - 1
    queries, keys = maps.tokens(kind)
    if kind != "encoder":
        queries = [f"→{token}" for token in maps.predicted_tokens]
    return [
        plot_attention.attention_heatmap(
            maps.matrix(kind, layer, head),
            queries,
            keys,
            _head_title(language, kind, layer, head),
            causal=kind == "decoder",
            language=language,
        )
    ]


def steps_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Attention, step by step*: one step of one head, the √d_k demonstration, or all heads of a layer."""
    tab = state.get("steps_tab", "steps")
    if tab == "scaling":
        d_k = _number(state, "steps_dk", 64)
        d_k = d_k if d_k in plot_scaling.WIDTHS else 64
        curve = [scaling_demo(width) for width in plot_scaling.WIDTHS]
        return [plot_scaling.scaling_figure(scaling_demo(d_k), curve, language)]
    if tab not in ("steps", "multihead"):
        return []
    translation = translate_with_attention(loaded.model, loaded.tokenizer, state.get("steps_text", DEFAULT_SENTENCE))
    kind = _kind(state, "steps_kind")
    config = loaded.config
    layers = config.encoder_layers if kind == "encoder" else config.decoder_layers
    layer = min(max(_number(state, "steps_layer", 1), 1), layers) - 1
    head = min(max(_number(state, "steps_head", 1), 1), config.num_heads) - 1
    steps = head_steps(
        loaded.model, loaded.tokenizer, translation.source_ids, translation.output_ids, kind, layer, head
    )
    query = max(0, _number(state, "steps_query", 0))
    if tab == "multihead":
        weights = translation.maps.weights(kind)[layer]
        return [plot_steps.multihead_figure(weights, steps, min(query, weights.shape[1] - 1), language)]
    number = min(max(_number(state, "steps_step", 1), 1), len(STEPS))
    query = min(query, len(steps.query_tokens) - 1)
    return [plot_steps.step_figure(steps, STEPS[number - 1].key, query, language)]


def positional_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Positional encoding*: the sinusoid table."""
    positions = min(max(_number(state, "pe_positions", 100), 10), 512)
    d_model = _number(state, "pe_d_model", loaded.config.d_model)
    d_model = d_model if d_model % 2 == 0 and 16 <= d_model <= 1024 else loaded.config.d_model
    table = sinusoidal_positional_encoding(positions, d_model).numpy()
    return [plot_positional.positional_encoding_heatmap(table, language)]


def figures_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Paper figures*: Figures 3, 4 and 5 on the paper's layer."""
    return list(paper_figures(loaded)[0].values())


def training_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Model and training*: the training curves of the checkpoint's own log."""
    log = training_log(loaded.path)
    records = read_metrics(log) if log is not None else []
    return [plot_training.training_curves(records, language)] if records else []


def why_view(loaded: LoadedCheckpoint, state: dict[str, str], language: str) -> list:
    """*Why self-attention*: the path between the step's two pieces through each kind of layer."""
    tokenizer = loaded.tokenizer
    pieces = readable_pieces(tokenizer.pieces(tokenizer.encode(state.get("why_text", DEFAULT_SENTENCE))))
    pieces = pieces[: loaded.config.max_positions]
    if len(pieces) < 2:
        return []
    first = min(max(_number(state, "why_first", 0), 0), len(pieces) - 1)
    second = min(max(_number(state, "why_second", len(pieces) - 1), 0), len(pieces) - 1)
    k, r = _number(state, "why_k", 3), _number(state, "why_r", 4)
    return [plot_complexity.path_figure(pieces, first, second, max(k, 2), max(r, 2), language)]


VIEWS: dict[str, View] = {
    "explore": explore_view,
    "step_by_step": steps_view,
    "positional_encoding": positional_view,
    "paper_figures": figures_view,
    "model_and_training": training_view,
    "why_self_attention": why_view,
}


def step_figures(loaded: LoadedCheckpoint, step: Step, language: str) -> tuple[list, str | None]:
    """A step's figures, and a note naming the app's page where the file cannot show the view."""
    view = VIEWS.get(step.page)
    figures = [] if view is None else view(loaded, step.state, language)
    page = message(language, f"lesson.page.{step.page}")
    return figures, None if figures else message(language, "lesson.in_the_app", page=page)


def explorer_view(step: Step) -> dict | None:
    """The sentence, attention kind, layer and head (from 1) a step opens the explorer on; None for a step whose view
    is not one sentence's attention heads."""
    state = step.state
    if step.page == "explore" and state.get("view", "Heads") in ("Heads", "Model view"):
        key = "kind" if state.get("view", "Heads") == "Heads" else "grid_kind"
        return {
            "text": state.get("text", DEFAULT_SENTENCE),
            "kind": _kind(state, key),
            "layer": _number(state, "layer", 1),
            "head": _number(state, "head", 1),
        }
    if step.page == "step_by_step" and state.get("steps_tab", "steps") in ("steps", "multihead"):
        return {
            "text": state.get("steps_text", DEFAULT_SENTENCE),
            "kind": _kind(state, "steps_kind"),
            "layer": _number(state, "steps_layer", 1),
            "head": _number(state, "steps_head", 1),
        }
    return None


def export(
    lesson: Lesson, loaded: LoadedCheckpoint, out: Path, language: str = DEFAULT_LANGUAGE, explorer: bool = True
) -> int:
    """Write ``lesson`` as one web page to ``out`` (with the one-file explorer inside unless ``explorer`` is False);
    returns the number of figures written."""
    figures, notes = [], []
    for step in lesson.steps:
        step_figures_, note = step_figures(loaded, step, language)
        figures.append(step_figures_)
        notes.append(note)
    tries = [explorer_view(step) for step in lesson.steps]
    embedded = None
    if explorer and any(tries):
        embedded = embeddable(explorer_html(loaded, language, default_method(loaded).name))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(lesson_html(lesson, figures, notes, language, embedded, tries), encoding="utf-8")
    return sum(len(f) for f in figures)


def parser() -> argparse.ArgumentParser:
    parse = command_parser("lesson", __doc__)
    commands = parse.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="read a lesson file and say what is wrong with it, step by step")
    check.add_argument("lesson", help="a lesson file, or the name of a lesson in lessons/")
    out = commands.add_parser("export", help="write a lesson as one web page that opens with nothing installed")
    out.add_argument("lesson", help="a lesson file, or the name of a lesson in lessons/")
    out.add_argument("--out", required=True, type=Path, help="the HTML file to write")
    out.add_argument("--language", choices=sorted(LANGUAGES), default=DEFAULT_LANGUAGE, help="the page's language")
    out.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    out.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    out.add_argument(
        "--no-explorer",
        dest="explorer",
        action="store_false",
        help="leave the model out (a smaller file; the steps keep their figures but cannot take a new sentence)",
    )
    return parse


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    try:
        lesson = read_lesson(arguments.lesson)
    except LessonError as error:
        return fail(error)
    if arguments.command == "check":
        pages = ", ".join(dict.fromkeys(step.page for step in lesson.steps))
        print(f"{lesson.name}: {len(lesson.steps)} steps, on the pages {pages}")
        return 0
    loaded = load_or_report(arguments.checkpoint, threads=arguments.threads)
    if loaded is None:
        return 1
    try:
        count = export(lesson, loaded, arguments.out, arguments.language, arguments.explorer)
    except WebExportError as error:
        return fail(f"{error} (--no-explorer writes the lesson without the model)")
    size = arguments.out.stat().st_size / 1e6
    print(f"wrote {arguments.out}: {len(lesson.steps)} steps, {count} figures, {size:.1f} MB")
    return 0
