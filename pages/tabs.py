"""A page's tabs, each a module that owns its controls: a :class:`Tab` names itself in the URL, says which message is
its label, lists its fields (:class:`pages.url_state.Field`: restored from a link, kept while the visitor goes
elsewhere, written back to the URL) and draws itself from what the page hands every tab.

A page lists its tabs once, ``TABS = (heads.TAB, grid.TAB, …)``; its URL fields, the controls a fragment restores
and the tab strip all come from that list, so adding a tab is one module and one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pages import url_state
from pages.i18n import t
from pages.url_state import Field


@dataclass(frozen=True)
class Tab:
    name: str  # in the URL and the session, whatever the language: "Heads", "beam"
    label: str  # the message key of the name the tab strip shows
    render: Callable[[Any], None]  # draws the tab from the page's context (what every tab of the page is handed)
    fields: Mapping[str, Field] = field(default_factory=dict)  # the controls it owns


def fields_of(tabs: Iterable[Tab]) -> dict[str, Field]:
    """Every tab's fields, in the tabs' order; two tabs may not own the same control."""
    found: dict[str, Field] = {}
    for tab in tabs:
        shared = found.keys() & tab.fields.keys()
        if shared:
            raise ValueError(f"tab {tab.name!r} names controls another tab owns: {sorted(shared)}")
        found.update(tab.fields)
    return found


def show(tabs: Iterable[Tab], state_key: str, widget_key: str, context: Any) -> None:
    """The tab strip (the open tab is the control ``state_key``: :func:`pages.url_state.tabs`) with only the open
    tab drawn, from ``context``."""
    tabs = list(tabs)
    by_name = {tab.name: tab for tab in tabs}
    labels = {tab.name: t(tab.label) for tab in tabs}  # looked up now, in the chosen language
    for name, strip in url_state.tabs(state_key, labels, widget_key).items():
        if strip.open:
            with strip:
                by_name[name].render(context)


def choice(tabs: Iterable[Tab]) -> Field:
    """The field of the open tab's name (the first tab by default)."""
    names = [tab.name for tab in tabs]
    return Field(names[0], url_state.choice(names))
