"""The page block every page of the Streamlit app runs in (:func:`page`): its controls restored from the URL and
written back however the page ends, the sidebar's model, language, palette and presenter controls, and the chosen
model. Choosing and opening the model is :mod:`pages.models`; showing a figure, :mod:`pages.figures`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import NoReturn

import streamlit as st

from pages import url_state
from pages.figures import PALETTE_KEY, PRESENT_KEY, STANDARD_PALETTE, presenter_controls, sidebar_figure_choices
from pages.i18n import LANGUAGE_KEY, t
from pages.models import CHECKPOINT_KEY, selected_checkpoint, sidebar_checkpoint_picker
from pages.navigation import clear_first_paint, through_the_router
from pages.url_state import Field
from transformer.features.i18n import DEFAULT_LANGUAGE, LANGUAGES
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.plots.palettes import PALETTES

# Controls every page has (the sidebar's checkpoint, presenter mode, language, chart colours): part of each page's URL.
COMMON_FIELDS = {
    CHECKPOINT_KEY: Field(None),
    PRESENT_KEY: Field(False, url_state.flag, url_state.dump_flag),
    LANGUAGE_KEY: Field(DEFAULT_LANGUAGE, url_state.choice(LANGUAGES)),
    PALETTE_KEY: Field(STANDARD_PALETTE, url_state.choice(tuple(PALETTES))),
}


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


def section(heading: str, text: str | None = None, formula: str | None = None) -> None:
    """A section of an explaining page: its heading, what it shows in words, and its formula (LaTeX)."""
    st.header(heading)
    if text:
        st.markdown(text)
    if formula:
        st.latex(formula)
