"""``python -m transformer paper_figures --checkpoint DIR --out DIR``: the paper's attention figures (appendix Figures
3–5) for any checkpoint, as standalone HTML (and PNG when a Chromium is installed) plus ``metrics.json`` with every
number the figures page shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.heads import dev_sample
from transformer.analysis.held_out import anaphora_held_out, dictionary_held_out
from transformer.analysis.score_tables import HeadScoreTables, head_score_tables
from transformer.cli import command_parser, load_or_report
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.formats.runs import portable_path
from transformer.plots.paper import figure_page, paper_figures

DICTIONARY_SAMPLE = 50  # newstest2013 sentences the dictionary-alignment head is chosen and scored on


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def html_to_png(browser: str, html: Path, png: Path, width: int, height: int) -> bool:
    """Screenshot a standalone figure with a headless Chromium; False if it could not."""
    with tempfile.TemporaryDirectory() as profile:
        command = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            "--virtual-time-budget=5000",
            html.resolve().as_uri(),
        ]
        try:
            subprocess.run(command, capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return png.exists() and png.stat().st_size > 0


def summaries(metrics: dict) -> dict[int, str]:
    """One sentence per figure saying what the loaded model shows, in numbers."""
    drawn = metrics["drawn"]
    layer = drawn["layer"]
    making, its = metrics["figure_3"], metrics["figure_4"]
    text = {}
    if "error" in making:
        text[3] = f"not measurable: {making['error']}"
    else:
        per_layer = making["heads_on_more_difficult_per_layer"]
        text[3] = (
            f"{per_layer[layer]} head(s) of layer {layer + 1} put their largest non-self weight from “making” on "
            f"“more” or “difficult”; the best layer is {making['best_layer_making'] + 1} with "
            f"{making['making_heads_on_more_difficult']}."
        )
    if "error" in its:
        text[4] = f"not measurable: {its['error']}"
    else:
        text[4] = (
            f"the strongest “its” head is layer {its['best_layer_its'] + 1}, head {its['best_head_its'] + 1}: "
            f"weight {its['its_to_law']:.2f} on “Law” and {its['its_to_application']:.2f} on “application”."
        )
    heads = drawn["figure_5_heads"]
    text[5] = f"layer {layer + 1}: the sharpest head ({heads[0] + 1}) and the one most unlike it ({heads[1] + 1})."
    return text


def write_figures(
    loaded: LoadedCheckpoint,
    out: Path,
    one_based: bool = True,
    png: bool = True,
    scores: HeadScoreTables | None = None,
) -> dict:
    """Write figure_3/4/5.html (+ .png when a Chromium is installed) and metrics.json; returns the metrics."""
    out.mkdir(parents=True, exist_ok=True)
    figures, metrics = paper_figures(loaded, one_based)
    if scores is not None:
        metrics["head_scores"] = scores.as_dict()
    metrics["anaphora_held_out"] = anaphora_held_out(loaded)
    metrics["dictionary_held_out"] = dictionary_held_out(
        loaded, dev_sample(DICTIONARY_SAMPLE, loaded.config.source_language)[1]
    )
    metrics["checkpoint"] = portable_path(str(loaded.path))  # no folder of the machine that drew the figures
    text = summaries(metrics)
    pages = {
        3: [figures["figure_3"]],
        4: [figures["figure_4_top"], figures["figure_4_bottom"]],
        5: [figures["figure_5_a"], figures["figure_5_b"]],
    }
    browser = find_browser() if png else None
    written = []
    for number, panels in pages.items():
        page = out / f"figure_{number}.html"
        page.write_text(figure_page(number, panels, text[number]), encoding="utf-8")
        written.append(page.name)
        if browser:
            height = sum(int(panel.layout.height or 600) for panel in panels) + 260
            if html_to_png(browser, page, out / f"figure_{number}.png", 1000, height):
                written.append(f"figure_{number}.png")
    metrics["summaries"] = {str(number): sentence for number, sentence in text.items()}
    metrics["files"] = written
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return metrics


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("paper_figures", __doc__)
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the figures and metrics.json")
    parser.add_argument("--zero-based", action="store_true", help="read the paper's 'layer 5' as 0-based")
    parser.add_argument("--no-png", action="store_true", help="write HTML only, even if Chromium is installed")
    parser.add_argument(
        "--sample", type=int, default=100, help="dev sentences for the per-head score tables (0 = skip them)"
    )
    args = parser.parse_args(argv)
    loaded = load_or_report(args.checkpoint)
    if loaded is None:
        return 1
    scores = head_score_tables(loaded, sample=args.sample) if args.sample > 0 else None
    metrics = write_figures(loaded, args.out, one_based=not args.zero_based, png=not args.no_png, scores=scores)
    print(f"wrote {', '.join(metrics['files'])} and metrics.json to {args.out}")
    for key in (
        "making_heads_on_more_difficult",
        "best_layer_making",
        "its_to_law",
        "its_to_application",
        "best_layer_its",
        "best_head_its",
    ):
        print(f"  {key}: {metrics[key]}")
    return 0
