"""What every page of the Streamlit app shares: the checkpoint it shows, the sidebar controls, and how figures appear.

The loaded model is an ``st.cache_resource`` shared by all sessions and pages, keyed by the checkpoint's name or
path; translations go through one batching queue per checkpoint, and work that changes a model (ablations,
head importance) uses a private copy (:mod:`transformer.serving.translator`), so that sessions never see each other's
switched-off heads. The choice of checkpoint lives in ``st.session_state["checkpoint"]``. A broken or missing
checkpoint becomes an ``st.error`` with the one-line :class:`~transformer.formats.checkpoint.CheckpointError` message
and what to do about it, and the page stops, rather than a traceback.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, NoReturn

import plotly.graph_objects as go
import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.i18n import LANGUAGE_KEY, escaped, language, language_picker, t
from pages.navigation import clear_first_paint, through_the_router
from pages.page_slots import called_outside_the_slot
from pages.url_state import Field
from transformer.features.i18n import DEFAULT_LANGUAGE, LANGUAGES, message
from transformer.formats.checkpoint import (
    DEFAULT_CHECKPOINT_NAME,
    REPOSITORY_CHECKPOINTS,
    CheckpointError,
    LoadedCheckpoint,
    list_checkpoints,
    load_checkpoint,
)
from transformer.formats.checkpoint import resolve as resolve_checkpoint
from transformer.formats.hub import FAMILIES
from transformer.plots.describe import describe_for_page
from transformer.plots.palettes import PALETTES, with_palette
from transformer.plots.style import for_dark, for_projector
from transformer.search.decode import DecodingOptions

if TYPE_CHECKING:
    import numpy as np

    from transformer.analysis.attention import Translation
    from transformer.analysis.precompute import Measured
    from transformer.serving.translator import Translator

CHECKPOINT_KEY = "checkpoint"
PRESENT_KEY = "present"
PALETTE_KEY = "palette"
STANDARD_PALETTE = "standard"  # the colours every figure is built in
# Controls every page has (the sidebar's checkpoint, presenter mode, language, chart colours): part of each page's URL.
COMMON_FIELDS = {
    CHECKPOINT_KEY: Field(None),
    PRESENT_KEY: Field(False, url_state.flag, url_state.dump_flag),
    LANGUAGE_KEY: Field(DEFAULT_LANGUAGE, url_state.choice(LANGUAGES)),
    PALETTE_KEY: Field(STANDARD_PALETTE, url_state.choice(tuple(PALETTES))),
}
# Presenter mode: large type (Streamlit sizes in rem), no sidebar, the page across the screen.
PRESENTER_CSS = """<style>
html { font-size: 24px; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] {
    display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 0.5rem 2.5rem 1rem; }
/* The way out floats in the top corner, and the title is smaller: the first chart starts on the first screen. */
.st-key-leave_present { position: fixed; top: 0.4rem; right: 1rem; z-index: 1000; width: auto !important; }
[data-testid="stMain"] h1 { font-size: 1.8rem; padding: 0.25rem 0 0.5rem; }
</style>"""
FIGURE_FORMAT_KEY = "figure_format"
FIGURE_FORMATS = ("png", "svg")
ENVIRONMENT_VARIABLE = "TRANSFORMER_CHECKPOINT"
MODELS_VARIABLE = "TRANSFORMER_MODELS"  # more model folders every visitor may choose (os.pathsep between them)
OPEN_FOLDERS_VARIABLE = "TRANSFORMER_OPEN_FOLDERS"  # 1: every visitor may open a folder; 0: none may
OPEN_KEY = "open_model"
TRANSLATION_PROCESS_VARIABLE = "TRANSFORMER_TRANSLATION_PROCESS"
# An absolute path in an error message (POSIX or Windows), shortened for a visitor on another machine (for_visitor).
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/])(?:[A-Za-z]:[\\/]|/)[^\s:'\"`,;()<>]*")


def _release_model(loaded: LoadedCheckpoint) -> None:
    """A model leaves the cache: its translation queue goes with it, and the queue's child process ends."""
    loaded.released = True
    translator.clear(loaded, str(loaded.path), id(loaded))


