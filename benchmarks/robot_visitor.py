"""A robot visitor: seeded random journeys through the app in Chromium, checking after every action that nothing
broke and that no choice was lost.

It starts ``streamlit run app.py`` (or uses ``--origin``), opens Debian's Chromium through playwright and, for
``--actions`` steps, does what a visitor does: picks a page in the sidebar, opens a tab, sets a control to a random
valid value (select boxes, radios, toggles, sliders, multiselects, segmented controls, buttons), types a sentence
from a list that includes hostile and non-English text and translates it, goes back or forward in the browser's
history, reloads, or opens the current URL in a fresh browser. After every action it checks:

- **no error**: no exception box or "This app has encountered an error" page, no uncaught script error, and no
  traceback in the server's log;
- **no lost choice**: every keyed control it saw on a page or tab shows the same value when it comes back there
  (after another page, another tab, back/forward or a reload), until it changes it itself;
- **links reproduce the view**: the URL opened in a fresh browser shows the same open tab and the same values in
  every control the two share.

With ``--keyboard`` it is a visitor without a mouse: it reaches every control, tab and sidebar link by pressing Tab
from the top of the page (Shift+Tab to step back onto a multiselect's chosen items), and uses it with keys only:
Space toggles a switch, arrows open a select box and move through its options (Enter chooses, Escape closes), move a
slider, a number and a radio's choice and switch tabs, Enter presses a button or follows a link, and sentences are
typed. Going back or forward, reloading and opening a link in a fresh browser stay as they are (the browser's own,
not the page's). On top of the checks above, every keyboard action checks:

- **reachable**: the control it means to use takes the focus within ``KEYBOARD_TAB_LIMIT`` Tab presses from the top
  of the page ("not reachable by keyboard");
- **operable**: its keys change the control's value when they should ("keyboard could not change");
- **focus visible**: while it has the focus, something visible marks it that is not there without the focus: an
  outline, a box shadow, or a border or background colour of the control or of the visible parts of its Streamlit
  wrapper ("no visible focus"; once per control and page).

Every violation is printed with the actions that led to it (and written to ``--report`` as JSON). Exit status 1
when there was any::

    python benchmarks/robot_visitor.py --actions 150 --seed 1
    python benchmarks/robot_visitor.py --actions 2000 --seed 7 --pages explore what_if
    python benchmarks/robot_visitor.py --keyboard --actions 60 --seed 3
    python benchmarks/robot_visitor.py --actions 500 --seed 1208 --other-shape   # a 2-layer model to open beside
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

REPOSITORY = Path(__file__).resolve().parent.parent
if str(REPOSITORY) not in sys.path:  # run as a script: benchmarks/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS, serving  # noqa: E402

VIEWPORT = {"width": 1280, "height": 800}
# The pages whose sentence box follows the visitor (pages.sentence.follow_sentence), and that box's key on each.
SENTENCE_BOXES = {
    "explore": "text",
    "what_if": "wi_text",
    "step_by_step": "steps_text",
    "why_self_attention": "why_text",
}
SENTENCE_PAGES = tuple(SENTENCE_BOXES)
# URL path → page name as the robot reports it ("explore" is the app's default page).
PAGES = {
    "": "explore",
    "lessons": "lessons",
    "step_by_step": "step_by_step",
    "paper_figures": "paper_figures",
    "head_discovery": "head_discovery",
    "head_atlas": "head_atlas",
    "what_if": "what_if",
    "positional_encoding": "positional_encoding",
    "toy_model": "toy_model",
    "why_self_attention": "why_self_attention",
    "model_and_training": "model_and_training",
}
SENTENCES = [
    "The children are playing in the park.",
    "My brother lives in Berlin and works as a doctor.",
    "Can you tell me where the train station is?",
    'Teh weather is realy nice todya 😀 and 2 < 3 > 1 & "quotes".',
    "</script><img src=x onerror=alert(1)>",
    "Die Katze schläft auf dem Sofa.",
    "안녕하세요, 만나서 반갑습니다.",
    "   ",
    "a" * 600,
    "The Law will never be perfect, but its application should be just.",
    # a translator's 41-word news sentence (long: the pages that follow it must draw every piece)
    "The central bank raised interest rates again on Thursday, a move that analysts said would cool the housing "
    "market but could also slow growth in a region where many families already struggle to pay their rent each month.",
    "Ünïcödé ﬁ ligatures ‮ right-to-left ‬ and\u200bzero width.",
]
# Buttons the robot does not press: downloads (they leave the page alone) and measurements that take minutes on
# two cores (every head over the dev sample, the head atlas of a checkpoint that has none stored).
SKIPPED_BUTTONS = re.compile(
    r"download|herunterladen|다운로드|measure every|모든 헤드|measure here|여기서|build the index|색인 만들기",
    re.IGNORECASE,
)
# Controls every page shares (pages/common.py COMMON_FIELDS shown in the sidebar): changed on one page, changed on all.
APP_WIDE = ("palette",)
SETTLE_TIMEOUT_MS = 120_000
ACTION_TIMEOUT_MS = 8_000  # a click on a control that has moved away fails after this
NAVIGATION_WEIGHTS = {  # action → weight
    "control": 50,
    "tab": 12,
    "page": 14,
    "translate": 8,
    "back": 4,
    "forward": 2,
    "reload": 4,
    "fresh": 6,
}

# Every keyed control on the page: its key (Streamlit's "st-key-…" class), kind, value as shown, and whether it
# can be used. Values are read as the visitor sees them (the selected option's text, a slider's number).
CONTROLS_JS = r"""() => {
    const visible = element => { const r = element.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const text = element => (element?.innerText ?? '').replace(/\s+/g, ' ').trim();
    const controls = {};
    for (const container of document.querySelectorAll('[class*="st-key-"]')) {
        const key = [...container.classList].find(name => name.startsWith('st-key-')).slice(7);
        const own = container.getAttribute('data-testid');
        const widget = own && own !== 'stElementContainer' ? container : container.querySelector('[data-testid]');
        if (!widget || !visible(container)) continue;
        const kind = widget.getAttribute('data-testid');
        let value = null;
        if (kind === 'stSelectbox') value = widget.querySelector('input[role="combobox"]')?.value ?? null;
        else if (kind === 'stRadio')
            value = text(widget.querySelector('[data-testid="stRadioOption"][data-selected="true"]'));
        else if (kind === 'stCheckbox') value = widget.querySelector('input')?.checked ?? null;
        else if (kind === 'stSlider' || kind === 'stSelectSlider')
            value = [...widget.querySelectorAll('input[type="range"]')].map(s => s.getAttribute('aria-valuetext'))
                .join('|');
        else if (kind === 'stMultiSelect')
            value = [...widget.querySelectorAll('[data-tag]')].map(tag => tag.getAttribute('aria-label')).join('|');
        else if (kind === 'stTextInput' || kind === 'stNumberInput')
            value = widget.querySelector('input')?.value ?? null;
        else if (kind === 'stTextArea') value = widget.querySelector('textarea')?.value ?? null;
        else if (kind === 'stTabs')
            value = text(widget.querySelector('[role="tab"][aria-selected="true"]'));
        else if (kind === 'stButtonGroup')
            value = [...widget.querySelectorAll('button[aria-pressed="true"], button[aria-checked="true"]')]
                .map(text).join('|');
        const disabled = !!widget.querySelector('input:disabled, button:disabled, [aria-disabled="true"]')
            && !widget.querySelector('input:enabled, button:enabled');
        controls[key] = {kind, value, disabled};
    }
    return controls;
}"""
KEY_OF_JS = """element => [...element.closest('[class*="st-key-"]').classList]
    .find(name => name.startsWith('st-key-')).slice(7)"""
PROBLEMS_JS = r"""() => {
    const boxes = [...document.querySelectorAll('[data-testid="stException"]')].map(e => e.innerText.slice(0, 300));
    if (document.body.innerText.includes('This app has encountered an error')) boxes.push('error page');
    return boxes;
}"""
# Streamlit marks its app element with the script's state ("running", "notRunning", …) and the connection's.
RUNNING_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute('data-test-script-state') !== 'notRunning'
        || app.getAttribute('data-test-connection-state') !== 'CONNECTED'
        || !!document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"]');
}"""
# Where the keyboard's focus is, for a tab strip's report: "tab 'name' (open)" on a tab, else the focused element.
FOCUSED_TAB_JS = """() => {
    const focused = document.activeElement;
    if (focused && focused.getAttribute('role') === 'tab') {
        const open = focused.getAttribute('aria-selected') === 'true' ? ' (open)' : '';
        return `tab '${focused.innerText.trim()}'${open}`;
    }
    return focused ? `${focused.tagName.toLowerCase()} ${focused.getAttribute('data-testid') || ''}`.trim() : 'none';
}"""
VALUE_KINDS = {
    "stSelectbox",
    "stRadio",
    "stCheckbox",
    "stSlider",
    "stSelectSlider",
    "stMultiSelect",
    "stTextInput",
    "stNumberInput",
    "stTextArea",
    "stTabs",
    "stButtonGroup",
}


# ------------------------------------------------------------------------------------------------ keyboard mode
KEYBOARD_TAB_LIMIT = 250  # Tab presses from the top of a page before a control counts as out of the keyboard's reach
FOCUS_STYLE_MS = 100  # a moment for the focus style to be applied (its fading in is then finished at once)
# The part of each kind of control that takes the keys (its help icon and a multiselect's chosen items are other stops).
FOCUS_TARGETS = {
    "stSelectbox": 'input[role="combobox"]',
    "stMultiSelect": 'input[role="combobox"]',
    "stRadio": 'input[type="radio"]',
    "stCheckbox": 'input[type="checkbox"]',
    "stSlider": 'input[type="range"]',
    "stSelectSlider": 'input[type="range"]',
    "stNumberInput": "input",
    "stTextInput": "input",
    "stTextArea": "textarea",
    "stTabs": '[role="tab"]',
    "stButtonGroup": "button",
    "stButton": "button",
    "stFormSubmitButton": "button",
    "stDownloadButton": "button",
}
# The focus's starting point back at the top of the page, as on a freshly opened page: the body is made focusable
# for a moment and focused (Chromium then starts the next Tab from there).
TO_TOP_JS = """() => {
    document.activeElement?.blur();
    const body = document.body;
    body.setAttribute('tabindex', '-1');
    body.focus({preventScroll: true});
    body.removeAttribute('tabindex');
    window.robotFirstStop = undefined;
}"""
FOCUS_LOOK_JS = r"""
    // Streamlit's focus styles fade in and out: measured at their end, however busy the machine.
    for (const animation of document.getAnimations()) if (animation instanceof CSSTransition) animation.finish();
    const look = element => {
        const s = getComputedStyle(element);
        const sides = ['Top', 'Right', 'Bottom', 'Left'];
        return {
            outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0
                ? `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}` : '',
            shadow: s.boxShadow,
            border: sides.map(side => s[`border${side}Color`]).join(' '),
            bordered: sides.some(side => parseFloat(s[`border${side}Width`]) > 0),
            background: s.backgroundColor,
        };
    };
    const wrapperOf = element =>
        element.closest('[role="tablist"], [data-testid="stSidebarNavLinkContainer"], [class*="st-key-"]') ?? element;
"""
# The look without the focus of every element of the wrapper of the control about to be reached (``key``) or of the
# sidebar link (``link``): what FOCUS_MARK_JS compares with.
BASELINE_JS = (
    """({key, link}) => {"""
    + FOCUS_LOOK_JS
    + r"""
    let targets = [];
    if (key) targets = [...document.querySelectorAll('.st-key-' + CSS.escape(key))].map(container =>
        container.querySelector('[data-testid="stTabs"] [role="tablist"]') ?? container);
    else targets = [...document.querySelectorAll('[data-testid="stSidebarNavLink"]')]
        .filter(a => a.getAttribute('href') === link).map(wrapperOf);
    window.robotBaseline = new Map();
    for (const wrapper of targets)
        for (const element of [wrapper, ...wrapper.querySelectorAll('*')])
            window.robotBaseline.set(element, look(element));
}"""
)
# Where the keyboard focus is: the keyed control around it, the control's kind, whether it is the part of the control
# that takes keys (FOCUS_TARGETS), the sidebar link it is on, whether it is the first stop again (the Tab order has
# gone round the page), and whether it is the title of a closed expander that holds control ``inside``. null on the
# page's body: past the last stop.
FOCUSED_JS = r"""({targets, inside}) => {
    const active = document.activeElement;
    if (!active || active === document.body || active === document.documentElement) return null;
    const first = window.robotFirstStop === undefined;
    if (first) window.robotFirstStop = active;
    const container = active.closest('[class*="st-key-"]');
    let key = null, kind = null;
    if (container) {
        key = [...container.classList].find(name => name.startsWith('st-key-')).slice(7);
        const own = container.getAttribute('data-testid');
        const widget = own && own !== 'stElementContainer' ? container : container.querySelector('[data-testid]');
        kind = widget?.getAttribute('data-testid') ?? null;
    }
    const link = active.closest('[data-testid="stSidebarNavLink"]');
    return {
        key, kind, operable: !!(kind && targets[kind] && active.matches(targets[kind])),
        link: link ? link.getAttribute('href') : null,
        tag: active.tagName.toLowerCase(), role: active.getAttribute('role'),
        label: (active.getAttribute('aria-label') || active.innerText || active.value || '').trim().slice(0, 40),
        again: !first && window.robotFirstStop === active,
        opens: !!inside && active.tagName === 'SUMMARY' && !active.parentElement.open
            && !!active.parentElement.querySelector('.st-key-' + CSS.escape(inside)),
    };
}"""
# What visibly marks the focused element: the first element of its wrapper (the control's keyed container, a tab
# list, a sidebar link) that is drawn (no part of a 1-pixel "visually hidden" box) and looks different from its
# BASELINE_JS look: an outline or box shadow that was not there, a border or background of another colour. null:
# nothing does. An element the baseline did not see counts by an outline or box shadow alone.
FOCUS_MARK_JS = (
    """() => {"""
    + FOCUS_LOOK_JS
    + r"""
    const active = document.activeElement;
    if (!active || active === document.body) return null;
    const wrapper = wrapperOf(active);
    const baseline = window.robotBaseline ?? new Map();
    const drawn = element => {
        for (let e = element; e && e !== wrapper.parentElement; e = e.parentElement) {
            const r = e.getBoundingClientRect();
            if (r.width < 2 || r.height < 2) return false;
        }
        const s = getComputedStyle(element);
        return s.visibility !== 'hidden' && s.opacity !== '0';
    };
    for (const element of [wrapper, ...wrapper.querySelectorAll('*')]) {
        if (!drawn(element)) continue;
        const now = look(element), before = baseline.get(element);
        const name = element.tagName.toLowerCase() + (element === active ? ' (focused)' : '');
        if (now.outline && now.outline !== before?.outline) return `outline on ${name}`;
        if (now.shadow !== 'none' && now.shadow !== before?.shadow) return `box shadow on ${name}`;
        if (before && now.bordered && now.border !== before.border) return `border colour on ${name}`;
        if (before && now.background !== before.background) return `background on ${name}`;
    }
    return null;
}"""
)
# The options of the open list (a select box's or a multiselect's): their text, which one the arrows are on (the
# combobox's aria-activedescendant) and which are chosen.
OPTIONS_JS = r"""() => {
    const box = document.activeElement;
    const on = box?.getAttribute('aria-activedescendant');
    return [...document.querySelectorAll('[role="option"]')]
        .filter(option => option.getBoundingClientRect().height > 0 && option.getAttribute('aria-disabled') !== 'true')
        .map(option => ({
            text: option.innerText.trim(),
            on: (on && option.id === on) || option.getAttribute('data-focused') === 'true',
            chosen: option.getAttribute('aria-selected') === 'true',
        }));
}"""
# The focused range or number input's value and bounds (null when it has none).
BOUNDS_JS = r"""() => {
    const e = document.activeElement;
    const number = (...names) => {
        for (const name of names) { const v = parseFloat(e.getAttribute(name) ?? ''); if (!isNaN(v)) return v; }
        return null;
    };
    const typed = parseFloat(e.value);
    return {now: number('aria-valuenow') ?? (isNaN(typed) ? null : typed), low: number('aria-valuemin', 'min'),
            high: number('aria-valuemax', 'max')};
}"""
# The keys of the controls in a closed expander (its content is not drawn, though it has a size).
FOLDED_JS = r"""() => [...document.querySelectorAll('details:not([open]) [class*="st-key-"]')]
    .map(container => [...container.classList].find(name => name.startsWith('st-key-')).slice(7))"""


def focus_to_top(page) -> None:
    """Start the next Tab from the top of the page, as on a page just opened."""
    page.evaluate(TO_TOP_JS)


class Reached(NamedTuple):
    stop: dict | None  # FOCUSED_JS's reading where the focus came, None when it never did
    presses: int  # Tab presses from the top of the page
    opened: list[str]  # the titles of the expanders opened on the way


def tab_to(page, key: str | None = None, link: str | None = None, limit: int = KEYBOARD_TAB_LIMIT) -> Reached:
    """Press Tab from the top of the page until the focus is on the part of control ``key`` that takes keys
    (FOCUS_TARGETS), or on the sidebar link to ``link``, as a visitor without a mouse does; Enter on the title of a
    closed expander that holds the control opens it. Gives up when the Tab order has gone round the page, or after
    ``limit`` presses. Before the first press, the look of the control's wrapper without the focus is kept for
    :func:`focus_mark`."""
    focus_to_top(page)
    page.wait_for_timeout(FOCUS_STYLE_MS)  # the control used last has lost its focus style
    page.evaluate(BASELINE_JS, {"key": key, "link": link})
    opened: list[str] = []
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        where = page.evaluate(FOCUSED_JS, {"targets": FOCUS_TARGETS, "inside": key})
        if where is None or where["again"]:
            return Reached(None, presses, opened)
        if where["opens"]:
            opened.append(where["label"].splitlines()[-1][:40])
            page.keyboard.press("Enter")
            page.wait_for_timeout(FOCUS_STYLE_MS)
        if (key is not None and where["key"] == key and where["operable"]) or (
            link is not None and where["link"] == link
        ):
            return Reached(where, presses, opened)
    return Reached(None, limit, opened)


def tab_stops(page, limit: int = KEYBOARD_TAB_LIMIT) -> list[dict]:
    """Every stop of the keyboard's Tab order from the top of the page round to the top again (``limit`` at most):
    FOCUSED_JS's reading of each."""
    focus_to_top(page)
    stops: list[dict] = []  # a closed expander's controls are not drawn and not in the Tab order
    for _ in range(limit):
        page.keyboard.press("Tab")
        where = page.evaluate(FOCUSED_JS, {"targets": FOCUS_TARGETS, "inside": None})
        if where is None or where["again"]:
            break
        stops.append(where)
    return stops


def not_reachable(page, limit: int = KEYBOARD_TAB_LIMIT) -> list[str]:
    """The keys of the page's visible, enabled controls (CONTROLS_JS's, less those in a closed expander) whose part
    that takes keys never has the focus when Tab is pressed from the top of the page (``limit`` presses at most)."""
    reached = {stop["key"] for stop in tab_stops(page, limit) if stop["operable"]}
    folded = set(page.evaluate(FOLDED_JS))
    return sorted(
        key
        for key, control in page.evaluate(CONTROLS_JS).items()
        if control["kind"] in FOCUS_TARGETS and not control["disabled"] and key not in reached and key not in folded
    )


def focus_mark(page) -> str | None:
    """What visibly marks the focused control (FOCUS_MARK_JS), measured once Streamlit's focus style has faded in;
    None when nothing does."""
    page.wait_for_timeout(FOCUS_STYLE_MS)
    return page.evaluate(FOCUS_MARK_JS)


@dataclass
class Violation:
    action: int
    what: str
    detail: str
    trail: list[str]


@dataclass
class Journey:
    """What the robot has seen: the last value of every control on every page, and its recent actions."""

    seed: int
    origin: str
    log: Path | None
    allowed_pages: set[str]
    remembered: dict[str, dict[str, object]] = field(default_factory=dict)  # page → key → value
    trail: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    focus_marks: dict[str, str] = field(default_factory=dict)  # "page: control" → what shows its keyboard focus
    log_offset: int = 0
    count: int = 0
    # The sentence the robot last typed into a sentence box, while nothing else may have replaced it (a lesson, a
    # reload, the browser's history): every sentence page it opens from the sidebar must show it.
    sentence: str | None = None
    # Before each action taken outside a lesson: what the robot remembered of every page and the sentence it
    # expected. The action that starts a lesson makes them ``before_lesson``, which leaving the lesson gives back to
    # every page but the one left on (pages.lesson_bar.give_back).
    outside: tuple[dict[str, dict[str, object]], str | None] = ({}, None)
    before_lesson: tuple[dict[str, dict[str, object]], str | None] | None = None
    # A sentence page a lesson was left on keeps the lesson's sentence while the robot stays on it (Held).
    held: Held | None = None
    moved_in_history: bool = False  # this action went back, forward or reloaded


@dataclass
class Held:
    """The sentence page a lesson was left on: what the robot remembered of it before the lesson, the sentence it
    expected then, and whether it has changed one of the page's choices since. Once the robot goes, the page shows
    the visitor's sentence with the choices they had for it, or (changed) the lesson's sentence is theirs."""

    page: str
    before: dict[str, object] | None
    sentence: str | None
    changed: bool = False


def app_wide(key: str) -> bool:
    """Whether control ``key`` is one of the sidebar's, the same on every page (no page's own choice)."""
    return key.split("__")[0] in (*APP_WIDE, "lang", "checkpoint", "present")


def page_of(url: str) -> str:
    return PAGES.get(urlsplit(url).path.strip("/"), urlsplit(url).path.strip("/") or "explore")


def settle(page, timeout_ms: int = SETTLE_TIMEOUT_MS) -> None:
    """Wait until the app has finished its run: no "Running…" indicator for a moment."""
    deadline = time.monotonic() + timeout_ms / 1000
    quiet_since = None
    page.wait_for_timeout(250)
    while time.monotonic() < deadline:
        if page.evaluate(RUNNING_JS):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.4:
            return
        page.wait_for_timeout(100)
    raise TimeoutError(f"the app was still running after {timeout_ms / 1000:.0f} s at {page.url}")


def values(controls: dict[str, dict]) -> dict[str, object]:
    """The controls whose value can be compared (not buttons; not private keys such as the figure format)."""
    return {key: c["value"] for key, c in controls.items() if c["kind"] in VALUE_KINDS and not key.startswith("_")}


class Robot:
    def __init__(self, browser, journey: Journey, verbose: bool = False) -> None:
        self.browser = browser
        self.verbose = verbose
        self.journey = journey
        self.random = random.Random(journey.seed)
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.set_default_timeout(ACTION_TIMEOUT_MS)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda error: journey.page_errors.append(str(error)[:300]))
        self.page.on(
            "dialog", lambda dialog: (journey.page_errors.append(f"dialog: {dialog.message}"), dialog.dismiss())
        )

    # ----------------------------------------------------------------------------------------- checks
    def note(self, text: str) -> None:
        if self.verbose:
            print(f"{self.journey.count}: {text}", flush=True)
        self.journey.trail.append(f"{self.journey.count}: {text}")
        del self.journey.trail[:-12]

    def violation(self, what: str, detail: str) -> None:
        self.journey.violations.append(Violation(self.journey.count, what, detail, list(self.journey.trail)))
        print(f"VIOLATION after action {self.journey.count} ({what}): {detail}", flush=True)
        for line in self.journey.trail:
            print(f"    {line}", flush=True)

    def server_tracebacks(self) -> list[str]:
        log = self.journey.log
        if log is None or not log.is_file():
            return []
        with log.open("rb") as handle:
            handle.seek(self.journey.log_offset)
            new = handle.read().decode("utf-8", "replace")
            self.journey.log_offset = handle.tell()
        return [block[:600] for block in re.split(r"\n(?=\S)", new) if "Traceback" in block or "Exception" in block]

    def check(self, returning: bool, forget_others: bool = False, changed: set[str] = frozenset()) -> dict[str, object]:
        """After an action: errors, then (when the robot has just come back to a view) lost choices; ``changed``
        names the controls the action itself changed."""
        page = self.page
        for problem in page.evaluate(PROBLEMS_JS):
            self.violation("error shown", problem)
        for error in self.journey.page_errors:
            self.violation("script error", error)
        self.journey.page_errors.clear()
        for traceback in self.server_tracebacks():
            self.violation("server traceback", traceback)
        name = page_of(page.url)
        shown = values(page.evaluate(CONTROLS_JS))
        if forget_others:  # a new session (reload): only what the URL carries can be kept
            self.journey.remembered = {name: self.journey.remembered.get(name, {})}
            self.journey.before_lesson = self.journey.held = None
        self.follow_lesson(name)
        remembered = self.journey.remembered.setdefault(name, {})
        held = self.journey.held
        if held is not None and held.page == name:
            held.changed |= any(
                remembered.get(key) != value for key, value in shown.items() if not app_wide(key) and key in remembered
            )
        if returning:
            lost = {
                key: (remembered[key], value)
                for key, value in shown.items()
                if key in remembered and key not in changed and remembered[key] != value
            }
            for key, (before, now) in lost.items():
                self.violation("lost choice", f"{name}: {key} was {before!r}, shows {now!r}")
        remembered.update(shown)
        return shown

    def forget_labels(self) -> None:
        """Another language or model: every label and option text the robot remembered is of the one before."""
        journey = self.journey
        journey.remembered.clear()
        if journey.before_lesson is not None:
            journey.before_lesson = ({}, journey.before_lesson[1])
        if journey.held is not None:
            journey.held.before = None

    def follow_lesson(self, name: str) -> None:
        """Before the robot compares what page ``name`` shows: a lesson started, left, or a page it was left on
        left (:class:`Held`), each with what the app gives back then."""
        journey = self.journey
        in_lesson = "lesson=" in self.page.url
        if in_lesson and journey.before_lesson is None:
            journey.before_lesson = journey.outside
        elif not in_lesson and journey.before_lesson is not None:  # the lesson was left, here
            remembered, sentence = journey.before_lesson
            journey.before_lesson = None
            journey.remembered = {
                page: {key: value for key, value in values.items() if not app_wide(key)}
                for page, values in remembered.items()
                if page != name
            } | {name: journey.remembered.get(name, {})}
            if name in SENTENCE_BOXES:
                journey.held = Held(name, remembered.get(name), sentence)
        held = journey.held
        if held is None or held.page == name:
            return
        journey.held = None
        lessons = journey.remembered.get(held.page, {}).get(SENTENCE_BOXES[held.page])
        if held.changed:
            self.new_sentence()
        elif held.before is not None:
            journey.remembered[held.page] = held.before
        else:
            journey.remembered.pop(held.page, None)
        if not journey.moved_in_history:  # (the history may open a page's own sentence: do_back)
            journey.sentence = lessons if held.changed else held.sentence

    # ----------------------------------------------------------------------------------------- actions
    def open(self, url: str) -> None:
        self.page.goto(url)
        settle(self.page)

    def act(self) -> None:
        journey = self.journey
        journey.count += 1
        journey.moved_in_history = False
        if "lesson=" not in self.page.url:
            journey.outside = ({page: dict(values) for page, values in journey.remembered.items()}, journey.sentence)
        action = self.random.choices(list(NAVIGATION_WEIGHTS), weights=list(NAVIGATION_WEIGHTS.values()))[0]
        getattr(self, f"do_{action}")()

    def do_page(self) -> None:
        allowed = self.journey.allowed_pages
        links = [
            link
            for link in self.page.query_selector_all('[data-testid="stSidebarNav"] a')
            if link.is_visible() and page_of(link.get_attribute("href") or "") in allowed
        ]
        if not links:  # presenter mode hides the sidebar: leave it first, as a visitor would
            leave = self.page.locator('[data-testid="stMain"] button:has-text("close_fullscreen")')
            if not leave.count():
                return self.do_control()
            self.note("leave presenter mode")
            leave.first.click()
            settle(self.page)
            self.check(returning=False)
            return None
        link = self.random.choice(links)
        self.note(f"page {page_of(link.get_attribute('href') or '')}")
        link.click()
        settle(self.page)
        self.check_sentence(self.check(returning=True))

    def other_tab(self):
        """A visible tab of the page that is not open (at random), or None."""
        tabs = [
            tab
            for tab in self.page.query_selector_all('[data-testid="stMain"] [role="tab"]')
            if tab.is_visible() and tab.get_attribute("aria-selected") != "true"
        ]
        return self.random.choice(tabs) if tabs else None

    def do_tab(self) -> None:
        tab = self.other_tab()
        if tab is None:
            return self.do_control()
        key = tab.evaluate(KEY_OF_JS)
        self.note(f"tab {tab.inner_text().strip()!r} on {page_of(self.page.url)}")
        tab.click()
        settle(self.page)
        self.check(returning=True, changed={key})

    def do_back(self) -> None:
        self.journey.sentence = None  # the history or a new session may show another page's own sentence
        self.journey.moved_in_history = True
        self.note("back")
        self.page.go_back()
        settle(self.page)
        self.check(returning=True)

    def do_forward(self) -> None:
        self.journey.sentence = None  # the history or a new session may show another page's own sentence
        self.journey.moved_in_history = True
        self.note("forward")
        self.page.go_forward()
        settle(self.page)
        self.check(returning=True)

    def do_reload(self) -> None:
        self.journey.sentence = None  # the history or a new session may show another page's own sentence
        self.journey.moved_in_history = True
        self.note(f"reload {page_of(self.page.url)}")
        self.page.reload()
        settle(self.page)
        self.check(returning=True, forget_others=True)

    def do_fresh(self) -> None:
        """Open the current URL in a fresh browser: the same tab and the same values in every shared control."""
        url = self.page.url
        self.note(f"fresh browser on {url[:160]}")
        here = self.check(returning=False)
        context = self.browser.new_context(viewport=VIEWPORT)
        try:
            other = context.new_page()
            errors: list[str] = []
            other.on("pageerror", lambda error: errors.append(str(error)[:300]))
            other.goto(url)
            settle(other)
            for problem in other.evaluate(PROBLEMS_JS) + errors:
                self.violation("error in a fresh browser", problem)
            there = values(other.evaluate(CONTROLS_JS))
            for key, value in here.items():
                if key in there and there[key] != value:
                    self.violation("link does not reproduce the view", f"{key}: {value!r} here, {there[key]!r} there")
        finally:
            context.close()
        for traceback in self.server_tracebacks():
            self.violation("server traceback", traceback)

    def text_fields(self, keyed: bool = False) -> list:
        """The page's visible text areas and inputs that can be typed into (``keyed``: only those of a keyed
        control)."""
        fields = self.page.query_selector_all(
            '[data-testid="stMain"] [data-testid="stTextArea"] textarea, '
            '[data-testid="stMain"] [data-testid="stTextInput"] input'
        )
        return [
            f
            for f in fields
            if f.is_visible()
            and f.is_enabled()
            and (not keyed or f.evaluate("element => !!element.closest('[class*=\"st-key-\"]')"))
        ]

    def do_translate(self) -> None:
        page = self.page
        fields = self.text_fields()
        if not fields:
            return self.do_control()
        box = self.random.choice(fields)
        key = box.evaluate(KEY_OF_JS)
        sentence = self.random.choice(SENTENCES)
        self.note(f"type {sentence[:40]!r} on {page_of(page.url)}")
        box.fill(sentence)
        submit = page.query_selector('[data-testid="stMain"] [data-testid="stFormSubmitButton"] button')
        if box.evaluate("element => element.tagName") == "TEXTAREA" and submit is not None:
            submit.click()
        else:
            box.press("Enter")
        settle(page)
        self.new_sentence()
        self.typed_sentence(key, self.check(returning=False))

    def new_sentence(self) -> None:
        """The visitor typed into a text box: a sentence box's text follows them to every page with a sentence
        box, and the choices that depend on it (a token's index) may legitimately change there: those pages start
        afresh."""
        for name in SENTENCE_PAGES:
            self.journey.remembered.pop(name, None)
        self.journey.remembered.pop(page_of(self.page.url), None)

    def typed_sentence(self, key: str | None, shown: dict[str, object]) -> None:
        """After typing into ``key``: when it is this page's sentence box, what it shows is the sentence every
        sentence page must show from now on (:meth:`check_sentence`)."""
        held = self.journey.held
        if held is not None and held.page == page_of(self.page.url):  # typed on the page a lesson was left on:
            held.changed = True  # its choices are the visitor's now,
            if SENTENCE_BOXES[held.page] == key:  # and so is the sentence typed in its box
                self.journey.held = None
        if key is not None and SENTENCE_BOXES.get(page_of(self.page.url)) == key and "lesson=" not in self.page.url:
            self.journey.sentence = shown.get(key)

    def check_sentence(self, shown: dict[str, object]) -> None:
        """After opening a page from the sidebar: its sentence box shows the sentence last typed on any page."""
        journey, name = self.journey, page_of(self.page.url)
        if "lesson=" in self.page.url:
            journey.sentence = None  # a lesson's steps bring sentences of their own (and say so)
            return
        key = SENTENCE_BOXES.get(name)
        if journey.sentence is None or key is None or key not in shown:
            return
        if shown[key] != journey.sentence:
            self.violation("sentence did not follow", f"{name}: {key} shows {shown[key]!r}, typed {journey.sentence!r}")
        journey.sentence = shown[key]

    def do_control(self) -> None:
        page = self.page
        controls = {
            key: c
            for key, c in page.evaluate(CONTROLS_JS).items()
            if not c["disabled"] and c["kind"] in VALUE_KINDS - {"stTabs", "stTextInput", "stTextArea"} | {"stButton"}
        }
        if not controls:
            return
        key = self.random.choice(sorted(controls))
        kind = controls[key]["kind"]
        container = page.locator(f".st-key-{key}").first
        before = page_of(page.url)
        done = getattr(self, f"set_{kind[2:].lower()}")(container, key)
        if not done:
            return
        settle(page)
        if key in ("lang", "checkpoint"):  # every label and option text changes with the language
            self.forget_labels()
        elif key.split("__")[0] in APP_WIDE:  # palette__en (pages.choices): set here, it is set on every page, so
            # what other pages showed before is no longer due
            for remembered in self.journey.remembered.values():
                remembered.pop(key, None)
        self.confirm()
        landed = page_of(page.url)
        if kind == "stButton" and (landed != before or key.startswith("lesson")):
            # A button that opens another page on a chosen view ("this head in the atlas", a lesson's next step)
            # sets that page's choices on purpose, as a link would: start afresh there.
            self.journey.remembered.pop(landed, None)
            self.check(returning=False)
            return
        self.check(returning=landed != before)

    def confirm(self) -> None:
        """After a control was set and the app has run: nothing to confirm for a mouse (the keyboard robot checks
        here that its keys changed the value)."""

    # ----------------------------------------------------------------------------------------- controls
    def click_any(self, choices, what: str) -> bool:
        """Click one of ``choices`` (a locator) at random, noting ``what`` and its text; False when there are none."""
        count = choices.count()
        if not count:
            return False
        choice = choices.nth(self.random.randrange(count))
        self.note(f"{what} {choice.inner_text().strip()[:40]!r}")
        choice.click()
        return True

    def pick_option(self, opener, what: str) -> bool:
        """Open a list (``opener``), click one of its options at random; False when no list opened."""
        opener.click()
        options = self.page.locator('[role="option"]')
        try:
            options.first.wait_for(timeout=5_000)
        except Exception:
            self.page.keyboard.press("Escape")
            return False
        return self.click_any(options, what)

    def set_selectbox(self, container, key: str) -> bool:
        return self.pick_option(container.locator('button[aria-haspopup="listbox"]').first, f"select {key} =")

    def set_radio(self, container, key: str) -> bool:
        return self.click_any(container.locator('[data-testid="stRadioOption"]'), f"radio {key} =")

    def set_checkbox(self, container, key: str) -> bool:
        self.note(f"toggle {key}")
        container.locator("label").first.click()
        return True

    def set_slider(self, container, key: str) -> bool:
        handle = container.locator('input[type="range"]').first
        steps = self.random.choice([-3, -2, -1, 1, 2, 3])
        self.note(f"slider {key} {steps:+d}")
        handle.focus()
        for _ in range(abs(steps)):
            handle.press("ArrowRight" if steps > 0 else "ArrowLeft")
        self.page.wait_for_timeout(300)  # the slider sends its value when the keys stop
        return True

    set_selectslider = set_slider

    def set_multiselect(self, container, key: str) -> bool:
        tags = container.locator("[data-tag] button")
        if tags.count() and self.random.random() < 0.5:
            return self.click_any(tags, f"multiselect {key}: remove")
        opener = container.locator('button[aria-haspopup="listbox"], input[role="combobox"]').first
        if not self.pick_option(opener, f"multiselect {key}: add"):
            return False
        self.page.keyboard.press("Escape")
        return True

    def set_buttongroup(self, container, key: str) -> bool:
        return self.click_any(container.locator("button:enabled"), f"choose {key} =")

    def set_numberinput(self, container, key: str) -> bool:
        box = container.locator("input")
        step = self.random.choice(["ArrowUp", "ArrowDown"])
        self.note(f"number {key} {step}")
        box.press(step)
        box.press("Enter")
        return True

    @staticmethod
    def pressable(container) -> tuple[object, str] | None:
        """The control's button and its label, or None for a button the robot leaves alone (disabled, or one of
        :data:`SKIPPED_BUTTONS`)."""
        button = container.locator("button").first
        label = button.inner_text().strip()
        if SKIPPED_BUTTONS.search(label) or not button.is_enabled():
            return None
        return button, label

    def set_button(self, container, key: str) -> bool:
        if (found := self.pressable(container)) is None:
            return False
        button, label = found
        self.note(f"button {label[:40]!r}")
        button.click()
        return True


