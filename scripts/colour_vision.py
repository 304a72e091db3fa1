"""How far apart each chart's colours stay for every reader: per palette, chart and vision (normal, and simulated
deuteranopia, protanopia and tritanopia), the smallest CAM02-UCS ΔE between two colours the chart shows together
(:func:`transformer.plots.palettes.smallest_differences`). Needs colorspacious (the ``dev`` extra).

    python scripts/colour_vision.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
if str(REPOSITORY) not in sys.path:  # run as a script: scripts/ is sys.path[0]
    sys.path.insert(0, str(REPOSITORY))

from transformer.plots.palettes import colour_vision_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(colour_vision_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