@st.cache_resource(show_spinner=False, max_entries=4, on_release=_release_model)
def get_checkpoint(folder: str) -> LoadedCheckpoint:
    """The checkpoint's model, tokenizer and metadata, loaded once per process (errors are not cached). Pages open
    a model through :func:`open_checkpoint`, which checks that the visitor may and names the folder one way only."""
    return load_checkpoint(folder)


def open_checkpoint(name: str) -> LoadedCheckpoint:
    """The one door through which a page opens a model a visitor named, by a control or by a link (the sidebar, What
    if's *Side by side*, the atlas's *Beside another model*): one the server lists (:func:`listed_checkpoints`) for
    everyone, any other folder or cached hub id only for a visitor who :func:`may_open_folders`. The folder is
    resolved (symlinks followed) before it becomes the cache's key, so every spelling of one folder is one model and
    one translation process. Every failure is a :class:`CheckpointError` whose message names no folder of the
    server to a visitor on another machine (:func:`for_visitor`)."""
    if name not in listed_checkpoints() and not may_open_folders():
        raise CheckpointError(t("common.not_offered"))
    try:
        folder = resolve_checkpoint(name).resolve(strict=True)
    except CheckpointError as error:
        raise CheckpointError(for_visitor(error)) from None
    except (OSError, RuntimeError):  # a link loop, a folder removed meanwhile
        raise CheckpointError(t("common.not_offered" if not may_open_folders() else "common.no_such_folder")) from None
    try:
        return get_checkpoint(str(folder))
    except CheckpointError as error:
        raise CheckpointError(for_visitor(error)) from None


def for_visitor(error: BaseException | str) -> str:
    """An error's first line as this visitor may read it: whole for a browser on the server's own machine; for any
    other, every absolute path of the server shortened as a shipped checkpoint records paths (relative to the
    repository, or the last name: :func:`transformer.formats.runs.portable_path`)."""
    from pages.page_slots import browser_on_this_machine
    from transformer.formats.runs import portable_path

    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    if browser_on_this_machine():
        return line
    return ABSOLUTE_PATH.sub(lambda found: portable_path(found.group()), line)


def error_line(error: BaseException | str) -> str:
    """An error's first line for a Markdown message box: :func:`for_visitor`, then :func:`escaped`."""
    return escaped(for_visitor(error))


@per_model(max_entries=4, resource=True, spinner="Measuring the model's heads (once per model: stored beside it)…")
def measured_heads(loaded: LoadedCheckpoint) -> Measured:
    """The figure pages' measurements of a loaded checkpoint: read from its folder when stored
    there for these weights, otherwise measured and stored (:mod:`transformer.analysis.precompute`)."""
    from transformer.analysis.precompute import (
        measured,  # only the figure pages need it; the main page starts faster without
    )

    return measured(loaded)


@st.cache_resource(show_spinner=False, max_entries=4, on_release=lambda queue: queue.close())
def translator(_loaded: LoadedCheckpoint, name: str, identity: int) -> Translator:
    """The queue in front of a loaded checkpoint's model for translations, one per loaded model and process. Its
    searches run in a child process with its own copy of the model (``transformer/serving/process.py``), so that
    pages render while a search runs; ``TRANSFORMER_TRANSLATION_PROCESS=0`` keeps them in the server's process."""
    from pages.page_slots import browser_on_this_machine, cores, page_slots
    from transformer.serving.translator import Translator

    separate = os.environ.get(TRANSLATION_PROCESS_VARIABLE, "1").strip() not in ("0", "false", "no", "off")
    slots = page_slots()

    def search_threads() -> int:
        # Every core while no page runs and the browser is elsewhere; otherwise one core is left to the pages (with
        # every core searching beside them, a class at once waited longer: docs/reliability.md) or to the browser,
        # which draws the page while the search runs (a visitor's search took 100 instead of 60 ms: docs/speed.md).
        if slots.running == 0 and not browser_on_this_machine():
            return cores()
        return max(1, cores() - 1)

    return Translator(_loaded, around_batch=slots.exclusive, separate_process=separate, process_threads=search_threads)


def shared_translator(loaded: LoadedCheckpoint) -> Translator:
    """The translation queue of a loaded model. A model the cache has let go (a session still holding it finishes
    its run) gets a queue of its own that translates in the server's process: no child is started for a model no
    longer kept."""
    if loaded.released:
        from transformer.serving.translator import Translator

        return Translator(loaded)
    return translator(loaded, str(loaded.path), id(loaded))


