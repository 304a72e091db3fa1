"""Omissions and insertions made on purpose: does the detector find the source word whose translation was deleted,
and the German word that was added?

    python benchmarks/omissions.py [--checkpoint DIR] [--gold PREFIX] [--markdown] [--store]

From each gold pair (PREFIX.en / .de / .de-en.wa, default ``../shared/data/en-de/align/europarl_gold``) and each
English content word whose German words translate only it (and which occurs once in its sentence), a damaged pair
is made by deleting those German words. The damaged German is teacher-forced and every content word of the English
is ranked by how likely it went untranslated; top-1 is the share of cases in which the deleted word ranks first.
Ranked by: contrastive conditioning (:mod:`transformer.analysis.omissions`), and the attention coverage of the head
reading stored beside the checkpoint (``alignment.json``; a word's largest attention from any German word, lowest
first, without the both-directions rule). Beside them: a random pick, and the detector's false alarms on the intact
pairs (pairs in which some content word is flagged although nothing was deleted, and the share of their content
words flagged), and how often a mark is right (of the marks on the damaged pairs, the share on the deleted word);
``--store`` keeps these beside the model (``omissions.json``), where the Alignment tab reads them. Every share has
its 95% bootstrap interval over the gold pairs (a pair's cases resampled together), and each detector its paired
difference from a random pick on the same cases.

Insertions: into each gold German sentence, four times, a content word of another gold sentence is inserted at a
random place (seeded); the German content words are ranked by how little the source supports them
(:class:`transformer.analysis.omissions.Support`: log-probability with the source minus without it) and top-1 is the
share of cases in which the inserted word ranks first. Beside: a random pick, and how often the app's mark (support
at most 0 nats) falls on the inserted word and on any word of the intact pairs.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np
from tables import print_table

from transformer.analysis import alignment_choice, intervals
from transformer.analysis import word_alignment as wa
from transformer.analysis.omissions import (
    MARGIN,
    OMISSIONS_FILE,
    content_word,
    german_content_word,
    omissions,
    source_support,
)
from transformer.formats.checkpoint import load_checkpoint
from transformer.formats.checkpoint_files import save_beside
from transformer.paper.data import DATA_ROOT
from transformer.paper.tokenizer import EOS_ID

GOLD = DATA_ROOT / "align" / "europarl_gold"


def damaged_pairs(gold: alignment_choice.Gold) -> list[tuple[str, str, int, int]]:
    """(English, German with one word's translation deleted, that English word's position, the gold pair's
    number)."""
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
                cases.append((english, " ".join(kept), word, number))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parser.add_argument("--gold", type=Path, default=GOLD, help="PREFIX of PREFIX.en, PREFIX.de, PREFIX.de-en.wa")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--store", action="store_true", help=f"store how often the marks are right beside the model ({OMISSIONS_FILE})"
    )
    args = parser.parse_args()
    gold = alignment_choice.Gold.read(f"{args.gold}.en", f"{args.gold}.de", f"{args.gold}.de-en.wa")
    loaded = load_checkpoint(args.checkpoint)
    cases = damaged_pairs(gold)
    reading = alignment_choice.default_method(loaded)
    coverage_reading = wa.Method(reading.layer, reading.head, reading.shift)  # every German word's strongest link
    forced = wa.force(loaded, [c[0] for c in cases], [c[1] for c in cases])
    # per gold pair (a pair's cases are resampled together): cases, and hits of each detector
    # conditioning, marked, attention, chance, cases, marks on the pair, marks on a deleted word
    hits = np.zeros((len(gold.english), 7))
    for (english, german, deleted, number), pair in zip(cases, forced, strict=True):
        found = omissions(loaded, english.split(), loaded.tokenizer.encode(german))
        ranked, marked = found.ranked(), found.flagged()
        coverage = wa.word_scores(pair, coverage_reading).max(axis=0)
        attention = min(ranked, key=lambda i: coverage[i]) == deleted
        right = deleted in marked
        hits[number] += (ranked[0] == deleted, right, attention, 1 / len(ranked), 1, len(marked), right)
    intact = np.zeros((len(gold.english), 3))  # per intact pair: some word marked, words marked, content words
    for number, (english, german) in enumerate(zip(gold.english, gold.german, strict=True)):
        found = omissions(loaded, english.split(), loaded.tokenizer.encode(german))
        intact[number] = (bool(found.flagged()), len(found.flagged()), len(found.ranked()))
    hits = hits[hits[:, 4] > 0]
    rows = [
        ["contrastive conditioning", *shares(hits[:, 0], hits[:, 4], hits[:, 3])],
        [f"deleted word marked (gain over {MARGIN:g} nat)", *shares(hits[:, 1], hits[:, 4])],
        ["a mark on a damaged pair is on the deleted word", *shares(hits[:, 6], hits[:, 5])],
        [f"attention coverage ({coverage_reading.name})", *shares(hits[:, 2], hits[:, 4], hits[:, 3])],
        ["random content word", *shares(hits[:, 3], hits[:, 4])],
        ["false alarms: intact pairs with a word flagged", *shares(intact[:, 0], np.ones(len(intact)))],
        ["false alarms: content words of intact pairs marked", *shares(intact[:, 1], intact[:, 2])],
    ]
    if args.store:
        measured = {
            "gold": gold.name,
            "cases": int(hits[:, 4].sum()),
            "intact_pairs": len(intact),
            "margin": MARGIN,
            "deleted_marked": intervals.ratio(hits[:, 1], hits[:, 4]).as_dict(),
            "marks_right": intervals.ratio(hits[:, 6], hits[:, 5]).as_dict(),
            "intact_words_marked": intervals.ratio(intact[:, 1], intact[:, 2]).as_dict(),
        }
        print(f"stored in {save_beside(loaded, OMISSIONS_FILE, measured)}", file=sys.stderr)
    print(f"{loaded.path.name}: {len(cases)} damaged pairs from {len(hits)} gold pairs", file=sys.stderr)
    print_table(["detector", "top-1 [95% interval]", "over random [95%]"], rows, args.markdown, align="left")
    print()
    insertions = insertion_rows(loaded, gold)
    print_table(["insertions", "share [95% interval]", "over random [95%]"], insertions, args.markdown, align="left")
    return 0


def shares(hits, cases, chance=None) -> list[str]:
    """A share with its 95% bootstrap interval over gold pairs, and (given each pair's expected random hits) its
    paired difference from a random pick."""
    share = intervals.ratio(hits, cases)
    if chance is None:
        return [share.format(), ""]
    return [share.format(), intervals.paired_ratio(hits, chance, cases).format()]


def support_of(loaded, english: str, german_words: list[str]):
    source_ids, _ = wa.word_pieces(loaded, english.split())
    output_ids, owners = wa.word_pieces(loaded, german_words)
    return source_support(loaded, [*source_ids, EOS_ID], output_ids, owners, german_words)


def insertion_rows(loaded, gold: alignment_choice.Gold, per_pair: int = 4, seed: int = 1) -> list[list[str]]:
    rng = random.Random(seed)
    pool = [word for german in gold.german for word in german.split() if german_content_word(word)]
    counts = np.zeros((len(gold.german), 4))  # per gold pair: found, marked, chance, insertions
    for number, (english, german) in enumerate(zip(gold.english, gold.german, strict=True)):
        words = german.split()
        for _ in range(per_pair):
            inserted = rng.choice(pool)
            if inserted in words:
                continue
            at = rng.randrange(len(words) + 1)
            support = support_of(loaded, english, [*words[:at], inserted, *words[at:]])
            ranked = support.ranked()
            counts[number] += (ranked[0] == at, at in support.flagged(), 1 / len(ranked), 1)
    alarms = [
        float(bool(support_of(loaded, e, g.split()).flagged())) for e, g in zip(gold.english, gold.german, strict=True)
    ]
    counts = counts[counts[:, 3] > 0]
    found, marked, chance, cases = counts.T
    return [
        [f"least supported by the source ({int(cases.sum())} insertions)", *shares(found, cases, chance)],
        ["random content word", *shares(chance, cases)],
        ["inserted word marked (support ≤ 0 nats)", *shares(marked, cases)],
        ["intact pairs with a word marked", *shares(alarms, np.ones(len(alarms)))],
    ]


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
