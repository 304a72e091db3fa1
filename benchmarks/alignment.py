"""How far a cross-attention map can be read as a word alignment: AER of each reading against gold links, with a
statistical aligner beside it.

    python benchmarks/alignment.py [--checkpoint DIR] [--gold PREFIX] [--no-eflomal] [--markdown]

PREFIX.en / PREFIX.de hold the gold sentence pairs (words separated by spaces) and PREFIX.de-en.wa their links
(default: ``../shared/data/en-de/align/europarl_gold``). Printed: the usual reading (the rows that predict each
German word) and the shifted one (the rows that read it, Chen et al. 2020), each as the best layer average and the
best single head, every reading again with both directions agreeing, the gradient readings (each German piece's
saliency or input × gradient over the source, captum), the method stored beside the checkpoint
(``python -m transformer.align --choose``) with its held-out AER (chosen on one half of the pairs, scored on the
other), and eflomal (``pip install eflomal``, a dev dependency: IBM1 + HMM + fertility) trained on the lowercased,
punctuation-split training corpora plus the gold sentences, forward, reverse and intersected.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from tables import print_table

from transformer.analysis import word_alignment as wa
from transformer.checkpoint import load_checkpoint
from transformer.data import DATA_ROOT, read_lines

GOLD = DATA_ROOT / "align" / "europarl_gold"
WORDS = re.compile(r"[\w'’-]+|[^\w\s]")  # words (with inner hyphens and apostrophes) and punctuation, as in the gold


def best_of(scores: dict[str, wa.Score], keep) -> tuple[str, wa.Score]:
    name = min((name for name in scores if keep(wa.Method.parse(name))), key=lambda name: scores[name].aer)
    return name, scores[name]


def attention_rows(loaded, gold: wa.Gold) -> list[list[object]]:
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
                name, score = best_of(
                    scores,
                    lambda m, s=shift, b=both, h=single: (
                        not m.gradient
                        and m.shift == s
                        and m.both == b
                        and m.layer is not None
                        and (m.head is not None) == h
                    ),
                )
                rows.append([f"{reading}{agree}, {kind}", name, *figures(score)])
    for name in wa.GRADIENTS:
        for both in (False, True):
            method = wa.Method(None, None, both=both, gradient=name)
            agree = ", both directions" if both else ""
            rows.append([f"gradient: {name.replace('_', ' ')}{agree}", method.name, *figures(scores[method.name])])
    stored = wa.stored_choice(loaded)
    if stored:
        chosen = wa.Method.parse(stored["method"])
        check = wa.score([wa.links(pair, chosen) for pair in pairs], gold.sure, gold.possible)
        held = ", ".join(f"{h['aer']:.3f} ({h['method']})" for h in stored.get("held_out", []))
        rows.append([f"the stored choice (held-out AER {held})", chosen.name, *figures(check)])
    return rows


def figures(score: wa.Score) -> list[str]:
    return [f"{score.aer:.3f}", f"{score.precision:.3f}", f"{score.recall:.3f}"]


def corpus_words(line: str) -> str:
    return " ".join(WORDS.findall(line.lower()))


def eflomal_rows(gold: wa.Gold) -> list[list[object]]:
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
    return [
        [f"eflomal ({label})", "statistical", *figures(wa.score(links, gold.sure, gold.possible))]
        for label, links in (("forward", found[0]), ("reverse", found[1]), ("intersection", both))
    ]


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
    gold = wa.Gold.read(f"{args.gold}.en", f"{args.gold}.de", f"{args.gold}.de-en.wa")
    loaded = load_checkpoint(args.checkpoint)
    rows = attention_rows(loaded, gold)
    if args.eflomal:
        rows += eflomal_rows(gold)
    print(f"{loaded.path.name}: {len(gold.english)} gold pairs, {sum(map(len, gold.sure))} sure links", file=sys.stderr)
    print_table(["reading of the map", "method", "AER", "precision", "recall"], rows, args.markdown, align="left")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
