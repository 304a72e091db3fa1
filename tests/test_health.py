"""Model-health measures: what they report on hand-made attention, on a trained model and on a copy of it whose
encoder attends uniformly, on a task that needs alignment trained with the trainer's defaults, and in the trainer's log
(the evaluation CLI's health output is tested with its scores in test_train.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from tests.conftest import ENGLISH, GERMAN, train_arguments, uniform_encoder_copy, write_corpus
from transformer.analysis.health import HEALTH_KEYS, KINDS, model_health, normalised_entropy, position_cosine
from transformer.cli import train
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs

pytestmark = pytest.mark.training

DICTIONARY = {english: {german} for english, german in zip(ENGLISH, GERMAN, strict=True)}


def test_position_cosine_ignores_padding_and_the_diagonal():
    keep = torch.tensor([[True, True, True, False], [True, True, True, True]])
    states = torch.stack([torch.ones(4, 6), torch.eye(4, 6)])
    states[0, 3] = -1.0  # a padding position pointing the other way must not count
    assert position_cosine(states, keep).tolist() == pytest.approx([1.0, 0.0])
    assert position_cosine(states[:1], torch.tensor([[True, False, False, False]])).isnan().all()  # one position


def test_normalised_entropy_is_one_for_uniform_attention_and_zero_for_one_hot():
    length = 5
    causal = torch.ones(length, length, dtype=torch.bool).tril()[None, None]  # (1, 1, T, T)
    uniform = torch.softmax(torch.zeros(1, 2, 3, length, length).masked_fill(~causal[:, None], float("-inf")), -1)
    total, count = normalised_entropy(uniform, causal)
    assert count.tolist() == [3 * (length - 1)] * 2  # the first query sees one key: not counted
    assert (total / count).tolist() == pytest.approx([1.0, 1.0])
    one_hot = torch.zeros(1, 1, 1, length, length)
    one_hot[..., 0] = 1.0
    total, count = normalised_entropy(one_hot, causal)
    assert (total / count).tolist() == pytest.approx([0.0])


def synthetic_sample(count: int = 30) -> tuple[str, list[tuple[str, str]]]:
    rng = random.Random(7)
    pairs = []
    for _ in range(count):
        words = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(3, 7))]
        pairs.append((" ".join(ENGLISH[i] for i in words) + ".", " ".join(GERMAN[i] for i in words) + "."))
    return "synthetic", pairs


def test_uniform_encoder_attention_reads_as_entropy_one(trained_checkpoint: Path, tmp_path: Path):
    loaded = ckpt.load_checkpoint(trained_checkpoint)
    healthy = model_health(loaded.model, loaded.tokenizer, synthetic_sample(), DICTIONARY)
    uniform = ckpt.load_checkpoint(uniform_encoder_copy(trained_checkpoint, tmp_path / "uniform", step=1))
    broken = model_health(uniform.model, uniform.tokenizer, synthetic_sample(), DICTIONARY)
    assert broken["encoder_entropy_normalised"] == pytest.approx([1.0] * 2, abs=1e-3)
    assert min(healthy["encoder_entropy_normalised"]) < 0.9
    assert len(healthy["encoder_position_cosine"]) == 2 and all(
        -1 <= c <= 1 for c in healthy["encoder_position_cosine"]
    )
    # The word-for-word task is learned through cross-attention: some head points at the word being translated far
    # more often than chance (one of 2–7 source words).
    assert healthy["cross_alignment_best"] >= 0.5
    # Chosen on half the sentences and scored on the other, with its interval: never above the best head's
    # figure on all of them by more than the interval can hold, and a real interval around it.
    held = healthy["cross_alignment_held_out"]
    assert held["low"] <= held["value"] <= held["high"] and held["items"] == len(synthetic_sample()[1])
    assert held["value"] >= 0.5 * healthy["cross_alignment_best"]
    last = healthy["encoder_position_cosine_last_interval"]
    assert last["value"] == pytest.approx(healthy["encoder_position_cosine"][-1], abs=1e-3)
    assert last["low"] <= last["value"] <= last["high"]


def long_copy_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """10–16 English words → their German partners in the same order: each output word must be looked up in the
    source, since no single vector of this model's width holds a whole sentence."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(10, 16))]
        pairs.append((" ".join(ENGLISH[i] for i in words), " ".join(GERMAN[i] for i in words)))
    return pairs


@pytest.mark.slow
def test_default_recipe_learns_sharp_cross_attention(spm_path: Path, tmp_path: Path):
    """The trainer's defaults (initialisation included) learn to align: the best cross-attention head points at the
    word being translated for most output words (chance: about 1 in 13) and attention is far from uniform."""
    corpus = {
        "train": write_corpus(tmp_path / "train" / "copy", long_copy_pairs(4000, seed=1)),
        "dev": write_corpus(tmp_path / "dev" / "copy", long_copy_pairs(20, seed=2)),
    }
    extra = ("--max-steps", "1000", "--batch-tokens", "512", "--log-every", "500", "--no-health")
    assert train.main(train_arguments(corpus, spm_path, tmp_path / "run", *extra)) == 0
    loaded = ckpt.load_checkpoint(runs.run_checkpoints(tmp_path / "run")[-1])
    health = model_health(loaded.model, loaded.tokenizer, ("copy", long_copy_pairs(30, seed=3)), DICTIONARY)
    assert health["cross_alignment_best"] >= 0.5
    assert min(health["cross_entropy_normalised"]) < 0.6
    assert max(health["encoder_position_cosine"]) < 0.5


def test_trainer_logs_health_at_every_validation(trained_checkpoint: Path):
    log = runs.training_log(trained_checkpoint)
    assert log is not None
    dev = [json.loads(line) for line in log.read_text().splitlines() if '"kind": "dev"' in line]
    assert dev and all(key in dev[-1] for key in HEALTH_KEYS)
    assert all(len(dev[-1][f"{kind}_entropy_normalised"]) == 2 for kind in KINDS)
