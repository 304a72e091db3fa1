"""Greedy and beam search: a tiny model learns to reverse sequences, and the decoders agree where they must."""

from __future__ import annotations

import pytest
import torch

from transformer.config import preset
from transformer.data import pad
from transformer.decode import EXTRA_OUTPUT_TOKENS, beam_search, greedy_decode, length_penalty
from transformer.model import Transformer
from transformer.tokenizer import BOS_ID, EOS_ID
from transformer.train import learning_rate, sequence_losses

SYMBOLS = range(4, 24)


def reversal_batch(size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    sequences = []
    for _ in range(size):
        length = int(torch.randint(3, 9, (1,), generator=generator))
        sequences.append(torch.randint(SYMBOLS.start, SYMBOLS.stop, (length,), generator=generator).tolist())
    source = pad([[*s, EOS_ID] for s in sequences])
    target = pad([[BOS_ID, *reversed(s), EOS_ID] for s in sequences])
    return source, target, sequences


@pytest.fixture(scope="module")
def reversal():
    """The tiny preset trained for 1,500 steps to reverse random sequences; returns it and its loss curve."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny", dropout=0.0))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for step in range(1, 1501):
        source, target, _ = reversal_batch(64, generator)
        model.train()
        loss, _ = sequence_losses(model(source, target[:, :-1]).logits, target[:, 1:], label_smoothing=0.0)
        loss = loss / (target[:, 1:] != 0).sum()
        loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, model.config.d_model, warmup=200, scale=0.5)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    return model.eval(), losses


def test_tiny_model_learns_to_reverse_sequences(reversal):
    model, losses = reversal
    assert sum(losses[-50:]) / 50 < 0.1 * sum(losses[:50]) / 50
    source, _, sequences = reversal_batch(200, torch.Generator().manual_seed(123))
    outputs = greedy_decode(model, source)
    accuracy = sum(out == seq[::-1] for out, seq in zip(outputs, sequences, strict=True)) / len(sequences)
    assert accuracy >= 0.95


def test_beam_search_also_reverses(reversal):
    model, _ = reversal
    source, _, sequences = reversal_batch(100, torch.Generator().manual_seed(321))
    outputs = beam_search(model, source, beam_size=4)
    accuracy = sum(out == seq[::-1] for out, seq in zip(outputs, sequences, strict=True)) / len(sequences)
    assert accuracy >= 0.95


def uncached_greedy(model: Transformer, source: torch.Tensor) -> list[list[int]]:
    """Reference: recompute the whole decoder at every step."""
    outputs = []
    for row in source:
        row = row[row != 0].unsqueeze(0)
        limit = row.size(1) + EXTRA_OUTPUT_TOKENS
        target = torch.tensor([[BOS_ID]])
        for _ in range(limit):
            token = int(model(row, target).logits[0, -1].argmax())
            if token == EOS_ID or target.size(1) == limit:
                break
            target = torch.cat([target, torch.tensor([[token]])], dim=1)
        outputs.append(target[0, 1:].tolist())
    return outputs


@pytest.mark.parametrize("trained", [True, False])
def test_cached_decoding_equals_uncached(reversal, trained):
    model = reversal[0] if trained else Transformer(preset("tiny")).eval()
    source, _, _ = reversal_batch(6, torch.Generator().manual_seed(5))
    assert greedy_decode(model, source) == uncached_greedy(model, source)


@pytest.mark.parametrize("trained", [True, False])
def test_beam_size_one_equals_greedy(reversal, trained):
    model = reversal[0] if trained else Transformer(preset("tiny")).eval()
    source, _, _ = reversal_batch(8, torch.Generator().manual_seed(6))
    assert beam_search(model, source, beam_size=1, alpha=0.6) == greedy_decode(model, source)


def test_batched_beam_search_equals_one_sentence_at_a_time():
    torch.manual_seed(3)
    model = Transformer(preset("tiny")).eval()
    source, _, _ = reversal_batch(5, torch.Generator().manual_seed(7))
    batched = beam_search(model, source, beam_size=3)
    single = [beam_search(model, row[row != 0].unsqueeze(0), beam_size=3)[0] for row in source]
    assert batched == single


def test_outputs_stop_at_input_length_plus_fifty():
    torch.manual_seed(4)
    model = Transformer(preset("tiny")).eval()
    with torch.no_grad():  # make </s> impossible so only the length limit can stop decoding
        model.embedding.weight[EOS_ID] = -10 * model.embedding.weight[EOS_ID].abs().sign()
    source = pad([[5, 6, 7, EOS_ID], [8, 9, EOS_ID]])
    for outputs in (greedy_decode(model, source), beam_search(model, source, beam_size=2)):
        assert [len(o) for o in outputs] == [4 + EXTRA_OUTPUT_TOKENS - 1, 3 + EXTRA_OUTPUT_TOKENS - 1]


def test_beam_search_prefers_the_best_length_normalised_hypothesis(reversal):
    """Every returned hypothesis scores at least as well (log P / lp) as the greedy one."""
    model, _ = reversal
    source, _, _ = reversal_batch(20, torch.Generator().manual_seed(9))

    def score(row: torch.Tensor, output: list[int]) -> float:
        target = torch.tensor([[BOS_ID, *output, EOS_ID]])
        log_probs = torch.log_softmax(model(row.unsqueeze(0), target[:, :-1]).logits, -1)
        total = log_probs.gather(-1, target[:, 1:].unsqueeze(-1)).sum()
        return float(total) / length_penalty(len(output) + 1, 0.6)

    with torch.no_grad():
        for row, beam, greedy in zip(source, beam_search(model, source, 4), greedy_decode(model, source), strict=True):
            assert score(row, beam) >= score(row, greedy) - 1e-4
