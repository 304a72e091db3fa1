"""Make the README's screenshot, ``docs/screenshot.png``: the main page translating a sentence with the shipped model.

Runs the browser test that types a sentence, waits for the translation and its heatmap, and saves the whole page
(``tests/test_browser.py``), with ``SCREENSHOT_PATH`` pointing at the output. Needs the shipped model in
``checkpoints/en-de-small``, Playwright and Debian's Chromium (``/usr/bin/chromium``).

    python benchmarks/screenshot.py [--out docs/screenshot.png]
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
TEST = "tests/test_browser.py::test_typed_sentence_is_translated_with_its_heatmap"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPOSITORY / "docs" / "screenshot.png")
    args = parser.parse_args()
    if not (SHIPPED / "config.json").is_file():
        # Without it the test would fall back to its tiny synthetic model, which is no picture for the README.
        print(f"no shipped model in {SHIPPED}: export one as the README's Training section describes", file=sys.stderr)
        return 1
    out = args.out.resolve()
    started = time.time()
    environment = {**os.environ, "SCREENSHOT_PATH": str(out)}
    result = subprocess.run([sys.executable, "-m", "pytest", TEST, "-q", "-rs"], cwd=REPOSITORY, env=environment)
    # A skipped test (no Playwright or Chromium) exits 0 too, so check that the picture was written.
    if result.returncode != 0 or not out.is_file() or out.stat().st_mtime < started:
        print(f"no screenshot written to {out}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