class KeyboardRobot(Robot):
    """The robot without a mouse: every control, tab and sidebar link is reached with Tab from the top of the page
    and used with keys only (see the module's docstring); on top of the robot's checks, each action checks that its
    control can be reached, shows where the focus is, and changes when its keys should change it."""

    def __init__(self, browser, journey: Journey, verbose: bool = False) -> None:
        super().__init__(browser, journey, verbose)
        self.expected: tuple[str, object] | None = None  # the control just used and its value before
        self.unmarked: set[tuple[str, str]] = set()  # (page, control) already reported as showing no focus

    # ----------------------------------------------------------------------------------------- focus
    def reach(self, key: str | None = None, link: str | None = None, label: str = "") -> bool:
        """Press Tab from the top of the page until the focus is on the part of control ``key`` that takes keys (or
        on the sidebar link to ``link``), opening a closed expander that holds it on the way; then check that the
        focus shows. False, and a violation, when it never comes there (:func:`tab_to`)."""
        name = label or key or link or "?"
        reached = tab_to(self.page, key=key, link=link)
        for title in reached.opened:
            self.note(f"open the expander {title!r} (Enter)")
        if reached.stop is not None:
            self.check_focus_shown(name)
            return True
        self.violation(
            "not reachable by keyboard",
            f"{name} on {page_of(self.page.url)}: no focus after {reached.presses} Tab presses from the top",
        )
        return False

    def tab_on(self, wanted: Callable[[dict], bool]) -> dict | None:
        """Press Tab from where the focus is until ``wanted`` (of FOCUSED_JS's reading) holds; that reading, or None
        when the page's last stop comes first."""
        for _ in range(KEYBOARD_TAB_LIMIT):
            self.press("Tab")
            where = self.page.evaluate(FOCUSED_JS, {"targets": FOCUS_TARGETS, "inside": None})
            if where is None:
                return None
            if wanted(where):
                return where
        return None

    def check_focus_shown(self, name: str) -> None:
        """A violation when nothing visible marks the focused control (once per page and control)."""
        mark = focus_mark(self.page)
        where = (page_of(self.page.url), name)
        self.journey.focus_marks[f"{where[0]}: {name}"] = mark or "nothing"
        if mark is not None:
            return
        if where not in self.unmarked:
            self.unmarked.add(where)
            focused = self.page.evaluate(FOCUSED_JS, {"targets": FOCUS_TARGETS, "inside": None}) or {}
            self.violation(
                "no visible focus",
                f"{name} on {where[0]}: no outline, shadow, border or background marks the focused "
                f"{focused.get('tag')} {focused.get('label', '')[:40]!r}",
            )

    def press(self, *keys: str) -> None:
        for key in keys:
            self.page.keyboard.press(key)

    def value_of(self, key: str) -> object:
        return self.page.evaluate(CONTROLS_JS).get(key, {}).get("value")

    def expect_change(self, key: str) -> None:
        """The keys about to be pressed should change ``key``'s value: :meth:`confirm` checks that they did."""
        self.expected = (key, self.value_of(key))

    def confirm(self) -> None:
        if self.expected is None:
            return
        key, before = self.expected
        self.expected = None
        now = self.value_of(key)
        if now == before:
            self.violation("keyboard could not change", f"{key} on {page_of(self.page.url)}: still {now!r}")

    # ----------------------------------------------------------------------------------------- actions
    def do_page(self) -> None:
        allowed = self.journey.allowed_pages
        links = [
            link.get_attribute("href") or ""
            for link in self.page.query_selector_all('[data-testid="stSidebarNavLink"]')
            if link.is_visible() and page_of(link.get_attribute("href") or "") in allowed
        ]
        if not links:  # presenter mode hides the sidebar: leave it first, as a visitor would
            if not self.page.locator(".st-key-leave_present button").count():
                return self.do_control()
            self.note("leave presenter mode (Tab, Enter)")
            if self.reach(key="leave_present", label="leave_present"):
                self.press("Enter")
                settle(self.page)
            self.check(returning=False)
            return None
        link = self.random.choice(links)
        self.note(f"page {page_of(link)} (Tab, Enter)")
        if not self.reach(link=link, label=f"sidebar link to {page_of(link)}"):
            return None
        self.press("Enter")
        settle(self.page)
        self.check_sentence(self.check(returning=True))

    def do_tab(self) -> None:
        tab = self.other_tab()
        if tab is None:
            return self.do_control()
        key = tab.evaluate(KEY_OF_JS)
        wanted = tab.inner_text().strip()
        # Arrows move along the tab list (the open tab has the focus; past the last comes the first) and open the
        # tab they land on, so each tab on the way runs the page: the robot waits for each run to name its tab in
        # the URL, as a visitor reads each tab (arrowing on at once can end on a tab the app snaps back to).
        siblings = tab.evaluate(
            """tab => [...tab.closest('[role="tablist"]').querySelectorAll('[role="tab"]')]
                .map(t => [t === tab, t.getAttribute('aria-selected') === 'true'])"""
        )
        count = len(siblings)
        steps = ([chosen for chosen, _ in siblings].index(True) - [open_ for _, open_ in siblings].index(True)) % count
        arrow, steps = ("ArrowRight", steps) if steps <= count - steps else ("ArrowLeft", count - steps)
        self.note(f"tab {wanted!r} on {page_of(self.page.url)} (Tab, {arrow} × {steps})")
        if not self.reach(key=key, label=f"{key} (tabs)"):
            return None
        for _ in range(steps):
            address = self.page.url  # before the press: a quick run can change it before the robot reads it
            self.press(arrow)
            with suppress(Exception):  # a tab list that the URL does not follow: its run has ended
                self.page.wait_for_function("address => location.href !== address", arg=address, timeout=5_000)
            settle(self.page)
        shown = self.value_of(key)
        if shown != wanted:
            where = self.page.evaluate(FOCUSED_TAB_JS)
            self.violation(
                "keyboard could not change",
                f"{key} on {page_of(self.page.url)}: {shown!r}, not {wanted!r} (the focus: {where})",
            )
        self.check(returning=True, changed={key})

    def do_translate(self) -> None:
        page = self.page
        fields = self.text_fields(keyed=True)
        if not fields:
            return self.do_control()
        box = self.random.choice(fields)
        key = box.evaluate(KEY_OF_JS)
        sentence = self.random.choice(SENTENCES)
        area = box.evaluate("element => element.tagName") == "TEXTAREA"
        self.note(f"type {sentence[:40]!r} on {page_of(page.url)} ({key})")
        if not self.reach(key=key, label=key):
            return None
        self.press("Control+a")
        if sentence:
            page.keyboard.type(sentence)
        longest = int(box.get_attribute("maxlength") or 0) or len(sentence)
        typed = page.evaluate("() => document.activeElement.value")
        if typed != sentence[:longest]:
            self.violation("keyboard could not change", f"{key} on {page_of(page.url)}: shows {typed[:60]!r}")
        in_form = box.evaluate("element => !!element.closest('[data-testid=\"stForm\"]')")
        if area and in_form:  # a text area takes Enter as a new line: Tab on to the form's button and press it
            submit = self.tab_on(lambda where: where["kind"] == "stFormSubmitButton" and where["operable"])
            if submit is None:
                self.violation("not reachable by keyboard", f"the submit button of {key}'s form on {page_of(page.url)}")
                return None
            self.check_focus_shown(submit["key"])
        self.press("Enter")
        settle(page)
        self.new_sentence()
        self.typed_sentence(key, self.check(returning=False))

    # ----------------------------------------------------------------------------------------- controls
    def choose_in_list(self, key: str, what: str) -> bool:
        """In the list that the focused combobox opens with ArrowDown (on the option after the chosen one): up to
        two more arrows up or down at random, on past the option already chosen, and Enter. False (after Escape) when
        no list opens or it has no option left to choose. Long lists are drawn in part only, so the arrows are
        counted rather than aimed at an option."""
        page = self.page
        self.press("ArrowDown")
        options: list[dict] = []
        for _ in range(30):
            page.wait_for_timeout(100)
            options = page.evaluate(OPTIONS_JS)
            if options:
                break
        current = self.value_of(key)
        if not [option for option in options if not option["chosen"] and option["text"] != current]:
            self.press("Escape")
            if not options:
                self.violation("keyboard could not change", f"{key} on {page_of(page.url)}: ArrowDown opens no list")
            return False
        steps = self.random.choice([-2, -1, 0, 0, 1, 2])
        arrow = "ArrowDown" if steps >= 0 else "ArrowUp"
        self.press(*[arrow] * abs(steps))
        on = None
        for _ in range(len(options) + 2):  # past the chosen option; back the other way at the end of the list
            on = next((option for option in page.evaluate(OPTIONS_JS) if option["on"]), None)
            if on is None or (not on["chosen"] and on["text"] != current):
                break
            before = on["text"]
            self.press(arrow)
            if next((o["text"] for o in page.evaluate(OPTIONS_JS) if o["on"]), None) == before:
                arrow = "ArrowUp" if arrow == "ArrowDown" else "ArrowDown"
        self.note(f"{what} {(on or {}).get('text', '?')[:40]!r} (Tab, ArrowDown, {arrow} × {abs(steps)}, Enter)")
        self.expect_change(key)
        self.press("Enter")
        return True

    def set_selectbox(self, container, key: str) -> bool:
        return self.reach(key=key) and self.choose_in_list(key, f"select {key} =")

    def set_radio(self, container, key: str) -> bool:
        count = container.locator('[data-testid="stRadioOption"]').count()
        if count < 2 or not self.reach(key=key):
            return False
        steps = self.random.randrange(1, count)
        self.note(f"radio {key}: ArrowDown × {steps}")
        self.expect_change(key)
        for _ in range(steps):
            self.press("ArrowDown")
        return True

    def set_checkbox(self, container, key: str) -> bool:
        if not self.reach(key=key):
            return False
        self.note(f"toggle {key} (Space)")
        self.expect_change(key)
        self.press("Space")
        return True

    def step_keys(self, key: str, up: str, down: str) -> list[str]:
        """One to three presses of ``up`` or ``down`` at random, towards the side the focused input can still go."""
        bounds = self.page.evaluate(BOUNDS_JS)
        steps = self.random.choice([-3, -2, -1, 1, 2, 3])
        now, low, high = bounds["now"], bounds["low"], bounds["high"]
        if now is not None and (
            (steps > 0 and high is not None and now >= high) or (steps < 0 and low is not None and now <= low)
        ):
            steps = -steps
        if not (now is not None and low is not None and high is not None and low == high):
            self.expect_change(key)
        return [up if steps > 0 else down] * abs(steps)

    def set_slider(self, container, key: str) -> bool:
        if not self.reach(key=key):
            return False
        keys = self.step_keys(key, "ArrowRight", "ArrowLeft")
        self.note(f"slider {key}: {keys[0]} × {len(keys)}")
        self.press(*keys)
        self.page.wait_for_timeout(300)  # the slider sends its value when the keys stop
        return True

    set_selectslider = set_slider

    def set_multiselect(self, container, key: str) -> bool:
        if not self.reach(key=key):
            return False
        if container.locator("[data-tag]").count() and self.random.random() < 0.5:
            # Shift+Tab steps back from the box onto the chosen items; Backspace removes the one with the focus.
            self.press("Shift+Tab")
            tag = self.page.evaluate("() => document.activeElement.closest('[data-tag]')?.getAttribute('aria-label')")
            if tag is None:
                self.violation("not reachable by keyboard", f"{key}'s chosen items on {page_of(self.page.url)}")
                return False
            self.note(f"multiselect {key}: remove {tag!r} (Shift+Tab, Backspace)")
            self.expect_change(key)
            self.press("Backspace")
            return True
        if not self.choose_in_list(key, f"multiselect {key}: add"):
            return False
        self.press("Escape")
        return True

    def set_buttongroup(self, container, key: str) -> bool:
        count = container.locator("button:enabled").count()
        if not count or not self.reach(key=key):
            return False
        steps = self.random.randrange(count)  # Tab on from the group's first button to one at random
        self.press(*["Tab"] * steps)
        label = self.page.evaluate("() => document.activeElement.innerText.trim()")
        self.note(f"choose {key} = {label[:40]!r} (Tab × {steps}, Space)")
        self.expect_change(key)
        self.press("Space")
        return True

    def set_numberinput(self, container, key: str) -> bool:
        if not self.reach(key=key):
            return False
        keys = self.step_keys(key, "ArrowUp", "ArrowDown")
        self.note(f"number {key}: {keys[0]} × {len(keys)}, Enter")
        self.press(*keys, "Enter")
        return True

    def set_button(self, container, key: str) -> bool:
        if (found := self.pressable(container)) is None:
            return False
        label = found[1]
        if not self.reach(key=key, label=f"{key} ({label[:40]!r})"):
            return False
        key_press = self.random.choice(["Enter", "Space"])  # a button takes either
        self.note(f"button {label[:40]!r} (Tab, {key_press})")
        self.press(key_press)
        return True


