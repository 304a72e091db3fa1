"""The deletion test: does deleting the source tokens an explanation ranks highest hurt the token more than deleting
random ones?"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.analysis import faithfulness as ft
from transformer.analysis.attention import teacher_forced
from transformer.paper.tokenizer import EOS_ID


@pytest.fixture(scope="module")
def pairs(loaded):
    """Fixed sentence pairs of the synthetic corpus' words, teacher-forced (the outputs are not searched)."""
    texts = [
        ("the small dog sees the red house.", "der kleine hund sieht das rote haus."),
        ("a big cat likes the old tree.", "eine große katze mag den alten baum."),
    ]
    encode = loaded.tokenizer.encode
    return [([*encode(english), EOS_ID], encode(german)) for english, german in texts]


def test_a_tokens_log_probability_is_the_teacher_forced_one(loaded, pairs):
    source, output = pairs[0]
    _, logits = teacher_forced(loaded.model, loaded.tokenizer, source, output)
    expected = torch.log_softmax(logits.float(), -1)[2, output[2]]
    assert ft.token_log_probabilities(loaded, [source, source], output, 2) == pytest.approx(
        [float(expected)] * 2, abs=1e-4
    )
    assert ft.without([5, 6, 7, 8], [0, 2]) == [6, 8]


def leave_one_out(loaded, _maps, source, output, position) -> np.ndarray:
    """The exact drop each single deletion causes: the best possible ranking for k = 1."""
    base = ft.token_log_probabilities(loaded, [source], output, position)[0]
    variants = [ft.without(source, [i]) for i in range(len(source) - 1)]
    return base - ft.token_log_probabilities(loaded, variants, output, position)


def test_an_oracle_beats_chance_and_its_opposite_loses_to_it(loaded, pairs):
    """Known answers: ranking by the true single-deletion drop gives the largest k = 1 drop there is, so at least
    the average random one; ranking by its opposite gives the smallest, so at most the average."""
    oracle = ft.Explanation("oracle", leave_one_out)
    opposite = ft.Explanation("opposite", lambda *args: -leave_one_out(*args))
    results = {
        r.explanation: r for r in ft.deletion_test(loaded, pairs, [oracle, opposite], ks=(1,), tokens_per_pair=3)
    }
    assert results["oracle"].tokens == results["opposite"].tokens == 6
    assert results["oracle"].drop >= results["oracle"].random_drop >= results["opposite"].drop
    assert results["oracle"].gain > 0 or results["oracle"].drop == results["opposite"].drop
    # Intervals over the two sentences (their tokens resampled together); the oracle's gain is never negative on
    # any resample, since it is at least the random drop at every token.
    oracle = results["oracle"]
    assert oracle.sentences == 2 and oracle.drop_interval[0] <= oracle.drop_interval[1]
    assert oracle.gain_interval[0] >= -1e-9


def test_every_explanation_ranks_the_source_tokens(loaded, pairs):
    source, output = pairs[0]
    maps, _ = teacher_forced(loaded.model, loaded.tokenizer, source, output)
    config = loaded.model.config
    for explanation in ft.explanations(config.decoder_layers, extra_heads=[(0, 1)]):
        scores = np.asarray(explanation.rank(loaded, maps, source, output, 1))
        assert scores.shape == (len(source),) and np.isfinite(scores).all(), explanation.name
