"""The step-by-step view recomputes one head from the model's own tensors: every step must agree with the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis.attention import KINDS, translate_with_attention
from transformer.analysis.steps import STEPS, head_steps
from transformer.checkpoint import load_checkpoint
from transformer.decode import GREEDY


@pytest.fixture(scope="module")
def translated(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    translation = translate_with_attention(loaded.model, loaded.tokenizer, "the cat sat on the mat.", GREEDY)
    return loaded, translation


@pytest.mark.parametrize("kind", KINDS)
def test_every_step_agrees_with_the_models_own_pass(translated, kind):
    loaded, translation = translated
    maps = translation.maps
    layer, head = maps.num_layers - 1, maps.num_heads - 1
    steps = head_steps(
        loaded.model, loaded.tokenizer, translation.source_ids, translation.output_ids, kind, layer, head
    )
    # The weights are the app's attention map of that head.
    np.testing.assert_allclose(steps.weights, maps.weights(kind)[layer, head], atol=1e-5)
    assert (steps.query_tokens, steps.key_tokens) == maps.tokens(kind)
    # The head's output, all heads joined, the output projection and the closing LayerNorm are the model's own.
    np.testing.assert_allclose(steps.head_output, steps.model_concatenated[:, steps.head_columns], atol=1e-5)
    assert max(steps.agreement().values()) < 1e-4
    # The steps in between follow Eq. 1.
    np.testing.assert_allclose(steps.scores, steps.q @ steps.k.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(steps.scaled, steps.scores / np.sqrt(steps.d_k), rtol=1e-5, atol=1e-6)
    assert np.isneginf(steps.masked[~steps.mask]).all() and (steps.weights[~steps.mask] == 0).all()
    np.testing.assert_allclose(steps.weights.sum(-1), 1.0, atol=1e-5)


def test_the_decoders_self_attention_is_causal_and_cross_attention_reads_the_encoder(translated):
    loaded, translation = translated
    ids = translation.source_ids, translation.output_ids
    decoder = head_steps(loaded.model, loaded.tokenizer, *ids, "decoder", 0, 0)
    length = len(decoder.query_tokens)
    assert (decoder.mask == np.tri(length, dtype=bool)).all()  # each position sees itself and the ones before
    cross = head_steps(loaded.model, loaded.tokenizer, *ids, "cross", 0, 0)
    with torch.no_grad():
        encoder_output = loaded.model.encode(torch.tensor([translation.source_ids]))[0][0].numpy()
    np.testing.assert_allclose(cross.memory, encoder_output, atol=1e-5)
    assert cross.mask.all() and cross.embedding is None


def test_layer_one_starts_from_the_scaled_embedding_plus_positions(translated):
    loaded, translation = translated
    steps = head_steps(loaded.model, loaded.tokenizer, translation.source_ids, translation.output_ids, "encoder", 0, 1)
    np.testing.assert_allclose(steps.x, steps.embedding + steps.positional, atol=1e-5)
    assert steps.w_q.shape == (loaded.config.d_model, steps.d_k)
    bias = loaded.model.encoder_layers[0].self_attention.query.bias[steps.head_columns].detach().numpy()
    np.testing.assert_allclose(steps.q, steps.x @ steps.w_q + bias, atol=1e-4)


def test_out_of_range_choices_are_refused(translated):
    loaded, translation = translated
    ids = translation.source_ids, translation.output_ids
    with pytest.raises(ValueError, match="layer"):
        head_steps(loaded.model, loaded.tokenizer, *ids, "encoder", 99, 0)
    with pytest.raises(ValueError, match="head"):
        head_steps(loaded.model, loaded.tokenizer, *ids, "cross", 0, 99)
    with pytest.raises(ValueError, match="kind"):
        head_steps(loaded.model, loaded.tokenizer, *ids, "sideways", 0, 0)
    assert STEPS[0].key == "x" and STEPS[-1].key == "output"
