"""Make the README's screenshots with the shipped model: ``docs/screenshot.png`` (the main page translating a
sentence), with ``--classroom`` ``docs/classroom.png`` (Attention, step by step: a cross-attention head's softmax
step), with ``--whatif`` ``docs/whatif.png`` (What if: the beam search's tree).

Runs the browser test that draws the page and saves it whole (``tests/test_browser.py``), with
``SCREENSHOT_PATH`` (``CLASSROOM_SCREENSHOT_PATH``, ``WHATIF_SCREENSHOT_PATH``) pointing at the output. Needs the
shipped model in ``checkpoints/en-de-small``, Playwright and Debian's Chromium (``/usr/bin/chromium``).

    python benchmarks/screenshot.py [--classroom | --whatif] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
SHIPPED = REPOSITORY / "checkpoints" / "en-de-small"
TESTS = {
    "main": (
        "tests/test_browser.py::test_typed_sentence_is_translated_with_its_heatmap",
        "SCREENSHOT_PATH",
        "screenshot.png",
    ),
    "classroom": (
        "tests/test_browser.py::test_the_classroom_page_walks_through_a_head",
        "CLASSROOM_SCREENSHOT_PATH",
        "classroom.png",
    ),
    "whatif": (
        "tests/test_browser.py::test_the_what_if_page_draws_the_beam_search_tree",
        "WHATIF_SCREENSHOT_PATH",
        "whatif.png",
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--classroom", action="store_true", help="the step-by-step page instead of the main page")
    which.add_argument("--whatif", action="store_true", help="the What if page's beam search tab")
    parser.add_argument("--out", type=Path, default=None, help="default: docs/NAME.png for the page")
    args = parser.parse_args()
    test, variable, name = TESTS["classroom" if args.classroom else "whatif" if args.whatif else "main"]
    if not (SHIPPED / "config.json").is_file():
        # Without it the test would fall back to its tiny synthetic model, which is no picture for the README.
        print(f"no shipped model in {SHIPPED}: export one as the README's Training section describes", file=sys.stderr)
        return 1
    out = (args.out or REPOSITORY / "docs" / name).resolve()
    started = time.time()
    environment = {**os.environ, variable: str(out)}
    result = subprocess.run([sys.executable, "-m", "pytest", test, "-q", "-rs"], cwd=REPOSITORY, env=environment)
    # A skipped test (no Playwright or Chromium) exits 0 too, so check that the picture was written.
    if result.returncode != 0 or not out.is_file() or out.stat().st_mtime < started:
        print(f"no screenshot written to {out}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
