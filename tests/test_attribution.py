"""Gradient attributions (captum) of one output token to the source and the target prefix."""

from __future__ import annotations

import builtins
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis import attribution as at
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.tokenizer import BOS_ID, EOS_ID


@pytest.fixture(scope="module")
def sentence(loaded):
    """A source and an output fixed here (teacher-forced, not searched), ending with </s> / without it."""
    return [*loaded.tokenizer.encode("the small dog sees the red house."), EOS_ID], loaded.tokenizer.encode(
        "der kleine hund sieht das rote haus."
    )


def score_with(model, source_ids, output_ids, position, source_embedded, prefix_embedded) -> float:
    """log p(token at position) with the given input embeddings, computed here without captum."""
    source = torch.tensor([source_ids])
    prefix = torch.tensor([[BOS_ID, *output_ids[:position]]])
    with torch.no_grad():
        memory, _ = model.encode(source, embedded=source_embedded)
        hidden, _, _ = model.decode(prefix, memory, model.source_mask(source), embedded=prefix_embedded)
        return float(torch.log_softmax(model.project(hidden[0, -1]), -1)[output_ids[position]])


def test_integrated_gradients_add_up_to_the_change_of_the_score(loaded, sentence):
    """Completeness: the attributions sum to F(input) − F(baseline), the baseline keeping only the positional
    encoding; the score itself is the token's log-probability."""
    source_ids, output_ids = sentence
    model = loaded.model
    position = len(output_ids) - 1
    found = at.attribute(model, source_ids, output_ids, position, "integrated_gradients")
    source, prefix = torch.tensor([source_ids]), torch.tensor([[BOS_ID, *output_ids[:position]]])
    full = score_with(model, source_ids, output_ids, position, model.embed(source), model.embed(prefix))
    pe = model.positional_encoding
    baseline = score_with(
        model, source_ids, output_ids, position, pe[None, : source.shape[1]], pe[None, : prefix.shape[1]]
    )
    assert found.score == pytest.approx(full, abs=1e-4)
    assert found.score == pytest.approx(
        float(at.log_probabilities(model, source_ids, output_ids, position)[found.token])
    )
    change = full - baseline
    assert found.source.sum() + found.prefix.sum() == pytest.approx(change, abs=0.02 * abs(change) + 1e-3)
    assert found.delta is not None and found.delta <= 0.02 * abs(change) + 1e-3
    assert found.source.shape == (len(source_ids),) and found.prefix.shape == (position + 1,)


def test_a_decoder_that_cannot_see_the_source_gets_no_attribution_from_it(trained_checkpoint: Path, sentence):
    """Known answer: with every cross-attention output projection zeroed, the score does not depend on the source
    at all, so every method gives the source exactly nothing and the prefix everything."""
    model = load_checkpoint(trained_checkpoint).model
    with torch.no_grad():
        for layer in model.decoder_layers:
            layer.cross_attention.output.weight.zero_()
            layer.cross_attention.output.bias.zero_()
    source_ids, output_ids = sentence
    for method in at.METHODS:
        found = at.attribute(model, source_ids, output_ids, len(output_ids) - 1, method)
        assert np.abs(found.source).max() == 0.0, method
        assert np.abs(found.prefix).max() > 0.0 and found.source_share() == 0.0, method


def test_the_contrastive_score_is_the_margin_over_the_alternative(loaded, sentence):
    source_ids, output_ids = sentence
    log_p = at.log_probabilities(loaded.model, source_ids, output_ids, 0)
    alternative = int(log_p.topk(2).indices[1]) if int(log_p.argmax()) == output_ids[0] else int(log_p.argmax())
    found = at.attribute(loaded.model, source_ids, output_ids, 0, "input_x_gradient", alternative=alternative)
    assert found.alternative == alternative
    assert found.score == pytest.approx(float(log_p[output_ids[0]] - log_p[alternative]), abs=1e-4)


def test_bad_requests_are_refused_with_a_reason(loaded, sentence, monkeypatch: pytest.MonkeyPatch):
    source_ids, output_ids = sentence
    with pytest.raises(ValueError, match="unknown attribution method"):
        at.attribute(loaded.model, source_ids, output_ids, 0, "lime")
    with pytest.raises(ValueError, match="outside"):
        at.attribute(loaded.model, source_ids, output_ids, len(output_ids))
    real_import = builtins.__import__

    def no_captum(name, *args, **kwargs):
        if name.startswith("captum"):
            raise ImportError("No module named 'captum'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_captum)
    with pytest.raises(at.AttributionUnavailable, match="pip install captum"):
        at.attribute(loaded.model, source_ids, output_ids, 0)
