"""Accessibility in Chromium: axe-core over every page and tab in the light and the dark theme, as
``benchmarks/accessibility.py`` runs it; the browser and the server are the browser tests' (tests/test_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.accessibility import STREAMLIT_OWN, THEMES, Audit, audit, describe, record, run_axe
from benchmarks.robot_visitor import PAGES, settle
from pages.explore import TABS as EXPLORE_TABS
from tests.conftest import needs_browser

pytestmark = needs_browser

DOCS = Path(__file__).resolve().parent.parent / "docs" / "accessibility.md"


@pytest.fixture(scope="module")
def audited(browser, server: str) -> Audit:
    return audit(browser, server, sorted(set(PAGES.values())), THEMES)


def test_axe_finds_no_critical_or_serious_problem_in_the_apps_own_markup(audited: Audit):
    own = [describe(finding) for finding in audited.findings if finding.serious and finding.streamlit is None]
    assert own == [], "\n".join(own)


def test_every_page_and_every_tab_was_audited_in_both_themes(audited: Audit):
    for theme in THEMES:
        pages = {view.split(":", 1)[1].split("/")[0] for view in audited.views if view.startswith(f"{theme}:")}
        assert pages == set(PAGES.values())
        explore_tabs = [view for view in audited.views if view.startswith(f"{theme}:explore/")]
        assert len(explore_tabs) == len(EXPLORE_TABS) - 1  # the first tab is audited as the page itself


def test_the_audit_reports_what_a_screen_reader_or_a_weak_eye_would_miss(browser, server: str):
    # An image without a text alternative and pale grey text, added to the app's own page: both must be reported as
    # the app's (so the audit above could fail), with where they were seen.
    page = browser.new_page()
    try:
        page.goto(f"{server}/why_self_attention")
        settle(page)
        page.evaluate(
            """() => {
                const main = document.querySelector('[data-testid="stMainBlockContainer"]');
                main.insertAdjacentHTML('afterbegin',
                    '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" id="no-alt">'
                    + '<p id="pale" style="color:#bbbbbb;background:#ffffff">too pale to read</p>');
            }"""
        )
        findings: dict = {}
        record(findings, run_axe(page), "light:why_self_attention")
    finally:
        page.close()
    reported = {finding.rule: finding for finding in findings.values() if finding.streamlit is None}
    assert reported["image-alt"].serious and 'id="no-alt"' in reported["image-alt"].html
    pale = [f for f in findings.values() if f.rule == "color-contrast" and 'id="pale"' in f.html]
    assert pale and pale[0].serious and pale[0].seen == ["light:why_self_attention"]


def test_streamlits_own_findings_are_documented_with_their_upstream_issue():
    docs = DOCS.read_text(encoding="utf-8")
    for own in STREAMLIT_OWN:
        assert own.issue in docs and own.rule in docs
