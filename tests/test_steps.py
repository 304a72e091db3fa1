"""The step-by-step view recomputes one head from the model's own tensors: every step must agree with the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis.attention import KINDS, entropy_bits, translate_with_attention
from transformer.analysis.steps import STEPS, head_scaling, head_steps, next_tokens, scaling_demo
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.tokenizer import readable_pieces
from transformer.search.decode import EXTRA_OUTPUT_TOKENS, GREEDY


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
    assert (steps.query_tokens, steps.key_tokens) == tuple(map(readable_pieces, maps.tokens(kind)))  # as read
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


def test_random_dot_products_have_variance_d_k_and_the_scaling_keeps_the_softmax_soft():
    narrow, wide = scaling_demo(4), scaling_demo(256)
    for demo in (narrow, wide):
        assert demo.variance == pytest.approx(demo.d_k, rel=0.15)
        assert demo.dots.mean() == pytest.approx(0, abs=0.1 * np.sqrt(demo.d_k))
    # Unscaled, a wide head's softmax saturates: one key takes most of the weight; scaled, the width does not matter.
    assert wide.entropy(scaled=False) < 0.5 * narrow.entropy(scaled=False)
    assert wide.largest_weight(scaled=False) > 0.7
    assert wide.entropy(scaled=True) == pytest.approx(narrow.entropy(scaled=True), abs=0.1)
    with pytest.raises(ValueError):
        scaling_demo(0)


def test_the_heads_own_scaling_is_measured_on_what_each_query_sees(translated):
    loaded, translation = translated
    steps = head_steps(loaded.model, loaded.tokenizer, translation.source_ids, translation.output_ids, "decoder", 1, 2)
    values = head_scaling(steps)
    np.testing.assert_allclose(values["unscaled_scores"], values["scaled_scores"] * np.sqrt(steps.d_k), rtol=1e-5)
    assert len(values["scaled_scores"]) == steps.mask.sum()  # the causal mask's hidden keys are left out
    np.testing.assert_allclose(values["entropy_scaled"], entropy_bits(translation.maps.decoder[1, 2]), atol=1e-4)
    np.testing.assert_allclose(values["uniform"], np.log2(np.arange(1, len(steps.query_tokens) + 1)))


def test_greedy_output_is_the_most_probable_piece_at_every_position(translated):
    loaded, translation = translated
    upcoming = next_tokens(loaded.model, loaded.tokenizer, translation.source_ids, translation.output_ids, k=3)
    assert len(upcoming.chosen) == len(translation.output_ids) + 1 and upcoming.chosen[-1] == "</s>"
    # Greedy search keeps the argmax; only a closing </s> can be otherwise, when the output reached its length
    # limit (input + 50 pieces) and the search stopped it there.
    assert (upcoming.chosen_rank[:-1] == 1).all()
    stopped = len(translation.output_ids) >= len(translation.source_ids) + EXTRA_OUTPUT_TOKENS - 1
    assert upcoming.chosen_rank[-1] == 1 or stopped
    np.testing.assert_allclose(upcoming.chosen_probability[:-1], upcoming.top_probabilities[:-1, 0], rtol=1e-6)
    assert (np.diff(upcoming.top_probabilities, axis=1) <= 0).all()
    assert [tokens[0] for tokens in upcoming.top_tokens[:-1]] == upcoming.chosen[:-1]
