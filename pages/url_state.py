"""Choices that hold while people move around the app, and a URL that reproduces what a page shows.

Streamlit forgets a widget's value at the end of any run that does not draw the widget: a control on a closed tab,
a slider hidden by another choice, a control on another page, a widget of a fragment that reran without it. Each page
therefore declares its controls once, as :class:`Field` s keyed by the widgets' keys, and calls :func:`keep` before
drawing them (at the top of the page and of each fragment) and :func:`save` after:

- on a session's first visit to the page, :func:`keep` takes each value from the URL (anything malformed or out of
  range falls back to the default, never an error);
- every value is also copied into a plain session entry (:data:`KEPT`) that Streamlit never cleans up, and a
  control whose widget state Streamlit has dropped gets its last value back from there before it is drawn again:
  a visitor who leaves a page or a tab and comes back finds every choice as it was;
- :func:`save` writes the page's values to the URL, so a copied link opens the same view.

Widgets under this scheme get their value from ``st.session_state`` only (no ``value=``/``index=``/``default=``),
so there is one source of truth and Streamlit does not warn about two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from pages.choices import shown_key

Parse = Callable[[str], Any]


@dataclass(frozen=True)
class Field:
    """One control: its default, how to read it from URL text (``ValueError`` when malformed), how to write it.

    A ``default`` of None leaves the value to the page (for defaults that depend on the model or the sentence):
    :func:`keep` then sets nothing unless the URL gives a value, and the page calls :func:`ensure`.

    Links name layers and heads as the app shows them, from 1 (:func:`numbered`, :func:`numbered_list`, and the
    ``kind-layer-head`` of :func:`heads`), whatever a page keeps inside; ``legacy`` reads a link written before
    :data:`LINK_VERSION`, which named some of them from 0, so that old links still open the view they showed.
    """

    default: Any
    parse: Parse = str
    dump: Callable[[Any], str] = str
    legacy: Parse | None = None  # how a link written before LINK_VERSION spelled it (layers and heads from 0)


# ------------------------------------------------------------------------------------------------ parsers
def choice(options: Sequence[Any]) -> Parse:
    """One of ``options`` (compared as text, so numbers and strings both work); anything else is malformed."""
    by_text = {str(option): option for option in options}

    def parse(text: str) -> Any:
        if text not in by_text:
            raise ValueError(text)
        return by_text[text]

    return parse


def integer(low: int, high: int) -> Parse:
    """A whole number, clamped into [low, high]."""
    return lambda text: min(max(int(text), low), high)


def number(low: float, high: float) -> Parse:
    """A finite number, clamped into [low, high]."""

    def parse(text: str) -> float:
        value = float(text)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(text)
        return min(max(value, low), high)

    return parse


def flag(text: str) -> bool:
    """``1``/``true``/``on`` or ``0``/``false``/``off``."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "on", "yes"):
        return True
    if lowered in ("0", "false", "off", "no"):
        return False
    raise ValueError(text)


def dump_flag(value: bool) -> str:
    return "1" if value else "0"


def integers(low: int, high: int) -> Parse:
    """A comma-separated list of distinct whole numbers in [low, high], in the given order (empty text: [])."""

    def parse(text: str) -> list[int]:
        values = [int(part) for part in text.split(",") if part.strip()]
        if any(value < low or value > high for value in values):
            raise ValueError(text)
        return list(dict.fromkeys(values))

    return parse


def dump_integers(values: Sequence[int]) -> str:
    return ",".join(str(value) for value in values)


def optional_integer(low: int, high: int) -> Parse:
    """A whole number in [low, high], or ``all`` for None."""

    def parse(text: str) -> int | None:
        if text == "all":
            return None
        value = int(text)
        if not low <= value <= high:
            raise ValueError(text)
        return value

    return parse


def dump_optional(value: Any) -> str:
    return "all" if value is None else str(value)


def numbered(most: int) -> Parse:
    """A layer or head as the app shows it, 1 to ``most`` (clamped), kept from 0."""
    return lambda text: integer(1, most)(text) - 1


def dump_numbered(value: int) -> str:
    return str(value + 1)


def numbered_list(most: int) -> Parse:
    """Layers or heads as the app shows them (``1,3,4``), kept from 0."""
    return lambda text: [value - 1 for value in integers(1, most)(text)]


