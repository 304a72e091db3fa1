"""axe-core over every page and tab of the app in Chromium, in the light and the dark theme.

It starts ``streamlit run app.py`` (or uses ``--origin``), opens each page of the sidebar in Debian's Chromium with
the operating system's colour scheme set to light, then to dark, opens each of the page's tabs in turn and runs
axe-core (the copy bundled with the ``axe-playwright-python`` package: nothing is fetched) on what the visitor then
sees, with the WCAG 2.0/2.1/2.2 A and AA rules and axe's best practices. Each finding is reported once, with the
views it was seen in; findings in markup that Streamlit itself draws, which the app cannot change, are matched
against :data:`STREAMLIT_OWN` and listed apart with their upstream issue. Exit status 1 when the app's own markup
has a critical or serious finding::

    python benchmarks/accessibility.py
    python benchmarks/accessibility.py --themes dark --pages explore what_if --report /tmp/axe.json

docs/accessibility.md reports the last run; ``tests/test_accessibility.py`` runs the same audit in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
if str(REPOSITORY) not in sys.path:  # run as a script: benchmarks/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS, serving  # noqa: E402
from benchmarks.robot_visitor import PAGES, settle  # noqa: E402

THEMES = ("light", "dark")
VIEWPORT = {"width": 1280, "height": 800}
RULE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
SERIOUS = ("critical", "serious")
TAB = '[data-testid="stMain"] [role="tab"]'


@dataclass(frozen=True)
class StreamlitOwn:
    """A finding in markup Streamlit draws the same way whatever the app asks: the axe rule, a piece of the HTML that
    marks the element, and the upstream issue that tracks it."""

    rule: str
    marker: str
    issue: str
    what: str


# What the audits find in Streamlit's own markup: each is something the app cannot change through Streamlit's API.
STREAMLIT_OWN: tuple[StreamlitOwn, ...] = (
    StreamlitOwn(
        "scrollable-region-focusable",
        'class="katex-display"',
        "https://github.com/streamlit/streamlit/pull/10071",
        "A display formula (st.latex) sits in a sideways scroll box without tabindex; KaTeX's matrices overflow it "
        "by a pixel or two, which makes the box scrollable and unreachable by keyboard (nothing is hidden).",
    ),
)


@dataclass
class Finding:
    rule: str
    impact: str
    help: str
    target: str  # axe's CSS selector of the element
    html: str  # the element's opening markup, shortened
    summary: str  # what axe says to fix
    seen: list[str] = field(default_factory=list)  # theme:page/tab where it was found
    streamlit: str | None = None  # the upstream issue when the markup is Streamlit's own

    @property
    def serious(self) -> bool:
        return self.impact in SERIOUS


def streamlit_issue(rule: str, html: str) -> str | None:
    for own in STREAMLIT_OWN:
        if own.rule == rule and own.marker in html:
            return own.issue
    return None


def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


def run_axe(page) -> list[dict]:
    """axe-core's violations on what ``page`` shows now."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(axe_script())
    options = {"runOnly": {"type": "tag", "values": RULE_TAGS}, "resultTypes": ["violations"]}
    return page.evaluate("options => axe.run(document, options).then(results => results.violations)", options)


def record(findings: dict[tuple[str, str], Finding], violations: list[dict], where: str) -> None:
    for violation in violations:
        for node in violation["nodes"]:
            target = " ".join(map(str, node["target"]))
            html = " ".join(node["html"].split())[:300]
            # Streamlit's generated class names differ from build to build: the element's markup names it better.
            key = (violation["id"], html)
            finding = findings.get(key)
            if finding is None:
                finding = findings[key] = Finding(
                    violation["id"],
                    violation["impact"] or "minor",
                    violation["help"],
                    target,
                    html,
                    " ".join(node.get("failureSummary", "").split())[:400],
                    streamlit=streamlit_issue(violation["id"], html),
                )
            finding.seen.append(where)


def tab_names(page) -> list[str]:
    return [name.strip() for name in page.locator(TAB).all_inner_texts()]


@dataclass
class Audit:
    findings: list[Finding]
    views: list[str]  # theme:page or theme:page/tab, each audited once


def audit(browser, origin: str, pages: list[str], themes: tuple[str, ...] = THEMES) -> Audit:
    """Every page in ``pages`` (names as in :data:`~benchmarks.robot_visitor.PAGES`) and each of its tabs, in each
    theme: the findings, each once, with where it was seen, and the views audited."""
    paths = {name: path for path, name in PAGES.items()}
    findings: dict[tuple[str, str], Finding] = {}
    views: list[str] = []

    def check(page, where: str) -> None:
        record(findings, run_axe(page), where)
        views.append(where)

    for theme in themes:
        context = browser.new_context(viewport=VIEWPORT, color_scheme=theme)
        try:
            page = context.new_page()
            for name in pages:
                page.goto(f"{origin}/{paths[name]}")
                settle(page)
                check(page, f"{theme}:{name}")
                for tab in tab_names(page)[1:]:  # the first is open already
                    page.locator(TAB, has_text=tab).first.click()
                    settle(page)
                    check(page, f"{theme}:{name}/{tab}")
        finally:
            context.close()
    return Audit(list(findings.values()), views)


def describe(finding: Finding) -> str:
    where = ", ".join(finding.seen[:4]) + (f" (+{len(finding.seen) - 4} more)" if len(finding.seen) > 4 else "")
    owner = f"Streamlit's own ({finding.streamlit})" if finding.streamlit else "the app's"
    return (
        f"{finding.impact:8} {finding.rule}: {finding.help} — {owner}\n"
        f"         {finding.html}\n         {finding.summary}\n         seen: {where}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = sorted(set(PAGES.values()))
    parser.add_argument("--pages", nargs="+", choices=names, default=names)
    parser.add_argument("--themes", nargs="+", choices=THEMES, default=list(THEMES))
    parser.add_argument("--checkpoint", help="checkpoint the server opens (default: the shipped model)")
    parser.add_argument("--origin", help="an app already running (default: start one on a free port)")
    parser.add_argument("--report", type=Path, help="write every finding as JSON here")
    arguments = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with (
        nullcontext((arguments.origin, None)) if arguments.origin else serving(arguments.checkpoint) as (origin, _),
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            done = audit(browser, origin, arguments.pages, tuple(arguments.themes))
        finally:
            browser.close()
    findings = done.findings
    order = {impact: rank for rank, impact in enumerate(("critical", "serious", "moderate", "minor"))}
    findings.sort(key=lambda finding: (finding.streamlit is not None, order.get(finding.impact, 9), finding.rule))
    for finding in findings:
        print(describe(finding))
    own = [finding for finding in findings if finding.serious and finding.streamlit is None]
    print(
        f"{len(findings)} findings ({len(own)} critical or serious in the app's markup, "
        f"{sum(f.streamlit is not None for f in findings)} in Streamlit's own) over {len(done.views)} views of "
        f"{len(arguments.pages)} pages, themes {', '.join(arguments.themes)}, {time.monotonic() - started:.0f} s"
    )
    if arguments.report:
        arguments.report.write_text(json.dumps([asdict(f) for f in findings], indent=1, ensure_ascii=False))
    return 1 if own else 0


if __name__ == "__main__":
    sys.exit(main())
