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

Every violation is printed with the actions that led to it (and written to ``--report`` as JSON). Exit status 1
when there was any::

    python benchmarks/robot_visitor.py --actions 150 --seed 1
    python benchmarks/robot_visitor.py --actions 2000 --seed 7 --pages explore what_if
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPOSITORY = Path(__file__).resolve().parent.parent
if str(REPOSITORY) not in sys.path:  # run as a script: benchmarks/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS, serving  # noqa: E402

VIEWPORT = {"width": 1280, "height": 800}
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
    "Ünïcödé ﬁ ligatures ‮ right-to-left ‬ and\u200bzero width.",
]
# Buttons the robot does not press: downloads (they leave the page alone) and measurements that take minutes on
# two cores (every head over the dev sample, the head atlas of a checkpoint that has none stored).
SKIPPED_BUTTONS = re.compile(
    r"download|herunterladen|다운로드|measure every|모든 헤드|measure here|여기서|build the index|색인 만들기",
    re.IGNORECASE,
)
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
    log_offset: int = 0
    count: int = 0


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
        remembered = self.journey.remembered.setdefault(name, {})
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

    # ----------------------------------------------------------------------------------------- actions
    def open(self, url: str) -> None:
        self.page.goto(url)
        settle(self.page)

    def act(self) -> None:
        journey = self.journey
        journey.count += 1
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
        self.check(returning=True)

    def do_tab(self) -> None:
        tabs = [
            tab
            for tab in self.page.query_selector_all('[data-testid="stMain"] [role="tab"]')
            if tab.is_visible() and tab.get_attribute("aria-selected") != "true"
        ]
        if not tabs:
            return self.do_control()
        tab = self.random.choice(tabs)
        key = tab.evaluate(KEY_OF_JS)
        self.note(f"tab {tab.inner_text().strip()!r} on {page_of(self.page.url)}")
        tab.click()
        settle(self.page)
        self.check(returning=True, changed={key})

    def do_back(self) -> None:
        self.note("back")
        self.page.go_back()
        settle(self.page)
        self.check(returning=True)

    def do_forward(self) -> None:
        self.note("forward")
        self.page.go_forward()
        settle(self.page)
        self.check(returning=True)

    def do_reload(self) -> None:
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

    def do_translate(self) -> None:
        page = self.page
        fields = [
            f
            for f in page.query_selector_all(
                '[data-testid="stMain"] [data-testid="stTextArea"] textarea, '
                '[data-testid="stMain"] [data-testid="stTextInput"] input'
            )
            if f.is_visible() and f.is_enabled()
        ]
        if not fields:
            return self.do_control()
        box = self.random.choice(fields)
        sentence = self.random.choice(SENTENCES)
        self.note(f"type {sentence[:40]!r} on {page_of(page.url)}")
        box.fill(sentence)
        submit = page.query_selector('[data-testid="stMain"] [data-testid="stFormSubmitButton"] button')
        if box.evaluate("element => element.tagName") == "TEXTAREA" and submit is not None:
            submit.click()
        else:
            box.press("Enter")
        settle(page)
        # A new sentence may legitimately change choices that depend on it (a token's index): start afresh here.
        self.journey.remembered.pop(page_of(page.url), None)
        self.check(returning=False)

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
            self.journey.remembered.clear()
        landed = page_of(page.url)
        if kind == "stButton" and (landed != before or key.startswith("lesson")):
            # A button that opens another page on a chosen view ("this head in the atlas", a lesson's next step)
            # sets that page's choices on purpose, as a link would: start afresh there.
            self.journey.remembered.pop(landed, None)
            self.check(returning=False)
            return
        self.check(returning=landed != before)

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

    def set_button(self, container, key: str) -> bool:
        button = container.locator("button").first
        label = button.inner_text().strip()
        if SKIPPED_BUTTONS.search(label) or not button.is_enabled():
            return False
        self.note(f"button {label[:40]!r}")
        button.click()
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
) -> Journey:
    """One seeded journey of ``actions`` actions against the app at ``origin``; returns what it found. ``browser``:
    a playwright Chromium already running (the tests'), else one is started."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                return walk(origin, actions, seed, pages, log, start, verbose, chromium)
            finally:
                chromium.close()
    journey = Journey(seed, origin, log, set(pages))
    journey.log_offset = log.stat().st_size if log is not None and log.is_file() else 0  # this journey's lines only
    robot = Robot(browser, journey, verbose)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pages", nargs="+", choices=sorted(set(PAGES.values())), default=sorted(set(PAGES.values())))
    parser.add_argument("--checkpoint", help="checkpoint the server opens (default: the shipped model)")
    parser.add_argument("--origin", help="an app already running (default: start one on a free port)")
    parser.add_argument("--report", type=Path, help="write the violations as JSON here")
    parser.add_argument("--verbose", action="store_true", help="print every action")
    arguments = parser.parse_args(argv)

    started = time.monotonic()
    log = Path(f"/tmp/robot-visitor-{arguments.seed}.log")
    with (
        nullcontext((arguments.origin, None)) if arguments.origin else serving(arguments.checkpoint, log) as (
            origin,
            _,
        )
    ):
        log_file = None if arguments.origin else log
        journey = walk(origin, arguments.actions, arguments.seed, arguments.pages, log_file, verbose=arguments.verbose)
    seconds = time.monotonic() - started
    print(f"{journey.count} actions, seed {arguments.seed}, {len(journey.violations)} violations, {seconds:.0f} s")
    if arguments.report:
        arguments.report.write_text(json.dumps([v.__dict__ for v in journey.violations], indent=1, ensure_ascii=False))
    return 1 if journey.violations else 0


if __name__ == "__main__":
    sys.exit(main())