def dump_numbered_list(values: Sequence[int]) -> str:
    return ",".join(str(value + 1) for value in values)


def heads(text: str) -> list[tuple[int, int]]:
    """Heads of one attention kind as ``layer-head`` pairs from 1 (``2-4,5-1``), kept as 0-based (layer, head)."""
    found = []
    for part in (part.strip() for part in text.split(",")):
        if part:
            layer, head = (int(number) for number in part.split("-"))
            if layer < 1 or head < 1:
                raise ValueError(text)
            found.append((layer - 1, head - 1))
    return list(dict.fromkeys(found))


def dump_heads(values: Sequence[tuple[int, int]]) -> str:
    """``layer-head`` pairs from 1; an old link's single numbers, which need the model's head count to be read as
    pairs, wait until the page has read them (they are left out until then)."""
    return ",".join(f"{value[0] + 1}-{value[1] + 1}" for value in values if isinstance(value, tuple | list))


def text(max_characters: int) -> Parse:
    """Text as given, cut to ``max_characters`` (what a link can carry is bounded anyway)."""
    return lambda value: value[:max_characters]


# ------------------------------------------------------------------------------------------------ state
VERSION_KEY, LINK_VERSION = "v", "2"  # in every link since layers and heads are named from 1 in all of them
KEPT = "_url_state_kept"  # key → last value of every declared control, in the session (not a widget key)
DECLARED = "_url_state_declared"  # key → Field of every control a page declared in this run (app.py empties it)
CARRIED = "_url_state_carried"  # URL entries that belong to no page and stay in the URL of every page (a lesson's)
FRESH = "_url_state_fresh"  # the next page opened reads its controls from the link alone (open_link)
LINKED = "_url_state_linked_"  # + a control's key: the link this visit opened with named its value


def parsed(field: Field, raw: str, old_link: bool) -> Any:
    """A control's value from its URL text: its default when malformed. A link without :data:`LINK_VERSION` is read
    the old way first (where the spelling changed), then the new way (a hand-made link of today's spelling)."""
    for parse in (field.legacy, field.parse) if old_link and field.legacy else (field.parse,):
        try:
            return parse(raw)
        except (ValueError, TypeError):
            continue
    return field.default


def kept() -> dict[str, Any]:
    """The session's last value of every control declared by any page (survives pages, tabs and fragments)."""
    return st.session_state.setdefault(KEPT, {})


def keep(fields: dict[str, Field], page: str) -> None:
    """Before drawing a page's (or a fragment's) widgets: restore them from the URL on the session's first visit to
    the page, remember each current value, and give back the last value of any control Streamlit has forgotten."""
    st.session_state.setdefault(DECLARED, {}).update(fields)
    restored = f"_restored_{page}"
    if not st.session_state.get(restored):
        st.session_state[restored] = True
        fresh = st.session_state.pop(FRESH, False)
        old_link = st.query_params.get(VERSION_KEY) != LINK_VERSION
        for key, field in fields.items():
            raw = st.query_params.get(key)
            if raw is None and fresh:  # a control the link does not name: its default, as in a fresh browser
                st.session_state.pop(key, None)
                kept().pop(key, None)
                value = field.default
            elif raw is None:
                value = kept().get(key, field.default)
            else:
                value = parsed(field, raw, old_link)
                st.session_state[f"{LINKED}{key}"] = True  # the link named it (read once: linked())
            if value is not None:
                st.session_state[key] = value
    remembered = kept()
    for key in fields:
        if key in st.session_state:
            value = st.session_state[key]
            # A value assigned before its widget first existed stays behind under the key, and comes back as the
            # control's value once Streamlit drops the widget's own state (the visitor's later choices lost):
            # removed here, and the current value assigned afresh.
            del st.session_state[key]
        elif key in remembered:
            value = remembered[key]
        else:
            continue
        remembered[key] = value
        st.session_state[key] = value


def linked(key: str) -> bool:
    """Whether the link the page was opened with (a shared link, a lesson's step) named control ``key``; answered
    once per visit."""
    return bool(st.session_state.pop(f"{LINKED}{key}", False))