@per_model(max_entries=4, resource=True)
def _stored_heads(loaded: LoadedCheckpoint, modified: float) -> Measured | None:
    from transformer.analysis.precompute import read

    return read(loaded)


def stored_heads(loaded: LoadedCheckpoint) -> Measured | None:
    """The stored measurements of a loaded checkpoint, without measuring (None when there are none): read and
    checked against the weights once per version of the file, not on every session's first run."""
    from transformer.analysis.precompute import PRECOMPUTED_FILE

    path = loaded.store / PRECOMPUTED_FILE
    return _stored_heads(loaded, path.stat().st_mtime if path.is_file() else 0.0)


@per_model(max_entries=16, resource=True)
def _stored_beside(loaded: LoadedCheckpoint, file: str, modified: float) -> dict | None:
    from transformer.formats.checkpoint import read_beside

    return read_beside(loaded, file)


def stored_beside(loaded: LoadedCheckpoint, file: str) -> dict | None:
    """A measurement stored beside these weights (``alignment.json``, ``faithfulness.json``; None without it), read
    and checked against the weights once per version of the file."""
    path = loaded.store / file
    return _stored_beside(loaded, file, path.stat().st_mtime if path.is_file() else 0.0)


def available_checkpoints() -> list[str]:
    """Checkpoints to choose from: :func:`listed_checkpoints`, and a folder this visitor opened
    (:func:`may_open_folders`)."""
    names = listed_checkpoints()
    opened = st.session_state.get(CHECKPOINT_KEY)
    return [*names, *([opened] if opened and opened not in names and may_open_folders() else [])]


def listed_checkpoints() -> list[str]:
    """The models the server offers every visitor: $TRANSFORMER_CHECKPOINT first when set, then the repository's
    ``checkpoints/`` folders (the default one first), the folders $TRANSFORMER_MODELS lists and the Marian and
    M2M100/NLLB models of the local Hugging Face cache. A name from the environment that matches no folder is kept,
    so that choosing it explains what is wrong instead of silently showing another model."""
    names = [path.name for path in list_checkpoints()]
    names.sort(key=lambda name: name != DEFAULT_CHECKPOINT_NAME)  # stable: the rest stay alphabetical
    from_environment = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if from_environment:
        names = [from_environment, *(name for name in names if name != from_environment)]
    listed = [folder.strip() for folder in os.environ.get(MODELS_VARIABLE, "").split(os.pathsep) if folder.strip()]
    return names + [name for name in dict.fromkeys([*listed, *hub_models_in_cache()]) if name not in names]


@st.cache_data(ttl=60, show_spinner=False)
def hub_models_in_cache() -> list[str]:
    """The local Hugging Face cache's Marian and M2M100/NLLB models, looked up once a minute rather than on every
    page run (it reads each snapshot's config.json)."""
    from transformer.formats.hub import cached_hub_models

    return cached_hub_models()


