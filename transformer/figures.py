"""The paper's attention figures (appendix Figures 3–5) redrawn on any checkpoint, with the numbers behind them.

All three figures show encoder self-attention of two newstest2013 sentences in layer 5 of 6. The paper does not say
whether its layer and head numbers count from 0 or 1, so :func:`paper_layer` and :func:`paper_heads` take that as an
argument. For each figure the head(s) of the loaded model that match it best are found automatically:

- Figure 3 (long-distance dependency): the heads whose largest non-self weight from "making" is on "more" or
  "difficult"; the best layer is the one with most such heads.
- Figure 4 (anaphora): the head with the largest weight from "its" to "Law" or "application", and the runner-up head
  of the same layer (the paper shows two heads).
- Figure 5 (sentence structure): two sharp heads of the layer whose full patterns differ most.

``python -m transformer.figures --checkpoint DIR --out DIR`` writes the three figures as standalone HTML (and PNG
when a Chromium is installed) plus ``metrics.json`` with every number the figures page shows.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from transformer.analysis import (
    SPECIAL_TOKENS,
    encoder_attention,
    entropy_bits,
    its_metrics,
    making_metrics,
    merge_matrix,
    merge_tokens,
    word_groups,
)
from transformer.checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint
from transformer.decode import translate
from transformer.heads import head_score_tables
from transformer.viz import token_lines

PAPER_LAYER = 5  # "layer 5 of 6", as printed
PAPER_ANAPHORA_HEADS = (5, 6)  # Figure 4, as printed


@dataclass(frozen=True)
class PaperFigure:
    number: int
    title: str
    sentence: str  # newstest2013 source line
    reference: str  # its German reference, the same line of newstest2013.de
    dev_line: int  # 1-based line in newstest2013
    pads: int  # <pad> tokens drawn after <EOS> in the paper
    caption: str  # the paper's caption


MAKING_SENTENCE = (
    "It is in this spirit that a majority of American governments have passed new laws since 2009 making the "
    "registration or voting process more difficult."
)
LAW_SENTENCE = (
    "The Law will never be perfect, but its application should be just - this is what we are missing, in my opinion."
)
FIGURES = {
    3: PaperFigure(
        3,
        "Long-distance dependency: “making … more difficult”",
        MAKING_SENTENCE,
        "In diesem Sinne hat die Mehrheit der amerikanischen Regierungen seit 2009 neue Gesetze verkündet, die das "
        "Verfahren für die Registrierung oder den Urnengang erschweren.",
        8,
        6,
        "An example of the attention mechanism following long-distance dependencies in the encoder self-attention "
        "in layer 5 of 6. Many of the attention heads attend to a distant dependency of the verb ‘making’, "
        "completing the phrase ‘making…more difficult’. Attentions here shown only for the word ‘making’. Different "
        "colors represent different heads.",
    ),
    4: PaperFigure(
        4,
        "Anaphora resolution: “its” → “Law”, “application”",
        LAW_SENTENCE,
        "Das Gesetz wird niemals vollkommen sein, aber es muss richtig angewendet werden - und das ist das, was bei "
        "uns meines Erachtens fehlt.",
        1053,
        1,
        "Two attention heads, also in layer 5 of 6, apparently involved in anaphora resolution. Top: Full "
        "attentions for head 5. Bottom: Isolated attentions from just the word ‘its’ for attention heads 5 and 6. "
        "Note that the attentions are very sharp for this word.",
    ),
    5: PaperFigure(
        5,
        "Sentence structure: two heads, two jobs",
        LAW_SENTENCE,
        "Das Gesetz wird niemals vollkommen sein, aber es muss richtig angewendet werden - und das ist das, was bei "
        "uns meines Erachtens fehlt.",
        1053,
        1,
        "Many of the attention heads exhibit behaviour that seems related to the structure of the sentence. We give "
        "two such examples above, from two different heads from the encoder self-attention at layer 5 of 6. The "
        "heads clearly learned to perform different tasks.",
    ),
}


def paper_layer(num_layers: int, one_based: bool = True) -> int:
    """The 0-based index of the paper's "layer 5" under either reading, clipped to the model's layers."""
    return min(num_layers - 1, PAPER_LAYER - 1 if one_based else PAPER_LAYER)


def paper_heads(num_heads: int, one_based: bool = True) -> list[int]:
    """0-based indices of Figure 4's "heads 5 and 6" under either reading, clipped to the model's heads."""
    return [min(num_heads - 1, head - 1 if one_based else head) for head in PAPER_ANAPHORA_HEADS]


# ----------------------------------------------------------------------------------------------- one sentence
@dataclass
class SentenceAttention:
    """Encoder self-attention of one sentence: pieces (with </s> and the paper's <pad>s) and [L, H, S, S]."""

    tokens: list[str]
    weights: np.ndarray

    def view(self, words: bool = True, specials: bool = True) -> tuple[list[str], np.ndarray]:
        """Tokens and weights as drawn: pieces merged into words (see :func:`~transformer.analysis.merge_matrix`)
        and/or </s> and <pad> left out (their rows and columns dropped)."""
        tokens, weights = self.tokens, self.weights
        if words:
            groups = word_groups(tokens)
            tokens, weights = merge_tokens(tokens, groups), merge_matrix(weights, groups, groups)
        if not specials:
            keep = [i for i, token in enumerate(tokens) if token not in SPECIAL_TOKENS]
            tokens, weights = [tokens[i] for i in keep], weights[..., keep, :][..., keep]
        return list(tokens), weights


def sentence_attention(loaded: LoadedCheckpoint, figure: PaperFigure) -> SentenceAttention:
    tokens, weights = encoder_attention(loaded.model, loaded.tokenizer, figure.sentence, pads=figure.pads)
    return SentenceAttention(tokens, weights)


def label(tokens: Sequence[str]) -> list[str]:
    """The paper writes </s> as <EOS>."""
    return ["<EOS>" if token == "</s>" else token for token in tokens]


def query_position(tokens: Sequence[str], word: str) -> int | None:
    """Position of a word in a drawn token list (word view: the word itself; piece view: its first piece)."""
    for position, token in enumerate(tokens):
        if token.lstrip("▁").strip() == word:
            return position
    groups = word_groups(tokens)
    merged = merge_tokens(tokens, groups)
    for group, text in zip(groups, merged, strict=True):
        if text == word:
            return group[0]
    return None


# ------------------------------------------------------------------------------------------------ figure choices
def structure_heads(layer_weights: np.ndarray, tokens: Sequence[str], candidates: int = 4) -> list[int]:
    """Figure 5's two heads in one layer [H, S, S]: the sharpest head (lowest mean entropy over real queries) and,
    among the next sharpest ``candidates``, the one whose pattern differs most from it (mean total variation)."""
    layer_weights = np.asarray(layer_weights, dtype=np.float64)
    real = np.array([token != "<pad>" for token in tokens])
    rows = layer_weights[:, real]  # [H, Q, S]
    entropy = entropy_bits(rows).mean(-1)
    order = [int(head) for head in np.argsort(entropy, kind="stable")]
    first = order[0]
    others = order[1 : 1 + candidates] or order[:1]
    distance = [0.5 * np.abs(rows[head] - rows[first]).sum(-1).mean() for head in others]
    return [first, others[int(np.argmax(distance))]]


def anaphora_heads(its: dict[str, object], layer: int) -> list[int]:
    """Figure 4's two heads in one layer: the two with the largest weight from "its" to "Law" or "application"."""
    strength = np.maximum(np.array(its["its_to_law_per_head"]), np.array(its["its_to_application_per_head"]))[layer]
    return [int(head) for head in np.argsort(-strength, kind="stable")[:2]]


def making_heads(making: dict[str, object], layer: int) -> list[int]:
    """Figure 3's heads in one layer: those whose strongest non-self word from "making" is "more" or "difficult"."""
    strongest = making["strongest_word_from_making"][layer]
    return [head for head, word in enumerate(strongest) if word in ("more", "difficult")]


def figure_metrics(attention: dict[int, SentenceAttention]) -> dict[str, object]:
    """Every number of the three figures, from the attention of the two sentences (pieces with specials)."""
    metrics: dict[str, object] = {}
    making_attention, law_attention = attention[3], attention[4]
    try:
        making = making_metrics(making_attention.weights, making_attention.tokens)
    except ValueError as error:  # a tokenizer that splits the sentence differently
        making = {"error": str(error)}
    try:
        its = its_metrics(law_attention.weights, law_attention.tokens)
    except ValueError as error:
        its = {"error": str(error)}
    metrics.update(
        making_heads_on_more_difficult=making.get("making_heads_on_more_difficult"),
        best_layer_making=making.get("best_layer_making"),
        its_to_law=its.get("its_to_law"),
        its_to_application=its.get("its_to_application"),
        best_layer_its=its.get("best_layer_its"),
        best_head_its=its.get("best_head_its"),
        figure_3=making,
        figure_4=its,
    )
    num_layers = law_attention.weights.shape[0]
    metrics["figure_5"] = {
        "structure_heads_per_layer": [
            structure_heads(law_attention.weights[layer], law_attention.tokens) for layer in range(num_layers)
        ]
    }
    return metrics


# ------------------------------------------------------------------------------------------------ the figures
def figure_3(
    attention: SentenceAttention, layer: int, heads: Sequence[int] | None = None, first: int = 1, **view
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
        title=f"Figure 3 — encoder layer {layer + first}: attention from “making”",
        first=first,
    )


def figure_4(
    attention: SentenceAttention, layer: int, heads: Sequence[int], first: int = 1, **view
) -> tuple[go.Figure, go.Figure]:
    """Top: the full pattern of ``heads[0]``; bottom: only "its", for ``heads`` (two heads in the paper)."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)
    names = ", ".join(str(head + first) for head in heads)
    top = f"Figure 4 (top) — layer {layer + first}, head {heads[0] + first}: full attention"
    bottom = f"Figure 4 (bottom) — layer {layer + first}, heads {names}: only “its”"
    its = query_position(tokens, "its")
    return (
        token_lines(weights[layer], tokens, tokens, heads=[heads[0]], title=top, first=first),
        token_lines(weights[layer], tokens, tokens, heads=list(heads), query_index=its, title=bottom, first=first),
    )


def figure_5(attention: SentenceAttention, layer: int, heads: Sequence[int], first: int = 1, **view) -> list[go.Figure]:
    """The full patterns of ``heads``, one panel each."""
    tokens, weights = attention.view(**view)
    tokens = label(tokens)
    panels = []
    for head in heads:
        title = f"Figure 5 — layer {layer + first}, head {head + first}: full attention"
        panels.append(token_lines(weights[layer], tokens, tokens, heads=[head], title=title, first=first))
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
    translations = translate(loaded.model, loaded.tokenizer, [FIGURES[3].sentence, FIGURES[4].sentence], beam_size=4)
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
    metrics["checkpoint"] = str(loaded.path)
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
    parser = argparse.ArgumentParser(prog="python -m transformer.figures", description=__doc__.split("\n\n")[0])
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