def walk(
    origin: str,
    actions: int,
    seed: int,
    pages: list[str],
    log: Path | None,
    start: str = "/",
    verbose: bool = False,
    browser=None,
    keyboard: bool = False,
) -> Journey:
    """One seeded journey of ``actions`` actions against the app at ``origin``; returns what it found. ``browser``:
    a playwright Chromium already running (the tests'), else one is started. ``keyboard``: the robot without a
    mouse (:class:`KeyboardRobot`)."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                return walk(origin, actions, seed, pages, log, start, verbose, chromium, keyboard)
            finally:
                chromium.close()
    journey = Journey(seed, origin, log, set(pages))
    journey.log_offset = log.stat().st_size if log is not None and log.is_file() else 0  # this journey's lines only
    robot = (KeyboardRobot if keyboard else Robot)(browser, journey, verbose)
    try:
        robot.note(f"open {start}")
        robot.open(origin + start)
        robot.check(returning=False)
        while journey.count < actions:
            try:
                robot.act()
            except TimeoutError as error:  # the app never finished: a violation, then carry on from the start
                robot.violation("stuck", str(error))
                robot.open(origin + start)
            except Exception as error:  # a control that moved away under the robot: not the app's fault
                robot.note(f"(could not act: {type(error).__name__}: {str(error).splitlines()[0][:120]})")
                settle(robot.page)
    finally:
        robot.context.close()
    return journey


def other_shape_model(checkpoint: str | None, folder: Path) -> Path:
    """A model of another shape over the checkpoint's tokenizer (2 + 2 layers, 4 heads, random weights), made once in
    ``folder``: the robot then also opens it and puts it side by side with the checkpoint."""
    import dataclasses

    import torch

    from transformer.formats import checkpoint as files
    from transformer.paper.model import Transformer

    if (folder / "config.json").is_file():
        return folder
    loaded = files.load_checkpoint(checkpoint)
    config = dataclasses.replace(loaded.config, encoder_layers=2, decoder_layers=2, num_heads=4)
    torch.manual_seed(0)
    return files.save_checkpoint(folder, files.state_dict_for_saving(Transformer(config)), config, loaded.tokenizer, {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pages", nargs="+", choices=sorted(set(PAGES.values())), default=sorted(set(PAGES.values())))
    parser.add_argument("--checkpoint", help="checkpoint the server opens (default: the shipped model)")
    parser.add_argument("--origin", help="an app already running (default: start one on a free port)")
    parser.add_argument("--report", type=Path, help="write the violations as JSON here")
    parser.add_argument("--verbose", action="store_true", help="print every action")
    parser.add_argument("--keyboard", action="store_true", help="no mouse: reach and use every control with keys")
    parser.add_argument(
        "--other-shape",
        action="store_true",
        help="list a second model of another shape (2+2 layers × 4 heads) beside the checkpoint, for side by side",
    )
    arguments = parser.parse_args(argv)
    if arguments.other_shape:
        os.environ["TRANSFORMER_MODELS"] = str(
            other_shape_model(arguments.checkpoint, Path(f"/tmp/robot-models-{arguments.seed}"))
        )

    started = time.monotonic()
    log = Path(f"/tmp/robot-visitor-{arguments.seed}.log")
    with (
        nullcontext((arguments.origin, None)) if arguments.origin else serving(arguments.checkpoint, log) as (
            origin,
            _,
        )
    ):
        log_file = None if arguments.origin else log
        journey = walk(
            origin,
            arguments.actions,
            arguments.seed,
            arguments.pages,
            log_file,
            verbose=arguments.verbose,
            keyboard=arguments.keyboard,
        )
    seconds = time.monotonic() - started
    mode = ", keyboard only" if arguments.keyboard else ""
    print(
        f"{journey.count} actions{mode}, seed {arguments.seed}, {len(journey.violations)} violations, {seconds:.0f} s"
    )
    if arguments.keyboard and arguments.verbose:
        print("What showed the keyboard's focus:")
        for where, mark in sorted(journey.focus_marks.items()):
            print(f"    {where}: {mark}")
    if arguments.report:
        arguments.report.write_text(json.dumps([v.__dict__ for v in journey.violations], indent=1, ensure_ascii=False))
    return 1 if journey.violations else 0


if __name__ == "__main__":
    sys.exit(main())