def may_open_folders() -> bool:
    """Whether this visitor may open any folder of the server's disk as a model: only a browser on the server's own
    machine (a laptop's ``streamlit run``), or every visitor where $TRANSFORMER_OPEN_FOLDERS=1; a class's visitors
    choose among the listed models."""
    from pages.page_slots import browser_on_this_machine

    setting = os.environ.get(OPEN_FOLDERS_VARIABLE, "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        return False
    return setting in ("1", "true", "yes", "on") or browser_on_this_machine()


def _open_folder() -> None:
    typed = st.session_state.get(OPEN_KEY, "").strip()
    if typed:
        st.session_state[CHECKPOINT_KEY] = typed
        st.session_state[OPEN_KEY] = ""


def model_name(loaded: LoadedCheckpoint) -> str:
    """A model's short name: its hub id or folder name for a Hugging Face model, else its checkpoint folder's."""
    return loaded.hub["name"] if loaded.hub else loaded.path.name


def model_summary(loaded: LoadedCheckpoint) -> str:
    """One line on what a model is: family, language pair, layers and heads (read from its folder)."""
    from pages.i18n import language_label

    config, hub = loaded.config, loaded.hub
    family = (
        t("common.family_hub", family=FAMILIES[hub["family"]], name=hub["name"]) if hub else t("common.family_native")
    )
    return t(
        "common.model_summary",
        family=family,
        source=language_label(config.source_language),
        target=language_label(config.target_language),
        encoder=config.encoder_layers,
        decoder=config.decoder_layers,
        heads=config.num_heads,
    )


def sidebar_checkpoint_picker() -> str | None:
    """A sidebar selectbox (key ``"checkpoint"``) over :func:`available_checkpoints`; returns the choice. Below it,
    where :func:`may_open_folders`, a box to open another folder or a hub id held in the local cache."""
    options = available_checkpoints()
    chosen = st.session_state.get(CHECKPOINT_KEY)
    if chosen in options and chosen != options[0]:
        # Another model that does not open (a folder typed or in a link, a broken listed one): say why, and go on
        # with the default model rather than stopping the page.
        try:
            with st.spinner(t("common.loading")):
                open_checkpoint(chosen)
        except CheckpointError as error:
            st.sidebar.error(t("common.cannot_load", name=escaped(chosen), message=error_line(error)))
            st.session_state[CHECKPOINT_KEY] = options[0]
    if st.session_state.get(CHECKPOINT_KEY) not in options:
        url_state.forget(CHECKPOINT_KEY)
    elif CHECKPOINT_KEY in st.session_state:
        # Streamlit forgets a widget's value on a page that does not draw it yet; re-assigning it before the
        # widget is drawn carries the choice from one page to the next (url_state.keep does the same).
        st.session_state[CHECKPOINT_KEY] = st.session_state[CHECKPOINT_KEY]
    chosen = st.sidebar.selectbox(
        t("common.checkpoint"),
        options,
        key=CHECKPOINT_KEY,
        help=t("common.checkpoint_help", folder=REPOSITORY_CHECKPOINTS, variable=ENVIRONMENT_VARIABLE),
        placeholder=t("common.no_checkpoint_found"),
    )
    if may_open_folders():
        st.sidebar.text_input(
            t("common.open_folder"),
            key=OPEN_KEY,
            on_change=_open_folder,
            help=t("common.open_folder_help"),
            placeholder="Helsinki-NLP/opus-mt-en-de",
        )
    return chosen


def selected_checkpoint() -> LoadedCheckpoint | None:
    """The chosen checkpoint (default: the first available), or None after showing why it cannot be loaded."""
    options = available_checkpoints()
    name = st.session_state.get(CHECKPOINT_KEY) or (options[0] if options else None)
    if name is None:
        st.error(
            t("common.no_checkpoint", folder=REPOSITORY_CHECKPOINTS, variable=ENVIRONMENT_VARIABLE)
            + "\n\n"
            + t("common.what_to_do", variable=ENVIRONMENT_VARIABLE)
        )
        return None
    try:
        with st.spinner(t("common.loading")):
            loaded = open_checkpoint(name)
    except CheckpointError as error:
        cannot = t("common.cannot_load", name=escaped(name), message=error_line(error))
        st.error(cannot + "\n\n" + t("common.what_to_do", variable=ENVIRONMENT_VARIABLE))
        return None
    st.sidebar.caption(model_summary(loaded))
    return loaded


def _remember_figure_format() -> None:
    st.session_state[FIGURE_FORMAT_KEY] = st.session_state[f"_{FIGURE_FORMAT_KEY}_choice"]


def sidebar_figure_choices() -> None:
    """The sidebar's choices for every figure: its colours (the standard palette, or one that people with any
    of the common colour-vision deficiencies tell apart: :mod:`transformer.plots.palettes`; ``palette=`` in the
    URL) and the format the camera button downloads: PNG (twice the screen resolution) or SVG (vector). The format
    is stored outside the widget's own state so that it holds on every page."""
    labels = {name: t(f"common.palette_{name}") for name in PALETTES}
    if st.session_state.get(PALETTE_KEY, STANDARD_PALETTE) not in PALETTES:
        st.session_state[PALETTE_KEY] = chosen_palette()  # a label met by a fragment's run (chosen_palette)
    st.sidebar.selectbox(
        t("common.palette"),
        tuple(PALETTES),
        key=PALETTE_KEY,
        format_func=labels.get,
        help=t("common.palette_help"),
    )
    current = st.session_state.setdefault(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    st.sidebar.radio(
        t("common.figure_format"),
        FIGURE_FORMATS,
        index=FIGURE_FORMATS.index(current),
        key=f"_{FIGURE_FORMAT_KEY}_choice",
        format_func=str.upper,
        horizontal=True,
        on_change=_remember_figure_format,
        help=t("common.figure_format_help"),
    )


def palette_named(shown: str) -> str:
    """The palette whose label, in any of the app's languages, is ``shown``; the standard one if none is."""
    for code in LANGUAGES:
        for name in PALETTES:
            if message(code, f"common.palette_{name}") == shown:
                return name
    return STANDARD_PALETTE


def chosen_palette() -> str:
    """The sidebar's chart palette, by name. Streamlit keeps a select box's choice as the label it shows: a fragment
    that reruns on a timer (the tiny model's training, every second) just as the visitor changes the language can
    meet the label in the language before, which is read back to its palette here."""
    chosen = st.session_state.get(PALETTE_KEY, STANDARD_PALETTE)
    return chosen if chosen in PALETTES else palette_named(chosen)


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT_KEY))


