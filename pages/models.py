"""The model a page shows, shared by every page: the checkpoints a visitor may choose and the one gate through which a
named model opens, the model's translator (one queue per model, or a child process), measurements stored beside the
model, the sidebar's model picker, and the translation cache."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import streamlit as st

from pages import url_state
from pages.caching import per_model
from pages.i18n import escaped, t
from pages.page_slots import called_outside_the_slot
from transformer.formats.checkpoint import (
    DEFAULT_CHECKPOINT_NAME,
    REPOSITORY_CHECKPOINTS,
    CheckpointError,
    LoadedCheckpoint,
    list_checkpoints,
    load_checkpoint,
)
from transformer.formats.checkpoint import resolve as resolve_checkpoint
from transformer.formats.hub.families import FAMILIES
from transformer.search.decode import DecodingOptions

if TYPE_CHECKING:
    from transformer.analysis.attention import Translation
    from transformer.analysis.precompute import Measured
    from transformer.serving.translator import Translator


CHECKPOINT_KEY = "checkpoint"
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
    from transformer.formats.hub.families import cached_hub_models

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


# ------------------------------------------------------------------------------------------------ the translation
# The pages that show one sentence's translation (the main page, the step page, What if) share it: the same cache,
# the same decoding choices.
MAX_SOURCE_TOKENS = 96  # beyond this, attention maps stop being readable on a screen


@called_outside_the_slot
@per_model(max_entries=64)
def cached_translation(loaded: LoadedCheckpoint, text: str, options: DecodingOptions) -> Translation:
    """Translations are cached per checkpoint folder, sentence and decoding options; sentences that several
    sessions submit at once are searched together (:class:`~transformer.serving.translator.Translator`). The page
    leaves its slot while its sentence waits and is searched (:mod:`pages.page_slots`), so others can join the
    batch."""
    return shared_translator(loaded).translate(text, options, MAX_SOURCE_TOKENS)
