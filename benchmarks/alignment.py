"""How far a cross-attention map can be read as a word alignment: AER of each reading against gold links, with a
statistical aligner beside it.

    python benchmarks/alignment.py [--checkpoint DIR] [--gold PREFIX] [--no-eflomal] [--markdown]

PREFIX.en / PREFIX.de hold the gold sentence pairs (words separated by spaces) and PREFIX.de-en.wa their links
(default: ``../shared/data/en-de/align/europarl_gold``). Printed: the usual reading (the rows that predict each
German word) and the shifted one (the rows that read it, Chen et al. 2020), each as the best layer average and the
best single head, every reading again with both directions agreeing, the gradient readings (each German piece's
saliency or input × gradient over the source, captum), the held-out reading of ``python -m transformer align
--choose`` (each half of the pairs aligned by the reading chosen on the other: the figure to report, since the best
of 220 readings on the same 50 pairs flatters itself), the same with the compound links the Alignment tab draws
dashed (:func:`transformer.analysis.word_alignment.compound_links`) and those links alone, and eflomal (``pip
install eflomal``, a dev dependency: IBM1 + HMM + fertility) trained on the lowercased, punctuation-split training
corpora plus the gold sentences, forward, reverse and intersected. Every AER has its 95% bootstrap interval over the
pairs; the held-out reading's paired difference from eflomal follows on standard error.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tables import print_table

from transformer.analysis import alignment_choice, intervals
from transformer.analysis import word_alignment as wa
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.data import DATA_ROOT, read_lines

GOLD = DATA_ROOT / "align" / "europarl_gold"
WORDS = re.compile(r"[\w'’-]+|[^\w\s]")  # words (with inner hyphens and apostrophes) and punctuation, as in the gold


def best_of(scores: dict[str, wa.Score], keep) -> str:
    return min((name for name in scores if keep(wa.Method.parse(name))), key=lambda name: scores[name].aer)


def attention_rows(loaded, gold: alignment_choice.Gold) -> tuple[list[list[object]], np.ndarray | None]:
    """The table's rows for the readings of the map, and the held-out counts of the stored choice (each pair aligned
    by the reading chosen on the other half), to compare with eflomal on the same pairs."""
    config = loaded.model.config
    pairs = wa.force(loaded, gold.english, gold.german)
    wa.add_gradients(loaded, pairs)
    methods = wa.every_method(config.decoder_layers, config.num_heads, gradients=True)
    scores = wa.evaluate_methods(pairs, gold.sure, gold.possible, methods)
    rows = []
    for both in (False, True):
        for shift, reading in ((False, "rows that predict the word"), (True, "rows that read the word (shift)")):
            agree = ", both directions" if both else ""
            for single, kind in ((False, "best layer average"), (True, "best single head")):
                name = best_of(
                    scores,
                    lambda m, s=shift, b=both, h=single: (
                        not m.gradient
                        and m.shift == s
                        and m.both == b
                        and m.layer is not None
                        and (m.head is not None) == h
                    ),
                )
                found = [wa.links(pair, wa.Method.parse(name)) for pair in pairs]
                rows.append([f"{reading}{agree}, {kind}", name, *figures(found, gold)])
    for name in wa.GRADIENTS:
        for both in (False, True):
            method = wa.Method(None, None, both=both, gradient=name)
            agree = ", both directions" if both else ""
            found = [wa.links(pair, method) for pair in pairs]
            rows.append([f"gradient: {name.replace('_', ' ')}{agree}", method.name, *figures(found, gold)])
    stored = alignment_choice.stored_choice(loaded)
    held_out = None
    if stored and len(stored.get("held_out", [])) == 2:
        half = len(pairs) // 2
        found, compounds = [[] for _ in pairs], [[] for _ in pairs]
        for check, fitted in ((slice(half, None), stored["held_out"][0]), (slice(0, half), stored["held_out"][1])):
            method = wa.Method.parse(fitted["method"])
            found[check] = [wa.links(pair, method) for pair in pairs[check]]
            checked = zip(pairs[check], found[check], strict=True)
            compounds[check] = [wa.compound_links(pair, method, links) for pair, links in checked]
        names = " / ".join(h["method"] for h in stored["held_out"])
        label = "**held out**: each half aligned by the reading chosen on the other"
        rows.append([label, names, *figures(found, gold)])
        held_out = wa.counts(found, gold.sure, gold.possible)
        # What the Alignment tab draws: the reading's links, and dashed, the compound links of the words it left out.
        completed = [sorted({*f, *c}) for f, c in zip(found, compounds, strict=True)]
        rows.append(["held out, with the compound links the app draws dashed", names, *figures(completed, gold)])
        rows.append(["the compound links alone", f"share ≥ {wa.COMPOUND_SHARE}", *figures(compounds, gold)])
    return rows, held_out


def figures(found: list, gold: alignment_choice.Gold) -> list[str]:
    """AER with its 95% bootstrap interval over the pairs, precision, recall."""
    score = wa.score(found, gold.sure, gold.possible)
    aer = intervals.aer(wa.counts(found, gold.sure, gold.possible))
    return [aer.format(), f"{score.precision:.3f}", f"{score.recall:.3f}"]


def corpus_words(line: str) -> str:
    return " ".join(WORDS.findall(line.lower()))


def eflomal_rows(gold: alignment_choice.Gold, held_out: np.ndarray | None) -> list[list[object]]:
    import eflomal  # a dev dependency: imported only when the baseline is asked for

    english, german = [], []
    for source in sorted((DATA_ROOT / "train").glob("*.en.gz")):
        target = source.with_name(source.name.replace(".en.gz", ".de.gz"))
        english += [corpus_words(line) for line in read_lines(source)]
        german += [corpus_words(line) for line in read_lines(target)]
    english += gold.english
    german += gold.german
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        forward, reverse = Path(folder) / "forward", Path(folder) / "reverse"
        eflomal.Aligner().align(english, german, links_filename_fwd=str(forward), links_filename_rev=str(reverse))
        found = [read_pharaoh(path, len(gold.english)) for path in (forward, reverse)]
    seconds = time.perf_counter() - started
    print(f"eflomal: {len(english):,} pairs aligned in {seconds:.0f} s", file=sys.stderr)
    both = [f & r for f, r in zip(*found, strict=True)]
    rows = [
        [f"eflomal ({label})", "statistical", *figures(links, gold)]
        for label, links in (("forward", found[0]), ("reverse", found[1]), ("intersection", both))
    ]
    if held_out is not None:
        for label, links in (("forward", found[0]), ("intersection", both)):
            difference = intervals.paired_aer(held_out, wa.counts(links, gold.sure, gold.possible))
            print(f"held-out head − eflomal {label}, paired over the pairs: AER {difference.format()}", file=sys.stderr)
    return rows


def read_pharaoh(path: Path, last: int) -> list[set[wa.Link]]:
    lines = path.read_text(encoding="utf-8").splitlines()[-last:]
    return [{tuple(int(i) for i in link.split("-")) for link in line.split()} for line in lines]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--gold", type=Path, default=GOLD, help="PREFIX of PREFIX.en, PREFIX.de, PREFIX.de-en.wa")
    parser.add_argument("--no-eflomal", dest="eflomal", action="store_false", help="skip the statistical baseline")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    gold = alignment_choice.Gold.read(f"{args.gold}.en", f"{args.gold}.de", f"{args.gold}.de-en.wa")
    loaded = load_checkpoint(args.checkpoint)
    rows, held_out = attention_rows(loaded, gold)
    if args.eflomal:
        rows += eflomal_rows(gold, held_out)
    print(f"{loaded.path.name}: {len(gold.english)} gold pairs, {sum(map(len, gold.sure))} sure links", file=sys.stderr)
    headers = ["reading of the map", "method", "AER [95% interval]", "precision", "recall"]
    print_table(headers, rows, args.markdown, align="left")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
