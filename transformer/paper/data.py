"""Parallel corpora: reading, filtering, and token-count batches of similar-length sentences (§5.1).

A corpus is named by a path prefix: ``PREFIX.en`` and ``PREFIX.de`` (or their ``.gz`` versions), optionally with an
up-sampling factor written ``PREFIX:3``. Batch order is a pure function of (seed, epoch), so a resumed run sees
exactly the batches the interrupted one would have seen, and every data-parallel process takes its own share.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer

# Where the corpora live: ../shared/data/en-de beside the repository, unless $TRANSFORMER_DATA says otherwise.
DATA_ROOT = Path(os.environ.get("TRANSFORMER_DATA", Path(__file__).resolve().parents[3] / "shared" / "data" / "en-de"))
DEV_PREFIX = DATA_ROOT / "dev" / "newstest2013"  # the paper's development set: PREFIX.en, PREFIX.de


@dataclass(frozen=True)
class CorpusSpec:
    """One parallel corpus and how many times each of its pairs is repeated per epoch."""

    prefix: Path
    upsample: int = 1

    @classmethod
    def parse(cls, text: str) -> CorpusSpec:
        """``PREFIX`` or ``PREFIX:N``."""
        prefix, _, factor = text.rpartition(":") if ":" in text else (text, "", "")
        if factor and not factor.isdigit():
            prefix, factor = text, ""
        upsample = int(factor) if factor else 1
        if upsample < 1:
            raise ValueError(f"{text}: the up-sampling factor must be a positive integer")
        return cls(Path(prefix), upsample)

    def file(self, language: str) -> Path:
        for candidate in (Path(f"{self.prefix}.{language}"), Path(f"{self.prefix}.{language}.gz")):
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"{self.prefix}.{language}[.gz]: corpus file not found")


def read_lines(path: str | Path) -> list[str]:
    """All lines of a plain or gzip-compressed UTF-8 text file, without line ends. Lines that are not valid UTF-8
    are kept with their bad bytes read as U+FFFD, and one warning names the file, how many lines and the first."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    lines, bad = [], []
    with opener(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            raw = raw.rstrip(b"\n").rstrip(b"\r")
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                bad.append(number)
                lines.append(raw.decode("utf-8", errors="replace"))
    if bad:
        warnings.warn(
            f"{path}: {len(bad):,} lines are not valid UTF-8 (first: line {bad[0]}); their bad bytes read as U+FFFD",
            stacklevel=2,
        )
    return lines


def read_parallel(source_path: str | Path, target_path: str | Path) -> list[tuple[str, str]]:
    """Aligned (source, target) sentence pairs; the two files must have the same number of lines."""
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise ValueError(
            f"{source_path} has {len(sources)} lines but {target_path} has {len(targets)}: not a parallel corpus"
        )
    return list(zip(sources, targets, strict=True))


def read_corpus(spec: CorpusSpec, source_language: str = "en", target_language: str = "de") -> list[tuple[str, str]]:
    return read_parallel(spec.file(source_language), spec.file(target_language))


def read_pairs(prefix: str | Path, languages: tuple[str, str] = ("en", "de")) -> list[tuple[str, str]]:
    """The (source, target) pairs of the corpus ``prefix`` in the pair ``languages``: PREFIX.<source> and
    PREFIX.<target> (a checkpoint's ``config.languages``)."""
    return read_parallel(f"{prefix}.{languages[0]}", f"{prefix}.{languages[1]}")


def has_pairs(prefix: str | Path, languages: tuple[str, str] = ("en", "de")) -> bool:
    return all(Path(f"{prefix}.{language}").is_file() for language in languages)


# A lower-case word of three or more letters that does not open the sentence.
_INNER_WORD = re.compile(r"(?<=\s)[a-z]{3,}\b")


def case_augmented(
    pairs: Sequence[tuple[str, str]], fraction: float, seed: int | str, word_probability: float = 1 / 3
) -> list[tuple[str, str]]:
    """Extra copies of about ``fraction`` of the pairs whose source has inner lower-case words capitalised (each
    with ``word_probability``, at least one), the target unchanged.

    Headlines and legal prose capitalise common nouns ("The Law will never be perfect"); without such copies a
    capital reads as a name and stays untranslated. Deterministic in ``seed``, so a resumed run sees the same data.
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"--case-augment must be a fraction from 0 to 1, not {fraction}")
    rng = random.Random(seed)
    copies = []
    for source, target in pairs:
        if rng.random() >= fraction:
            continue
        words = list(_INNER_WORD.finditer(source))
        if not words:
            continue
        chosen = [word for word in words if rng.random() < word_probability] or [rng.choice(words)]
        text = list(source)
        for word in chosen:
            text[word.start()] = text[word.start()].upper()
        copies.append(("".join(text), target))
    return copies


@dataclass(frozen=True)
class Example:
    """One encoded pair: source ids end with </s>; target ids are framed by <s> … </s>."""

    source: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def num_tokens(self) -> int:
        return len(self.source) + len(self.target) - 1


def encode_pairs(
    pairs: Sequence[tuple[str, str]],
    tokenizer: Tokenizer,
    max_tokens: int = 128,
    max_length_ratio: float = 3.0,
) -> list[Example]:
    """Encode and filter: drop empty sides, sides longer than ``max_tokens`` pieces, and lopsided pairs."""
    sources = tokenizer.encode_batch([s.strip() for s, _ in pairs])
    targets = tokenizer.encode_batch([t.strip() for _, t in pairs])
    examples = []
    for source, target in zip(sources, targets, strict=True):
        if not source or not target or len(source) >= max_tokens or len(target) >= max_tokens:
            continue
        shorter, longer = sorted((len(source), len(target)))
        if longer > 8 and longer > max_length_ratio * shorter:
            continue
        examples.append(Example((*source, EOS_ID), (BOS_ID, *target, EOS_ID)))
    return examples


@dataclass
class Batch:
    """Padded tensors: source (B, S); target_input (B, T) starts with <s>; target_output (B, T) ends with </s>."""

    source: Tensor
    target_input: Tensor
    target_output: Tensor

    @property
    def num_target_tokens(self) -> int:
        return int((self.target_output != PAD_ID).sum())

    @property
    def num_tokens(self) -> int:
        return int((self.source != PAD_ID).sum()) + self.num_target_tokens

    def to(self, device: torch.device | str) -> Batch:
        non_blocking = self.source.is_pinned()
        return Batch(
            *(t.to(device, non_blocking=non_blocking) for t in (self.source, self.target_input, self.target_output))
        )

    def pin_memory(self) -> Batch:
        return Batch(self.source.pin_memory(), self.target_input.pin_memory(), self.target_output.pin_memory())


def pad(sequences: Sequence[Sequence[int]], value: int = PAD_ID) -> Tensor:
    """Right-pad integer sequences into a (len(sequences), longest) tensor."""
    longest = max(len(s) for s in sequences)
    out = torch.full((len(sequences), longest), value, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return out


def collate(examples: Sequence[Example]) -> Batch:
    target = pad([e.target for e in examples])
    return Batch(pad([e.source for e in examples]), target[:, :-1], target[:, 1:])


SORT_KEYS = {
    "longer": lambda e: (max(len(e.source), len(e.target)), len(e.source), len(e.target)),
    "source": lambda e: (len(e.source), len(e.target)),
}


class BatchSampler:
    """Token-count batches of similar-length pairs, in an order fixed by (seed, epoch).

    Each epoch the (up-sampled) examples are shuffled, sorted by length inside pools of ``pool_batches`` batches
    (so lengths match within a batch while batches stay random), cut so that no batch's padded source or target
    exceeds ``batch_tokens``, and the batches are shuffled. The sort key is the longer side's length first
    (``sort_by="longer"``), the length the cut measures: sorted by the source alone (``"source"``, this sampler's
    earlier order), the target lengths within a run of equal sources vary and end batches early — over an epoch of
    the training mix 15.7% of the positions were padding and a 4,096-token batch held 5,613 real tokens; sorted by
    the longer side, 7.5% and 7,262 (``benchmarks/train_throughput.py``). With ``world_size`` > 1 every process
    keeps every ``world_size``-th batch starting at its ``rank``; all processes get the same number of batches.
    """

    def __init__(
        self,
        examples: Sequence[Example],
        batch_tokens: int,
        seed: int = 1,
        pool_batches: int = 100,
        rank: int = 0,
        world_size: int = 1,
        sort_by: str = "longer",
    ) -> None:
        if sort_by not in SORT_KEYS:
            raise ValueError(f"unknown sort_by {sort_by!r}; choose one of {', '.join(SORT_KEYS)}")
        if not examples:
            raise ValueError("no training examples left after filtering")
        longest = max(max(len(e.source), len(e.target)) for e in examples)
        if batch_tokens < longest:
            raise ValueError(f"batch_tokens={batch_tokens} is smaller than the longest sentence ({longest} tokens)")
        self.examples = examples
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_batches = pool_batches
        self.rank = rank
        self.world_size = world_size
        self.sort_key = SORT_KEYS[sort_by]

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """Indices into ``examples`` of every batch this process gets in ``epoch``."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.examples)))
        rng.shuffle(order)
        average = sum(e.num_tokens for e in self.examples) / (2 * len(self.examples))
        pool_size = max(1, int(self.pool_batches * self.batch_tokens / max(average, 1.0)))
        batches: list[list[int]] = []
        for start in range(0, len(order), pool_size):
            pool = sorted(order[start : start + pool_size], key=lambda i: self.sort_key(self.examples[i]))
            batch: list[int] = []
            longest = 0
            for index in pool:
                example = self.examples[index]
                length = max(len(example.source), len(example.target))
                if batch and max(longest, length) * (len(batch) + 1) > self.batch_tokens:
                    batches.append(batch)
                    batch, longest = [], 0
                batch.append(index)
                longest = max(longest, length)
            if batch:
                batches.append(batch)
        rng.shuffle(batches)
        usable = len(batches) - len(batches) % self.world_size
        return batches[self.rank : usable : self.world_size]

    def iterate(self, epoch: int, start: int = 0) -> Iterator[tuple[int, Batch]]:
        """Yield (position in epoch, batch) from ``start`` to the end of ``epoch``."""
        batches = self.epoch_batches(epoch)
        for position in range(start, len(batches)):
            yield position, collate([self.examples[i] for i in batches[position]])
