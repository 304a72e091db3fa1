"""Reading corpora, filtering, and token-count batches that are reproducible and shard cleanly."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from transformer.paper.data import (
    BatchSampler,
    CorpusSpec,
    Example,
    case_augmented,
    collate,
    encode_pairs,
    read_corpus,
    read_parallel,
)
from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID


def examples_of_lengths(lengths: list[int]) -> list[Example]:
    return [Example((*range(4, 4 + n), EOS_ID), (BOS_ID, *range(4, 4 + n), EOS_ID)) for n in lengths]


def test_corpus_spec_parses_upsampling(tmp_path: Path):
    assert CorpusSpec.parse("data/train/news:3") == CorpusSpec(Path("data/train/news"), 3)
    assert CorpusSpec.parse("data/train/news") == CorpusSpec(Path("data/train/news"), 1)
    with pytest.raises(ValueError, match="positive"):
        CorpusSpec.parse("news:0")


def test_plain_and_gzip_corpora_read_alike(tmp_path: Path):
    Path(tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    with gzip.open(tmp_path / "a.de.gz", "wt", encoding="utf-8") as handle:
        handle.write("eins\nzwei\n")
    assert read_corpus(CorpusSpec(tmp_path / "a")) == [("one", "eins"), ("two", "zwei")]
    with pytest.raises(FileNotFoundError, match=r"b\.en\[\.gz\]: corpus file not found"):
        read_corpus(CorpusSpec(tmp_path / "b"))


def test_misaligned_corpus_is_refused(tmp_path: Path):
    (tmp_path / "x.en").write_text("a\nb\nc\n")
    (tmp_path / "x.de").write_text("a\nb\n")
    with pytest.raises(ValueError, match="has 3 lines but .* has 2: not a parallel corpus"):
        read_parallel(tmp_path / "x.en", tmp_path / "x.de")


def test_encoding_frames_and_filters_pairs(tokenizer):
    pairs = [("the cat.", "die katze."), ("", "leer"), ("the " * 100, "der"), ("dog " * 30, "hund")]
    examples = encode_pairs(pairs, tokenizer, max_tokens=64)
    assert len(examples) == 1  # empty side, too long, and 30:1 length ratio are dropped
    assert examples[0].source[-1] == EOS_ID
    assert examples[0].target[0] == BOS_ID and examples[0].target[-1] == EOS_ID


def test_case_augmentation_capitalises_inner_source_words_only():
    pairs = [(f"the law {i} will never be perfect, but its application is just.", f"Gesetz {i}") for i in range(2000)]
    pairs += [("Hi.", "Hallo."), ("OK, I do.", "Gut.")]  # no inner lower-case word of three letters: never copied
    copies = case_augmented(pairs, fraction=0.2, seed="7:news")
    assert 300 < len(copies) < 500  # about a fifth of 2,000
    source_of = {target: source for source, target in pairs}
    for source, target in copies:
        original = source_of[target]  # the target is kept as it was
        changed = [(new, old) for new, old in zip(source.split(), original.split(), strict=True) if new != old]
        assert changed and len(source) == len(original)
        assert all(new == old[0].upper() + old[1:] for new, old in changed)
        assert source.startswith("the ")  # the first word keeps its case
    assert "Law" in {word for source, _ in copies for word in source.split()}
    assert case_augmented(pairs, fraction=0.2, seed="7:news") == copies  # a resumed run sees the same data
    assert case_augmented(pairs, fraction=0.2, seed="8:news") != copies
    assert case_augmented(pairs, fraction=0.0, seed=1) == []
    with pytest.raises(ValueError, match="from 0 to 1"):
        case_augmented(pairs, fraction=20, seed=1)


def test_batches_respect_the_token_budget_and_cover_every_example():
    examples = examples_of_lengths([3, 5, 8, 13, 21, 2, 7, 9, 30, 4] * 20)
    sampler = BatchSampler(examples, batch_tokens=64, seed=3, pool_batches=4)
    batches = sampler.epoch_batches(0)
    assert sorted(i for b in batches for i in b) == list(range(len(examples)))
    for indices in batches:
        batch = collate([examples[i] for i in indices])
        assert batch.source.numel() <= 64 and batch.target_input.numel() <= 64
    # Similar lengths share a batch: far less padding than random grouping would give.
    padding = sum(int((collate([examples[i] for i in b]).source == PAD_ID).sum()) for b in batches)
    assert padding < 0.15 * sum(len(e.source) for e in examples)


def test_sorting_by_the_longer_side_packs_more_real_tokens_with_less_padding():
    # Targets whose lengths vary around their sources', as translations do: the cut measures the longer side, so
    # pools sorted by it fill each batch closer to its budget.
    rng = random.Random(0)
    sources = [3 + int(rng.expovariate(1 / 10)) % 60 for _ in range(2000)]
    lengths = [(s, max(2, round(s * rng.uniform(0.7, 1.5)))) for s in sources]
    examples = [Example((*range(4, 4 + s), EOS_ID), (BOS_ID, *range(4, 4 + t), EOS_ID)) for s, t in lengths]

    def packing(sort_by: str) -> tuple[float, float]:
        batches = BatchSampler(examples, batch_tokens=256, seed=1, pool_batches=20, sort_by=sort_by).epoch_batches(0)
        real = padded = 0
        for indices in batches:
            batch = collate([examples[i] for i in indices])
            assert batch.source.numel() <= 256 and batch.target_input.numel() <= 256
            real += int((batch.source != PAD_ID).sum() + (batch.target_input != PAD_ID).sum())
            padded += batch.source.numel() + batch.target_input.numel()
        return 1 - real / padded, real / len(batches)

    (longer_padding, longer_real), (source_padding, source_real) = packing("longer"), packing("source")
    assert longer_real > 1.05 * source_real and longer_padding <= source_padding + 0.005
    with pytest.raises(ValueError, match="unknown sort_by"):
        BatchSampler(examples, batch_tokens=96, sort_by="random")


def test_batch_order_is_reproducible_and_changes_per_epoch():
    examples = examples_of_lengths(list(range(2, 40)) * 5)
    first = BatchSampler(examples, batch_tokens=80, seed=1)
    assert first.epoch_batches(0) == BatchSampler(examples, batch_tokens=80, seed=1).epoch_batches(0)
    assert first.epoch_batches(0) != first.epoch_batches(1)
    assert first.epoch_batches(0) != BatchSampler(examples, batch_tokens=80, seed=2).epoch_batches(0)


def test_shards_are_disjoint_and_equal_in_size():
    examples = examples_of_lengths(list(range(2, 40)) * 5)
    shards = [BatchSampler(examples, 80, seed=1, rank=r, world_size=3).epoch_batches(0) for r in range(3)]
    assert len({len(s) for s in shards}) == 1
    seen = [tuple(b) for s in shards for b in s]
    assert len(seen) == len(set(seen))
    whole = BatchSampler(examples, 80, seed=1).epoch_batches(0)
    assert set(seen) <= {tuple(b) for b in whole}


def test_target_input_is_shifted_right():
    batch = collate(examples_of_lengths([3, 1]))
    assert batch.target_input[:, 0].tolist() == [BOS_ID, BOS_ID]
    assert batch.target_input[0, 1:].tolist() == batch.target_output[0, :-1].tolist()
    assert batch.target_output[1].tolist() == [4, EOS_ID, PAD_ID, PAD_ID]


def test_a_budget_below_the_longest_sentence_is_refused():
    with pytest.raises(ValueError, match="smaller than the longest sentence"):
        BatchSampler(examples_of_lengths([50]), batch_tokens=10)
