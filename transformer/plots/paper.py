"""The paper's attention figures (appendix Figures 3–5) drawn in the paper's style, and a command line that writes
them for any checkpoint.

``python -m transformer.plots.paper --checkpoint DIR --out DIR`` writes the three figures as standalone HTML (and
PNG when a Chromium is installed) plus ``metrics.json`` with every number the figures page shows. What is measured,
and how each figure's heads are chosen: :mod:`transformer.analysis.figures`.
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go

from transformer.analysis.figures import (
    FIGURES,
    SentenceAttention,
    anaphora_heads,
    figure_metrics,
    label,
    making_heads,
    paper_heads,
    paper_layer,
    query_position,
    sentence_attention,
)
from transformer.analysis.heads import head_score_tables
from transformer.checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint, portable_path
from transformer.decode import translate
from transformer.i18n import DEFAULT_LANGUAGE, message
from transformer.plots.attention import token_lines


# ------------------------------------------------------------------------------------------------ the figures
def figure_3(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int] | None = None,
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> go.Figure:
    """Only the attentions of "making", for ``heads`` (None = all heads of the layer)."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)
    return token_lines(
        weights[layer],
        tokens,
        tokens,
        heads=None if heads is None else list(heads),
        query_index=query_position(tokens, "making"),
        title=message(language, "plot_paper.figure3", layer=layer + first),
        first=first,
        language=language,
    )


def figure_4(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int],
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> tuple[go.Figure, go.Figure]:
    """Top: the full pattern of ``heads[0]``; bottom: only "its", for ``heads`` (two heads in the paper)."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)
    names = ", ".join(str(head + first) for head in heads)
    top = message(language, "plot_paper.figure4_top", layer=layer + first, head=heads[0] + first)
    bottom = message(language, "plot_paper.figure4_bottom", layer=layer + first, heads=names)
    its = query_position(tokens, "its")
    return (
        token_lines(weights[layer], tokens, tokens, heads=[heads[0]], title=top, first=first, language=language),
        token_lines(
            weights[layer],
            tokens,
            tokens,
            heads=list(heads),
            query_index=its,
            title=bottom,
            first=first,
            language=language,
        ),
    )


def figure_5(
    attention: SentenceAttention,
    layer: int,
    heads: Sequence[int],
    first: int = 1,
    language: str = DEFAULT_LANGUAGE,
    **view,
) -> list[go.Figure]:
    """The full patterns of ``heads``, one panel each."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)
    panels = []
    for head in heads:
        title = message(language, "plot_paper.figure5", layer=layer + first, head=head + first)
        panels.append(
            token_lines(weights[layer], tokens, tokens, heads=[head], title=title, first=first, language=language)
        )
    return panels


# ------------------------------------------------------------------------------------------------------ the CLI
def paper_figures(loaded: LoadedCheckpoint, one_based: bool = True) -> tuple[dict[str, go.Figure], dict]:
    """The three figures on the paper's layer (heads chosen as the module docstring says) and all the numbers."""
    attention = {number: sentence_attention(loaded, figure) for number, figure in FIGURES.items()}
    metrics = figure_metrics(attention)
    config = loaded.config
    layer = paper_layer(config.encoder_layers, one_based)
    figures: dict[str, go.Figure] = {}
    making = metrics["figure_3"]
    chosen_making = making_heads(making, layer) if "error" not in making else []
    figures["figure_3"] = figure_3(attention[3], layer, chosen_making or None)
    its = metrics["figure_4"]
    chosen_its = anaphora_heads(its, layer) if "error" not in its else paper_heads(config.num_heads, one_based)
    figures["figure_4_top"], figures["figure_4_bottom"] = figure_4(attention[4], layer, chosen_its)
    chosen_structure = metrics["figure_5"]["structure_heads_per_layer"][layer]
    figures["figure_5_a"], figures["figure_5_b"] = figure_5(attention[5], layer, chosen_structure)
    translations = translate(loaded.model, loaded.tokenizer, [FIGURES[3].sentence, FIGURES[4].sentence])
    metrics["drawn"] = {
        "layer": layer,
        "layer_numbering": "1-based" if one_based else "0-based",
        "figure_3_heads": chosen_making,
        "figure_4_heads": chosen_its,
        "figure_5_heads": chosen_structure,
        "note": "layer and head indices in this file are 0-based; figure titles count from 1",
    }
    metrics["translations"] = {
        str(number): {"source": figure.sentence, "ours": translation, "reference": figure.reference}
        for (number, figure), translation in zip([(3, FIGURES[3]), (4, FIGURES[4])], translations, strict=True)
    }
    return figures, metrics


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
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--window-size={width},{height}", f"--screenshot={png}", "--virtual-time-budget=5000",
            html.resolve().as_uri(),
        ]  # fmt: skip
        try:
            subprocess.run(command, capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return png.exists() and png.stat().st_size > 0


def figure_page(number: int, panels: Sequence[go.Figure], summary: str) -> str:
    """One standalone HTML page (plotly.js inline, no network) with a paper figure's panels and caption."""
    figure = FIGURES[number]
    config = {"displaylogo": False, "displayModeBar": False}
    parts = [
        panel.to_html(full_html=False, include_plotlyjs=index == 0, config=config) for index, panel in enumerate(panels)
    ]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>Figure {number}: {html.escape(figure.title)}</title>"
        "<style>body{font-family:sans-serif;max-width:960px;margin:1em auto;color:#222}"
        "figcaption{margin:0.5em 0 1.5em;color:#444}</style></head><body>"
        f"<h2>Figure {number}: {html.escape(figure.title)}</h2>"
        + "".join(parts)
        + f"<figcaption><b>Paper:</b> {html.escape(figure.caption)}<br><b>This model:</b> {html.escape(summary)}"
        "</figcaption></body></html>"
    )


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
    loaded: LoadedCheckpoint, out: Path, one_based: bool = True, png: bool = True, scores: dict | None = None
) -> dict:
    """Write figure_3/4/5.html (+ .png when a Chromium is installed) and metrics.json; returns the metrics."""
    out.mkdir(parents=True, exist_ok=True)
    figures, metrics = paper_figures(loaded, one_based)
    if scores is not None:
        metrics["head_scores"] = scores
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
    parser = argparse.ArgumentParser(prog="python -m transformer.plots.paper", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the figures and metrics.json")
    parser.add_argument("--zero-based", action="store_true", help="read the paper's 'layer 5' as 0-based")
    parser.add_argument("--no-png", action="store_true", help="write HTML only, even if Chromium is installed")
    parser.add_argument(
        "--sample", type=int, default=100, help="dev sentences for the per-head score tables (0 = skip them)"
    )
    args = parser.parse_args(argv)
    try:
        loaded = load_checkpoint(args.checkpoint)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    scores = head_score_tables(loaded, sample=args.sample) if args.sample > 0 else None
    metrics = write_figures(loaded, args.out, one_based=not args.zero_based, png=not args.no_png, scores=scores)
    print(f"wrote {', '.join(metrics['files'])} and metrics.json to {args.out}")
    for key in ("making_heads_on_more_difficult", "best_layer_making", "its_to_law", "its_to_application",
                "best_layer_its", "best_head_its"):  # fmt: skip
        print(f"  {key}: {metrics[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
