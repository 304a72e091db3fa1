"""The one-file explorer (``python -m transformer export web``) in Chromium from ``file://``, every non-file request
refused: does it translate as the Python model does, and how fast?

    python benchmarks/web_explorer.py [--sentences 200] [--tokens 1000] [--file explorer.html] [--report out.json]

Measured on the first ``--sentences`` tatoeba_new sentences: the file's greedy and beam-4 translations against the
project's search (``translate_ids``, sources cut at the explorer's 96 tokens), and every attention map of the
translations both found against the Python model's teacher-forced pass over the same output. Token ids against the
Python tokenizer on ``--tokens`` sentences: tatoeba_new and newstest2014 sentences with hostile and unusual text among
them (scripts, emoji, bidirectional controls, NUL, 2,000 characters). Speed: open → ready (the model loaded), and the
median time for a 12-word sentence translated with both searches and every view drawn (the page's own path). Nothing
here is asserted: ``tests/test_web.py`` holds the thresholds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.app_server import CHROMIUM, CHROMIUM_ARGS
from transformer.analysis.alignment_choice import default_method
from transformer.features.web import MAX_SOURCE_TOKENS, export_web
from transformer.formats.checkpoint import LoadedCheckpoint, load_checkpoint
from transformer.search.decode import DEFAULT_DECODING, GREEDY, translate_ids

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "en-de" / "test"
HOSTILE = [
    "</script><img src=x onerror=alert(1)>",
    "Ich 😀 liebe 한국어 und 中文!",
    "tab\tbell\x07 nul\x00 end",
    "\u202eevil\u202c and \u2066isolated\u2069 text",
    "👩🏽‍💻 codes; 👍🏻👍🏿 🇩🇪 flags",
    "ﬁne ﬂowers, ＡＢＣ full width, ① circled",
    "e\u0301 combining, Å and Å",
    "مرحبا بالعالم and שלום",
    "Привет, мир! Γειά σου κόσμε.",
    "zero\u200bwidth\u200dspace",
    "   leading and trailing spaces   ",
    "line\nbreak\r\nand\u2028separator",
    "",
    "\u00a0",
    "a" * 300,
    "word " * 400,
    "Ünïcödé ßtraße — “quotes” ‘single’ …",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𝟙𝟚𝟛",
    "<unk> <s> </s> <pad> ▁ ▁▁",
    "\ufeffbyte order mark",
]


def sentences(name: str, count: int) -> list[str]:
    with open(DATA / f"{name}.en", encoding="utf-8") as lines:
        return [line.rstrip("\n") for _, line in zip(range(count), lines, strict=False)]


def token_sentences(count: int) -> list[str]:
    """``count`` sentences: every hostile one, the rest tatoeba_new and newstest2014 in turn."""
    everyday, news = sentences("tatoeba_new", count), sentences("newstest2014", count)
    ordinary = [s for pair in zip(everyday, news, strict=False) for s in pair]
    return HOSTILE + ordinary[: max(0, count - len(HOSTILE))]


def open_explorer(browser, path: Path, init_script: str | None = None, fragment: str = ""):
    """A fresh page (in a fresh browser context) on the explorer file, at ``#fragment`` if given, with every request
    that is not file:// refused; returns (page, seconds to ready, the refused requests)."""
    context = browser.new_context()
    if init_script:
        context.add_init_script(init_script)
    page = context.new_page()
    refused: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith("file:"):
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    page.route("**/*", route)
    started = time.perf_counter()
    page.goto(path.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
    if init_script is None:
        page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    return page, time.perf_counter() - started, refused


def page_ids(page, texts: Sequence[str]) -> list[list[int]]:
    return page.evaluate("(texts) => texts.map((text) => window.explorer.encodeIds(text))", list(texts))


def page_translation(page, text: str) -> dict:
    return page.evaluate(
        """async (text) => {
            const r = await window.explorer.translate(text);
            return {
              source: r.source.ids, beam: r.outputs.beam, greedy: r.outputs.greedy,
              encoder: Array.from(r.raw.encoder),
              beamMaps: {decoder: Array.from(r.raw.beam.decoder), cross: Array.from(r.raw.beam.cross)},
              greedyMaps: {decoder: Array.from(r.raw.greedy.decoder), cross: Array.from(r.raw.greedy.cross)},
            };
        }""",
        text,
    )


@torch.no_grad()
def attention_difference(loaded: LoadedCheckpoint, found: dict, search: str) -> float:
    """Largest difference between the page's maps of one translation and the Python model's teacher-forced pass."""
    model = loaded.model.eval()
    source = torch.tensor([found["source"]])
    target = torch.tensor([[loaded.config.bos_id, *found[search]]])
    out = model(source, target, need_weights=True)
    maps = found[f"{search}Maps"]
    pairs = (
        (out.encoder_attention, found["encoder"]),
        (out.decoder_attention, maps["decoder"]),
        (out.cross_attention, maps["cross"]),
    )
    return max(float(np.abs(reference.numpy().ravel() - np.asarray(mine)).max()) for reference, mine in pairs)


def measure(loaded: LoadedCheckpoint, page, texts: Sequence[str]) -> dict:
    """Agreement of the page's searches and maps with Python's on ``texts``."""
    sources, greedy = translate_ids(loaded.model, loaded.tokenizer, texts, GREEDY, max_tokens=MAX_SOURCE_TOKENS)
    _, beam = translate_ids(loaded.model, loaded.tokenizer, texts, DEFAULT_DECODING, max_tokens=MAX_SOURCE_TOKENS)
    same = {"source": 0, "greedy": 0, "beam": 0}
    differences, mismatches = [], []
    for index, text in enumerate(texts):
        found = page_translation(page, text)
        same["source"] += found["source"] == sources[index]
        for search, expected in (("greedy", greedy[index]), ("beam", beam[index])):
            if found[search] == expected:
                same[search] += 1
                differences.append(attention_difference(loaded, found, search))
            else:
                mismatches.append({"sentence": index, "search": search})
    return {
        "sentences": len(texts),
        "same_source_ids": same["source"],
        "same_greedy": same["greedy"],
        "same_beam": same["beam"],
        "largest_attention_difference": max(differences, default=0.0),
        "mismatches": mismatches,
    }


def speed(page, repeats: int = 15) -> dict:
    text = "The committee will publish its report on the new law before the end of next year."  # 16 words
    twelve = "My brother bought a small house near the old station last summer."  # 12 words
    page.evaluate("(text) => window.explorer.run(text)", text)  # warm up
    times = [page.evaluate("(text) => window.explorer.run(text)", twelve) for _ in range(repeats)]
    return {"twelve_word_sentence": twelve, "median_ms": round(statistics.median(times), 1), "runs": repeats}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--file", type=Path, default=None, help="an explorer file (default: export one now)")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--report", type=Path, default=None)
    arguments = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    loaded = load_checkpoint(arguments.checkpoint)
    with tempfile.TemporaryDirectory() as scratch:
        path = arguments.file
        export_seconds = None
        if path is None:
            started = time.perf_counter()
            path = export_web(loaded, Path(scratch) / "explorer.html", alignment=default_method(loaded).name)
            export_seconds = round(time.perf_counter() - started, 1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page, ready, refused = open_explorer(browser, path)
            texts = token_sentences(arguments.tokens)
            ids = page_ids(page, texts)
            same_ids = sum(found == loaded.tokenizer.encode(text) for found, text in zip(ids, texts, strict=True))
            report = {
                "file_mb": round(path.stat().st_size / 1e6, 1),
                "export_seconds": export_seconds,
                "open_to_ready_s": round(ready, 2),
                "model_load_ms": round(page.evaluate("window.explorer.readyMilliseconds"), 1),
                "token_ids_identical": f"{same_ids}/{len(texts)}",
                **measure(loaded, page, sentences("tatoeba_new", arguments.sentences)),
                "speed": speed(page),
                "refused_requests": refused,
                "chromium": browser.version,
            }
            browser.close()
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    if arguments.report:
        arguments.report.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
