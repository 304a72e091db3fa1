"""The app without a mouse, in a real browser: every control can be reached with Tab and used with keys, its focus
shows, and what it chose holds.

It runs on the server and in the browser of the browser tests (``tests/test_browser.py``'s ``server`` and
``open_app`` fixtures, ``tests/conftest.py``'s Chromium), and drives the pages with the keyboard robot of
``benchmarks/robot_visitor.py`` (``--keyboard``): its Tab walk from the top of the page, its reading of the focus and
of every control. The last tests check those checks themselves: a control taken out of the Tab order, and one whose
focus style is taken away, must be caught.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import needs_browser
from tests.test_browser import Visit, checkpoint, open_app, robot_visitor  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = needs_browser

# CI's keyboard journey: about two minutes on a 2-core machine, and on its way every kind of step the robot takes
# (select boxes, sliders, switches, radios, a multiselect, tabs, typing, another page, the language, a reload, a
# link opened in a fresh browser).
KEYBOARD_ACTIONS = 40
KEYBOARD_SEED = 3
# The main page's controls that must be in its Tab order (the page shows more: all of them are checked).
# (A control whose options are translated has a widget per language: ``kind__en``, :mod:`pages.choices`.)
MAIN_CONTROLS = {"text", "layer__en", "head__en", "kind__en", "view_tab__en", "beam", "merge", "lang", "checkpoint"}


def value(page: Page, key: str) -> object:
    """What control ``key`` shows (the robot's reading)."""
    return page.evaluate(robot_visitor().CONTROLS_JS)[key]["value"]


def tab_to(page: Page, key: str) -> None:
    """Tab from the top of the page to control ``key``: it must come within the robot's bound, and show its focus."""
    robot = robot_visitor()
    reached = robot.tab_to(page, key=key)
    assert reached.stop is not None, f"{key} not reachable in {reached.presses} Tab presses from the top"
    assert robot.focus_mark(page) is not None, f"nothing shows the keyboard's focus on {key}"


def test_a_keyboard_only_visitor_meets_no_violation(browser: Browser, server: str, server_log: Path):
    """A seeded journey with keys only (benchmarks/robot_visitor.py --keyboard): every control it means to use is
    reached with Tab from the top of the page and shows its focus, its keys change it, and the mouse robot's checks
    hold (no error, no traceback, no lost choice, links reproduce the view)."""
    robot = robot_visitor()
    pages = sorted(set(robot.PAGES.values()))
    journey = robot.walk(
        server,
        actions=KEYBOARD_ACTIONS,
        seed=KEYBOARD_SEED,
        pages=pages,
        log=server_log,
        browser=browser,
        keyboard=True,
    )
    assert journey.count == KEYBOARD_ACTIONS
    report = [f"{v.what} after action {v.action}: {v.detail}\n  " + "\n  ".join(v.trail) for v in journey.violations]
    assert journey.violations == [], "\n".join(report)
    assert len(journey.focus_marks) >= 10, journey.focus_marks  # it did reach controls, and saw their focus


def test_every_control_of_the_main_page_takes_the_focus_by_tab(open_app: Callable[..., Visit]):  # noqa: F811
    """From the top of the main page, Tab comes to the part that takes keys of every visible, enabled control (the
    robot's reading of the page, as CONTROLS_JS collects them), the sidebar's links among them."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    robot.settle(page)
    controls = page.evaluate(robot.CONTROLS_JS)
    assert set(controls) >= MAIN_CONTROLS, sorted(controls)
    assert robot.not_reachable(page) == []
    stops = robot.tab_stops(page)
    reached = {stop["key"] for stop in stops if stop["operable"]}
    assert reached >= MAIN_CONTROLS
    links = {robot.page_of(stop["link"]) for stop in stops if stop["link"]}
    assert links == set(robot.PAGES.values())
    visit.assert_quiet()


def test_a_select_box_and_a_tab_change_by_keyboard_and_hold_after_a_reload(
    open_app: Callable[..., Visit],  # noqa: F811
):
    """Layer: Tab to it, ArrowDown opens its list on the next option, Enter chooses it. Tabs: Tab to the open one,
    ArrowRight opens the next. Each shows its focus, and each choice is still there after a reload."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    robot.settle(page)

    def choose_and_reload(key: str, *keys: str, listed: bool = False) -> None:
        before = value(page, key)
        tab_to(page, key)
        for pressed in keys:
            page.keyboard.press(pressed)
            if listed and pressed == keys[0]:
                page.wait_for_selector('[role="option"]')  # the list opened
        robot.settle(page)
        chosen = value(page, key)
        assert chosen != before
        page.reload()
        robot.settle(page)
        assert value(page, key) == chosen

    choose_and_reload("layer__en", "ArrowDown", "Enter", listed=True)
    choose_and_reload("view_tab__en", "ArrowRight")
    visit.assert_quiet()


def test_the_checks_catch_a_control_out_of_the_tab_order_and_a_focus_that_does_not_show(
    open_app: Callable[..., Visit],  # noqa: F811
):
    """The beam slider is reached and shows its focus; taken out of the Tab order (tabindex=-1) it is reported as not
    reachable, and with every focus style on it taken away, nothing is found to mark its focus."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    robot.settle(page)
    tab_to(page, "beam")

    page.locator('.st-key-beam input[type="range"]').evaluate("handle => handle.setAttribute('tabindex', '-1')")
    assert "beam" in robot.not_reachable(page)
    assert robot.tab_to(page, key="beam").stop is None
    page.locator('.st-key-beam input[type="range"]').evaluate("handle => handle.setAttribute('tabindex', '0')")
    assert "beam" not in robot.not_reachable(page)

    page.add_style_tag(
        content=".st-key-beam, .st-key-beam * { outline: none !important; box-shadow: none !important;"
        " transition: none !important; }"
    )
    assert robot.tab_to(page, key="beam").stop is not None
    assert robot.focus_mark(page) is None


def test_a_tab_that_a_redraw_takes_the_focus_from_gets_it_back(open_app: Callable[..., Visit]):  # noqa: F811
    """Streamlit's strip can redraw the open tab for a moment without its tabindex, and the browser then drops the
    focus to the page's body (app.py's focus guard). The tab gets the focus back once it can take it, while a tab left
    in the ordinary way (its tabindex kept: a click elsewhere) keeps the focus where the visitor put it."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    robot.settle(page)
    tab_to(page, "view_tab__en")
    focused_tab = "() => document.activeElement.getAttribute('role') === 'tab'"
    assert page.evaluate(focused_tab)

    dropped = page.evaluate(
        """() => new Promise(done => {
            const tab = document.activeElement;
            const index = tab.getAttribute('tabindex');
            tab.removeAttribute('tabindex');  // what the redraw does: the browser moves the focus to the body
            const lost = document.activeElement === document.body;
            requestAnimationFrame(() => { tab.setAttribute('tabindex', index); done(lost); });
        })"""
    )
    assert dropped  # the drop happened, as in Streamlit's redraw
    page.wait_for_function(focused_tab, timeout=5_000)

    page.evaluate("() => document.activeElement.blur()")  # left with its tabindex: no guard
    page.wait_for_timeout(300)
    assert page.evaluate("() => document.activeElement === document.body")
    visit.assert_quiet()
