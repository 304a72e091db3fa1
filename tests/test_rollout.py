"""Attention rollout, attention flow and the decoder-to-source rollout on hand-made attention whose answers are
worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from transformer.analysis.rollout import (
    MAX_FLOW_TOKENS,
    attention_flow,
    attention_rollout,
    cross_rollout,
    residual_attention,
)

# Two heads averaging to A1 = [[0.2, 0.8], [0.6, 0.4]]; with residual 0.5, Ã1 = 0.5·A1 + 0.5·I.
TWO_HEADS = np.array([[[[0.4, 0.6], [1.0, 0.0]], [[0.0, 1.0], [0.2, 0.8]]]])
A1 = [[0.2, 0.8], [0.6, 0.4]]
A1_TILDE = [[0.6, 0.4], [0.3, 0.7]]
A2 = [[1.0, 0.0], [0.5, 0.5]]
A2_TILDE = [[1.0, 0.0], [0.25, 0.75]]


def stacked(*matrices) -> np.ndarray:
    """[L, 1, S, S] from one [S, S] matrix per layer (a single head)."""
    return np.array(matrices, dtype=float)[:, None]


def random_attention(rng: np.random.Generator, shape: tuple[int, ...], causal: bool = False) -> np.ndarray:
    weights = rng.random(shape)
    if causal:
        weights = weights * np.tril(np.ones(shape[-2:]))
    return weights / weights.sum(axis=-1, keepdims=True)


def test_residual_attention_averages_heads_and_adds_identity():
    np.testing.assert_allclose(residual_attention(TWO_HEADS, residual=0.0), [A1])
    np.testing.assert_allclose(residual_attention(TWO_HEADS), [A1_TILDE])
    np.testing.assert_allclose(residual_attention(TWO_HEADS, residual=1.0), [np.eye(2)])
    with pytest.raises(ValueError, match="residual"):
        residual_attention(TWO_HEADS, residual=1.5)


def test_identity_attention_rolls_out_and_flows_to_identity():
    weights = np.broadcast_to(np.eye(4), (3, 2, 4, 4))
    rollout = attention_rollout(weights)
    assert rollout.shape == (3, 4, 4)
    np.testing.assert_allclose(rollout, np.broadcast_to(np.eye(4), (3, 4, 4)))
    np.testing.assert_allclose(attention_flow(weights), np.eye(4))
    np.testing.assert_allclose(attention_flow(weights, normalise=False), np.eye(4))


def test_one_layer_rollout_is_residual_attention():
    np.testing.assert_allclose(attention_rollout(TWO_HEADS), [A1_TILDE])
    # 3×3 causal: Ã = 0.5·A + 0.5·I worked out entry by entry.
    causal = stacked([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    expected = [[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.1, 0.15, 0.75]]
    np.testing.assert_allclose(attention_rollout(causal, residual=0.5), [expected])


def test_two_layer_rollout_is_the_product_of_the_layers():
    weights = stacked(A1, A2)
    # R2 = Ã2·Ã1: row 0 = Ã1 row 0; row 1 = 0.25·[0.6, 0.4] + 0.75·[0.3, 0.7] = [0.375, 0.625].
    np.testing.assert_allclose(attention_rollout(weights), [A1_TILDE, [[0.6, 0.4], [0.375, 0.625]]])
    # residual 0: A2·A1 = [[0.2, 0.8], 0.5·[0.2, 0.8] + 0.5·[0.6, 0.4]].
    np.testing.assert_allclose(attention_rollout(weights, residual=0.0), [A1, [[0.2, 0.8], [0.4, 0.6]]])


@pytest.mark.parametrize("residual", [0.0, 0.5, 0.9])
def test_rollout_rows_sum_to_one(residual):
    rng = np.random.default_rng(0)
    weights = random_attention(rng, (4, 3, 6, 6))
    rollout = attention_rollout(weights, residual)
    np.testing.assert_allclose(rollout.sum(axis=-1), np.ones((4, 6)))
    assert (rollout >= 0).all()
    causal = attention_rollout(random_attention(rng, (4, 3, 6, 6), causal=True), residual)
    np.testing.assert_allclose(causal.sum(axis=-1), np.ones((4, 6)))
    np.testing.assert_allclose(np.triu(causal, k=1), 0.0)  # nothing reaches a position from later tokens


def test_uniform_attention_without_residual_stays_uniform():
    weights = np.full((3, 2, 5, 5), 0.2)
    np.testing.assert_allclose(attention_rollout(weights, residual=0.0), np.full((3, 5, 5), 0.2))


def test_one_layer_flow_is_the_edge_capacity():
    # A single edge from input j to position i, of capacity Ã[i, j].
    np.testing.assert_allclose(attention_flow(TWO_HEADS, normalise=False), A1_TILDE)
    np.testing.assert_allclose(attention_flow(TWO_HEADS, residual=0.0, normalise=False), A1)


def test_two_layer_flow_is_the_min_cut():
    weights = stacked(A1, A2)
    # Edges input→layer 1: 0→0 0.6, 1→0 0.4, 0→1 0.3, 1→1 0.7; layer 1→layer 2: 0→0 1, 0→1 0.25, 1→1 0.75.
    # To top 0 only through node 0 of layer 1: 0.6 from input 0, 0.4 from input 1.
    # Input 0 → top 1: min(0.6, 0.25) + min(0.3, 0.75) = 0.55.
    # Input 1 → top 1: the cut {(1,0)→(2,1): 0.25, (0,1)→(1,1): 0.7} = 0.95, below 1.0 (into top 1) and 1.1 (out).
    raw = attention_flow(weights, normalise=False)
    np.testing.assert_allclose(raw, [[0.6, 0.4], [0.55, 0.95]])
    np.testing.assert_allclose(attention_flow(weights), [[0.6, 0.4], [0.55 / 1.5, 0.95 / 1.5]])
    # Stopping after the first layer gives that layer's edges.
    np.testing.assert_allclose(attention_flow(weights, layer=0, normalise=False), A1_TILDE)
    with pytest.raises(ValueError, match="layer"):
        attention_flow(weights, layer=2)


def test_flow_refuses_long_sequences():
    size = MAX_FLOW_TOKENS + 1
    weights = np.full((1, 1, size, size), 1.0 / size)
    with pytest.raises(ValueError, match=f"limited to {MAX_FLOW_TOKENS} tokens"):
        attention_flow(weights)


@pytest.mark.parametrize("residual", [0.0, 0.3, 0.5])
def test_cross_rollout_with_identity_self_attention_points_at_the_attended_word(residual):
    source_length, target_length, k = 4, 3, 2
    encoder = np.broadcast_to(np.eye(source_length), (1, 2, source_length, source_length))
    decoder = np.broadcast_to(np.eye(target_length), (1, 2, target_length, target_length))
    cross = np.zeros((1, 2, target_length, source_length))
    cross[..., k] = 1.0
    result = cross_rollout(encoder, decoder, cross, residual)
    expected_source = np.zeros((target_length, source_length))
    expected_source[:, k] = 1.0 - residual
    np.testing.assert_allclose(result["source"], expected_source)
    np.testing.assert_allclose(result["target"], residual * np.eye(target_length))
    np.testing.assert_allclose(result["source_share"], np.full(target_length, 1.0 - residual))


def test_cross_rollout_goes_through_the_encoder_rollout():
    # R_enc = Ã1 = [[0.6, 0.4], [0.3, 0.7]]; one decoder position reading source token 0:
    # R_ts = 0.5·0 + 0.5·[0.6, 0.4] = [0.3, 0.2], R_tt = 0.5·[[1]].
    result = cross_rollout(TWO_HEADS, np.ones((1, 2, 1, 1)), np.array([[[[1.0, 0.0]], [[1.0, 0.0]]]]))
    np.testing.assert_allclose(result["source"], [[0.3, 0.2]])
    np.testing.assert_allclose(result["target"], [[0.5]])
    np.testing.assert_allclose(result["source_share"], [0.5])


@pytest.mark.parametrize("residual", [0.0, 0.5, 0.8])
def test_cross_rollout_rows_account_for_all_mass(residual):
    rng = np.random.default_rng(0)
    layers, heads, source_length, target_length = 3, 2, 5, 4
    encoder = random_attention(rng, (layers, heads, source_length, source_length))
    decoder = random_attention(rng, (layers, heads, target_length, target_length), causal=True)
    cross = random_attention(rng, (layers, heads, target_length, source_length))
    result = cross_rollout(encoder, decoder, cross, residual)
    assert result["source"].shape == (target_length, source_length)
    assert result["target"].shape == (target_length, target_length)
    totals = result["target"].sum(axis=1) + result["source"].sum(axis=1)
    np.testing.assert_allclose(totals, np.ones(target_length))
    np.testing.assert_allclose(result["source_share"], result["source"].sum(axis=1))
    np.testing.assert_allclose(np.triu(result["target"], k=1), 0.0)  # causal decoder: no mass from later inputs


def shapes(layers=2, heads=2, source=4, target=3):
    rng = np.random.default_rng(1)
    return (
        random_attention(rng, (layers, heads, source, source)),
        random_attention(rng, (layers, heads, target, target)),
        random_attention(rng, (layers, heads, target, source)),
    )


ENCODER, DECODER, CROSS = shapes()


@pytest.mark.parametrize(
    ("encoder", "decoder", "cross", "message"),
    [
        (ENCODER[0], DECODER, CROSS, "encoder attention must be shaped"),
        (ENCODER, DECODER, CROSS[0], "cross attention must be shaped"),
        (ENCODER[..., :3], DECODER, CROSS, "as many queries as keys"),
        (ENCODER, DECODER[..., :2], CROSS, "as many queries as keys"),
        (ENCODER[:1], DECODER, CROSS, "same number of layers"),
        (ENCODER, DECODER, CROSS[:, :1], "same number of heads"),
        (ENCODER, DECODER[:, :, :2, :2], CROSS, "queries but the decoder"),
        (ENCODER[:, :, :3, :3], DECODER, CROSS, "keys but the encoder"),
    ],
)
def test_cross_rollout_rejects_mismatched_shapes(encoder, decoder, cross, message):
    with pytest.raises(ValueError, match=message):
        cross_rollout(encoder, decoder, cross)