def tabs(state_key: str, labels: dict[str, str], widget_key: str | None = None) -> dict[str, Any]:
    """``st.tabs`` whose open tab is the control ``state_key`` (a Field holding the tab's name, whatever the language
    of its label): the URL names the open tab, and the tab opens again when the visitor comes back. ``labels``: name
    → label, in order. Returns name → tab; only an open tab's ``.open`` is true, so a page builds just that one.

    A tab strip's own value is the label it shows, so each language has a strip of its own
    (:func:`pages.choices.shown_key`): a label of the language before never reaches this language's strip."""
    widget_key = shown_key(widget_key or f"{state_key}_widget")
    names = list(labels)
    by_label = {label: name for name, label in labels.items()}
    wanted = labels.get(st.session_state.get(state_key), labels[names[0]])
    # Set only when it differs (a link, a page come back to, another language): a value set here is sent back to the
    # browser, and from a run that a quicker key press has already overtaken it would move the tabs back to this
    # run's tab and drop the keyboard's focus.
    if st.session_state.get(widget_key) != wanted:
        st.session_state[widget_key] = wanted

    def chosen() -> None:
        st.session_state[state_key] = by_label.get(st.session_state[widget_key], names[0])

    return dict(zip(names, st.tabs(list(labels.values()), key=widget_key, on_change=chosen), strict=True))


def indices_below(count: int) -> Callable[[Any], bool]:
    """For :func:`ensure`: a multiselect's value of distinct whole numbers in [0, count). Anything else is invalid,
    including text: a multiselect whose options changed under it (another d_model, another model) can hand back its
    old choices as their labels."""
    return lambda chosen: (
        isinstance(chosen, list)
        and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count for i in chosen)
    )


def assign(values: dict[str, Any]) -> None:
    """Set controls as if the visitor had left them so (kept too, so they hold on a page visited before or not):
    how one page opens another on a chosen view."""
    remembered = kept()
    for key, value in values.items():
        st.session_state[key] = value
        remembered[key] = value


def open_link(carried: dict[str, str]) -> None:
    """Before switching to a page with a link's query parameters: that page reads every control from the link as a
    fresh browser would (controls the link does not name take their defaults, not the session's last values), and
    ``carried`` (entries of no page) stays in the URL of every page from now on ({}: none)."""
    for key in [key for key in st.session_state if str(key).startswith("_restored_")]:
        del st.session_state[key]
    st.session_state[FRESH] = True
    carry(carried)


def carry(entries: dict[str, str]) -> None:
    """Keep ``entries`` (belonging to no page) in the URL of every page from now on ({}: none)."""
    st.session_state[CARRIED] = dict(entries)


def carried() -> dict[str, str]:
    """The URL entries that belong to no page (:func:`carry`)."""
    return st.session_state.get(CARRIED, {})


def forget(*keys: str) -> None:
    """Drop controls' values on purpose (their defaults then apply again), unlike Streamlit dropping a widget's."""
    remembered = kept()
    for key in keys:
        st.session_state.pop(key, None)
        remembered.pop(key, None)


def ensure(key: str, default: Any, valid: Callable[[Any], bool] | None = None) -> Any:
    """Set ``key`` to ``default`` unless it holds a value that ``valid`` accepts (any value when None)."""
    if key not in st.session_state or (valid is not None and not valid(st.session_state[key])):
        st.session_state[key] = default
    return st.session_state[key]


def save(fields: dict[str, Field]) -> None:
    """Write the page's current choices to the URL (the ones the page has set, or last set while its control was
    drawn; nothing else) and remember them."""
    remembered = kept()
    for key in fields:
        if key in st.session_state:
            remembered[key] = st.session_state[key]
    st.query_params.from_dict(
        {
            **carried(),
            **{key: url_text(field.dump(remembered[key])) for key, field in fields.items() if key in remembered},
            VERSION_KEY: LINK_VERSION,
        }
    )


def url_text(value: str) -> str:
    """``value`` as a URL can carry it: a lone surrogate (which Python strings may hold) has no UTF-8 form and
    becomes U+FFFD; everything else, invisible and right-to-left controls included, is kept, so that the link opens
    the sentence exactly as typed."""
    if any("\ud800" <= character <= "\udfff" for character in value):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value
