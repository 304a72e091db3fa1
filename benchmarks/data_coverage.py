"""How well the training data covers each test set: the data side of what limits the model's BLEU.

    python benchmarks/data_coverage.py                      # the corpora in ../shared/data/en-de
    python benchmarks/data_coverage.py --markdown           # the same as Markdown tables

For each training corpus: pairs, mean English words per sentence and German word types. For each test set: mean
English words per sentence, and the share of the German reference's words (and of its word 4-grams) that occur
anywhere in the German side of the training data, and in each corpus alone. Words are sacreBLEU's 13a tokens, the
units BLEU counts; a reference word never seen in training can only be matched by luck (or by copying a name).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from tables import print_table  # benchmarks/tables.py, beside this script

from transformer.paper.data import DATA_ROOT, CorpusSpec, read_corpus

TRAIN = ("news", "multi30k", "tatoeba")
TESTS = ("test/newstest2014", "dev/newstest2013", "test/multi30k_test2016")
ORDER = 4

tokenize = Tokenizer13a()


def words(line: str) -> list[str]:
    return tokenize(line).split()


def ngrams(tokens: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def coverage(references: list[list[str]], known: set, n: int) -> float:
    """Percentage of the references' n-grams (counted with repeats) that are in ``known``."""
    grams = [gram for tokens in references for gram in ngrams(tokens, n)]
    return 100 * sum(gram in known for gram in grams) / max(len(grams), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_ROOT, help="folder with train/, dev/ and test/")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()

    unigrams: dict[str, set] = {}
    fourgrams: dict[str, set] = {}
    train_rows = []
    for name in TRAIN:
        pairs = read_corpus(CorpusSpec(args.data / "train" / name))
        german = [words(target) for _, target in pairs]
        unigrams[name] = {(word,) for tokens in german for word in tokens}
        fourgrams[name] = {gram for tokens in german for gram in ngrams(tokens, ORDER)}
        english_words = sum(len(words(source)) for source, _ in pairs)
        train_rows.append((name, f"{len(pairs):,}", f"{english_words / len(pairs):.1f}", f"{len(unigrams[name]):,}"))
    all_unigrams = set().union(*unigrams.values())
    all_fourgrams = set().union(*fourgrams.values())

    test_rows = []
    for name in TESTS:
        pairs = read_corpus(CorpusSpec(args.data / name))
        references = [words(target) for _, target in pairs]
        english_words = sum(len(words(source)) for source, _ in pairs)
        row = [name.split("/")[1], f"{len(pairs):,}", f"{english_words / len(pairs):.1f}"]
        row.append(f"{coverage(references, all_unigrams, 1):.1f}")
        row += [f"{coverage(references, unigrams[corpus], 1):.1f}" for corpus in TRAIN]
        row.append(f"{coverage(references, all_fourgrams, ORDER):.1f}")
        test_rows.append(tuple(row))

    train_header = ("training corpus", "pairs", "English words / sentence", "German word types")
    test_header = (
        "test set",
        "sentences",
        "English words / sentence",
        "% reference words seen in training",
        *(f"% seen in {corpus} alone" for corpus in TRAIN),
        f"% reference {ORDER}-grams seen in training",
    )
    for header, rows in ((train_header, train_rows), (test_header, test_rows)):
        print_table(header, rows, args.markdown)
        print()


if __name__ == "__main__":
    main()
