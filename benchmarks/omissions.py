"""Omissions made on purpose: does the detector find the source word whose translation was deleted?

    python benchmarks/omissions.py [--checkpoint DIR] [--gold PREFIX] [--markdown]

From each gold pair (PREFIX.en / .de / .de-en.wa, default ``../shared/data/en-de/align/europarl_gold``) and each
English content word whose German words translate only it (and which occurs once in its sentence), a damaged pair
is made by deleting those German words. The damaged German is teacher-forced and every content word of the English
is ranked by how likely it went untranslated; top-1 is the share of cases in which the deleted word ranks first.
Ranked by: contrastive conditioning (:mod:`transformer.analysis.omissions`), and the attention coverage of the head
reading stored beside the checkpoint (``alignment.json``; a word's largest attention from any German word, lowest
first, without the both-directions rule). Beside them: a random pick, and the detector's false alarms on the intact
pairs (pairs in which some content word is flagged although nothing was deleted).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tables import print_table

from transformer.analysis import word_alignment as wa
from transformer.analysis.omissions import content_word, omissions
from transformer.checkpoint import load_checkpoint
from transformer.data import DATA_ROOT

GOLD = DATA_ROOT / "align" / "europarl_gold"


def damaged_pairs(gold: wa.Gold) -> list[tuple[str, str, int]]:
    """(English, German with one word's translation deleted, that English word's position)."""
    cases = []
    for number, (english, german) in enumerate(zip(gold.english, gold.german, strict=True)):
        source, target = english.split(), german.split()
        links = gold.sure[number] | gold.possible[number]
        for word, text in enumerate(source):
            translations = {g for e, g in links if e == word}
            shared = any(e != word for e, g in links if g in translations)
            if not content_word(text) or not translations or shared or source.count(text) > 1:
                continue
            kept = [w for position, w in enumerate(target) if position not in translations]
            if kept:
                cases.append((english, " ".join(kept), word))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--gold", type=Path, default=GOLD, help="PREFIX of PREFIX.en, PREFIX.de, PREFIX.de-en.wa")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    gold = wa.Gold.read(f"{args.gold}.en", f"{args.gold}.de", f"{args.gold}.de-en.wa")
    loaded = load_checkpoint(args.checkpoint)
    cases = damaged_pairs(gold)
    reading = wa.default_method(loaded)
    coverage_reading = wa.Method(reading.layer, reading.head, reading.shift)  # every German word's strongest link
    forced = wa.force(loaded, [c[0] for c in cases], [c[1] for c in cases])
    conditioning = attention = chance = 0.0
    for (english, german, deleted), pair in zip(cases, forced, strict=True):
        found = omissions(loaded, english.split(), loaded.tokenizer.encode(german))
        ranked = found.ranked()
        conditioning += ranked[0] == deleted
        chance += 1 / len(ranked)
        coverage = wa.word_scores(pair, coverage_reading).max(axis=0)
        attention += min(ranked, key=lambda i: coverage[i]) == deleted
    alarms = 0
    for english, german in zip(gold.english, gold.german, strict=True):
        alarms += bool(omissions(loaded, english.split(), loaded.tokenizer.encode(german)).flagged())
    count = len(cases)
    rows = [
        ["contrastive conditioning", f"{conditioning / count:.3f}"],
        [f"attention coverage ({coverage_reading.name})", f"{attention / count:.3f}"],
        ["random content word", f"{chance / count:.3f}"],
        ["false alarms: intact pairs with a word flagged", f"{alarms / len(gold.english):.3f}"],
    ]
    print(f"{loaded.path.name}: {count} damaged pairs from {len(gold.english)} gold pairs", file=sys.stderr)
    print_table(["detector", "top-1"], rows, args.markdown, align="left")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
