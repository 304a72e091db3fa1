"""The decoder's logit lens (:mod:`transformer.analysis.logit_lens`): every layer's output through the final
projection, checked against the model's own output at the last layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.analysis.attention import teacher_forced
from transformer.analysis.logit_lens import LogitLens, logit_lens
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import EOS_ID
from transformer.plots import logit_lens as plot_lens
from transformer.search.decode import greedy_decode


def test_settled_is_the_first_layer_from_which_the_token_stays_on_top():
    rank = np.array([[0, 3, 1, 2], [2, 0, 0, 1], [0, 0, 0, 4]])  # 3 layers × 4 positions
    lens = LogitLens(["a", "b", "c", "d"], np.zeros((3, 4)), rank, [["x"] * 4] * 3)
    # a: top at layers 1 and 3 but not 2 → settled from layer 3 (index 2); b: from 2; c: from 2; d: never
    assert lens.settled() == [2, 1, 1, None]


def test_the_last_layer_is_the_models_own_prediction_and_greedy_tokens_end_on_top(loaded: LoadedCheckpoint):
    source = [*loaded.tokenizer.encode("the small cat sees the big dog."), EOS_ID]
    with torch.no_grad():
        output = greedy_decode(loaded.model, torch.tensor([source]))[0]
        _, logits = teacher_forced(loaded.model, loaded.tokenizer, source, output)
    lens = logit_lens(loaded, source, output)
    layers = loaded.model.config.decoder_layers
    assert lens.probability.shape == lens.rank.shape == (layers, len(output) + 1)
    assert lens.tokens[-1] == "</s>" and lens.tokens[:-1] == loaded.tokenizer.pieces(output)
    expected = torch.softmax(logits.float(), dim=-1)[torch.arange(len(output) + 1), [*output, EOS_ID]]
    assert lens.probability[-1] == pytest.approx(expected.numpy(), abs=1e-5)
    assert (lens.rank[-1] == 0).all()  # greedy: the last layer ranks every written token first
    assert all(layer is not None and 0 <= layer < layers for layer in lens.settled())
    assert all(top == token for top, token in zip(lens.top[-1], lens.tokens, strict=True))
    # the figure: one cell per layer and token, one ring per token where it settles
    fig = plot_lens.lens_figure(lens, "t")
    heatmap, rings = fig.data
    assert np.asarray(heatmap.z).shape == (layers, len(lens.tokens)) and len(rings.x) == len(lens.tokens)