def _stop_presenting() -> None:
    st.session_state[PRESENT_KEY] = False


def presenter_controls() -> None:
    """The sidebar's interface language and presenter-mode toggle (also ``lang=ko``, ``present=1`` in the URL);
    while presenting, the page's large type without the sidebar, and a button that leaves the mode (the sidebar,
    and so the toggle, is hidden)."""
    language_picker()
    st.sidebar.toggle(t("common.present"), key=PRESENT_KEY, help=t("common.present_help"))
    if presenting():
        st.html(PRESENTER_CSS)
        st.button(
            t("common.leave_present"),
            on_click=_stop_presenting,
            icon=":material/close_fullscreen:",
            key="leave_present",
        )


def show_figure(
    fig: go.Figure, key: str, filename: str | None = None, on_select: Callable[[], None] | None = None
) -> None:
    """Show a plotly figure across the page with a download button in both formats, without server-side rendering.

    Plotly draws images in the browser (plotly.js ``toImage``), so no image library such as kaleido is needed; but
    its modebar has a single camera button, and the configuration reaches the browser as JSON, so a second,
    scripted SVG button cannot be added. The camera button therefore downloads the format chosen with
    :func:`sidebar_figure_choices` (PNG by default), named ``filename`` (default: ``key``).

    ``on_select``: called when the visitor clicks a point of the figure (its selection is then in
    ``st.session_state[key].selection``); dragging still zooms.
    """
    image_format = st.session_state.get(FIGURE_FORMAT_KEY, FIGURE_FORMATS[0])
    with_palette(fig, chosen_palette())
    if st.context.theme.type == "dark":  # the visitor's system (or Streamlit's settings) chose the dark theme
        for_dark(fig)
    if presenting():
        fig = for_projector(fig)
    if fig.layout.title.text:
        # The title starts below the chart's toolbar (top right, ~30 px), which on a phone spans the whole width.
        # Whole objects are assigned: update_layout's path parsing cost as much as building the figure.
        title, margin = fig.layout.title.to_plotly_json(), fig.layout.margin.to_plotly_json()
        fig.layout.title = {**title, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 36}}
        fig.layout.margin = {**margin, "t": margin.get("t", 80) + 30}
    if on_select is not None:
        fig.layout.dragmode = "zoom"  # Streamlit would make it "pan" for a chart whose points can be clicked
    st.plotly_chart(
        fig,
        width="stretch",
        key=key,
        **({"on_select": on_select, "selection_mode": "points"} if on_select else {}),
        config={
            "displaylogo": False,
            "toImageButtonOptions": {
                "format": image_format,
                "filename": filename or key,
                "scale": 2 if image_format == "png" else 1,
            },
        },
    )
    # The chart in words for a screen reader (and anyone): what it shows and its strongest links or values, then
    # its data as tables on request (transformer/plots/describe.py).
    described = describe_for_page(fig, language())
    st.caption(escaped(described.summary))
    if described.tables:
        with st.expander(t("common.figure_data")):
            for title, table in described.tables:
                st.markdown(f"**{escaped(title)}**")
                # A table a screen reader can walk cell by cell (HTML, with headers) when it is small enough to
                # read; a larger one (every head of a long sentence) in Streamlit's scrolling grid.
                if table.size <= MOST_HTML_TABLE_CELLS:
                    st.table(table, hide_index=True)
                elif table.size <= MOST_TABLE_CELLS:
                    st.dataframe(table, hide_index=True)
                else:  # every head of a long sentence: megabytes on every run
                    st.caption(t("common.figure_data_too_large", rows=len(table), columns=len(table.columns)))


MOST_HTML_TABLE_CELLS = 2_000
MOST_TABLE_CELLS = 40_000


class _Leave(Exception):
    """Ends a page's run early, through its :func:`page` block (:func:`leave_page`)."""


@contextmanager
def page(
    name: str,
    fields: dict[str, Field] | None = None,
    model: bool = True,
    sidebar: Callable[[], None] | None = None,
) -> Iterator[LoadedCheckpoint | None]:
    """A page's run, as a block: its controls restored from the URL and kept (``fields``, see :mod:`pages.url_state`;
    ``name``: the page's, for what it keeps), the sidebar's pickers and the chosen checkpoint (the page stops, saying
    why, when it cannot load; ``model=False``: a page that shows none, and gets None). ``sidebar`` draws the page's
    own sidebar controls, below the model's. However the block ends — its last line or :func:`leave_page` — the
    page's controls are written to the URL: a copied link opens this view."""
    through_the_router()
    fields = {**COMMON_FIELDS, **(fields or {})}
    url_state.keep(fields, name)
    url_state.save(fields)
    if model:
        st.sidebar.header(t("common.model"))
        sidebar_checkpoint_picker()
    if sidebar is not None:
        with st.sidebar:
            sidebar()
    sidebar_figure_choices()
    presenter_controls()
    loaded = selected_checkpoint() if model else None
    clear_first_paint()  # the page draws itself from here
    if model and loaded is None:
        st.stop()
    with suppress(_Leave):
        yield loaded
    url_state.save(fields)


@contextmanager
def fragment_of(name: str, fields: dict[str, Field], keys: Iterable[str]) -> Iterator[None]:
    """A fragment's run inside page ``name``'s :func:`page` block (``fields``: the page's), for the reruns that do
    not pass through the page: the controls ``keys`` the fragment draws restored and kept, and however it ends (its
    last line or :func:`leave_page`) the page's controls written to the URL."""
    fields = {**COMMON_FIELDS, **fields}
    url_state.keep({key: fields[key] for key in keys}, name)
    with suppress(_Leave):
        yield
    url_state.save(fields)


def leave_page() -> NoReturn:
    """End the page's run here (after a message saying why), its controls saved to the URL (:func:`page`)."""
    raise _Leave


# ------------------------------------------------------------------------------------------------ the translation
# The pages that show one sentence's translation (the main page, the step page, What if) share it: the same cache,
# the same decoding choices, the same download formats.
MAX_SOURCE_TOKENS = 96  # beyond this, attention maps stop being readable on a screen


@called_outside_the_slot
@per_model(max_entries=64)
def cached_translation(loaded: LoadedCheckpoint, text: str, options: DecodingOptions) -> Translation:
    """Translations are cached per checkpoint folder, sentence and decoding options; sentences that several
    sessions submit at once are searched together (:class:`~transformer.serving.translator.Translator`). The page
    leaves its slot while its sentence waits and is searched (:mod:`pages.page_slots`), so others can join the
    batch."""
    return shared_translator(loaded).translate(text, options, MAX_SOURCE_TOKENS)


def section(heading: str, text: str | None = None, formula: str | None = None) -> None:
    """A section of an explaining page: its heading, what it shows in words, and its formula (LaTeX)."""
    st.header(heading)
    if text:
        st.markdown(text)
    if formula:
        st.latex(formula)


def matrix_csv(matrix: np.ndarray, query_tokens: list[str], key_tokens: list[str]) -> str:
    """A matrix with query tokens as the first column and key tokens as the header (CSV-quoted)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query \\ key", *key_tokens])
    for token, row in zip(query_tokens, matrix, strict=True):
        writer.writerow([token, *(f"{value:.6f}" for value in row)])
    return buffer.getvalue()


def sentence_slug(text: str) -> str:
    """The first six words of a sentence as a file name's start ("the-children-are-playing-in-the")."""
    words = re.findall(r"[a-z0-9]+", text.replace("▁", " ").lower())
    return "-".join(words[:6]) or "sentence"
