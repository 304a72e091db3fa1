"""The model against the paper's formulas and against torch.nn reference modules."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer.paper.config import ModelConfig, preset
from transformer.paper.dropout import Dropout
from transformer.paper.loss import label_smoothed_losses, projected_label_smoothed_loss
from transformer.paper.model import MultiHeadAttention, Transformer
from transformer.paper.positional import sinusoidal_positional_encoding

PAD = 0


def tiny_model(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", **overrides)).eval()


def random_ids(batch: int, length: int, vocab: int = 64, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(4, vocab, (batch, length), generator=generator)


def test_causal_mask_hides_the_future():
    model = tiny_model()
    source = random_ids(2, 7)
    target = random_ids(2, 9, seed=2)
    changed = target.clone()
    changed[:, 5:] = random_ids(2, 4, seed=3)
    before = model(source, target).logits
    after = model(source, changed).logits
    assert torch.allclose(before[:, :5], after[:, :5], atol=1e-6)
    assert not torch.allclose(before[:, 5:], after[:, 5:], atol=1e-3)


def test_attention_rows_sum_to_one_and_ignore_padding():
    model = tiny_model()
    source = random_ids(2, 8)
    source[0, 5:] = PAD
    target = random_ids(2, 6, seed=4)
    target[1, 4:] = PAD
    out = model(source, target, need_weights=True)
    config = model.config
    assert out.encoder_attention.shape == (2, config.encoder_layers, config.num_heads, 8, 8)
    assert out.decoder_attention.shape == (2, config.decoder_layers, config.num_heads, 6, 6)
    assert out.cross_attention.shape == (2, config.decoder_layers, config.num_heads, 6, 8)
    for weights in (out.encoder_attention, out.decoder_attention, out.cross_attention):
        assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-5)
    assert out.encoder_attention[0, ..., 5:].abs().max() == 0
    assert out.cross_attention[0, ..., 5:].abs().max() == 0
    # Decoder self-attention: nothing above the diagonal (the future), nothing on target padding from real tokens.
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    assert out.decoder_attention[..., future].abs().max() == 0
    assert out.decoder_attention[1, :, :, :4, 4:].abs().max() == 0


def test_fused_and_explicit_attention_give_the_same_outputs():
    model = tiny_model()
    source = random_ids(3, 10)
    source[1, 6:] = PAD
    target = random_ids(3, 7, seed=5)
    target[2, 3:] = PAD
    fused = model(source, target, need_weights=False)
    explicit = model(source, target, need_weights=True)
    assert fused.encoder_attention is None
    assert torch.allclose(fused.logits, explicit.logits, atol=1e-5)


def test_positional_encoding_matches_the_formula():
    d_model = 16
    encoding = sinusoidal_positional_encoding(50, d_model)
    for position in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = position / 10000 ** (2 * i / d_model)
            assert encoding[position, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert encoding[position, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_positional_encoding_of_an_offset_is_a_linear_function():
    """§3.5: for any fixed k, PE(pos + k) = M_k · PE(pos) with M_k independent of pos (a block rotation)."""
    d_model, offset = 32, 5
    encoding = sinusoidal_positional_encoding(120, d_model).double()
    rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        theta = offset / 10000 ** (2 * i / d_model)
        c, s = math.cos(theta), math.sin(theta)
        # sin(a + θ) = sin a cos θ + cos a sin θ; cos(a + θ) = cos a cos θ − sin a sin θ
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    predicted = encoding[:-offset] @ rotation.T
    assert torch.allclose(predicted, encoding[offset:], atol=1e-5)
    # And a least-squares fit of that map on the even positions predicts the odd ones.
    inputs, outputs = encoding[:-offset], encoding[offset:]
    fitted = torch.linalg.lstsq(inputs[0::2], outputs[0::2]).solution
    assert torch.allclose(inputs[1::2] @ fitted, outputs[1::2], atol=1e-4)


def test_multi_head_attention_matches_torch_reference():
    d_model, heads = 32, 4
    torch.manual_seed(0)
    ours = MultiHeadAttention(d_model, heads).eval()
    reference = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
        reference.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        reference.out_proj.weight.copy_(ours.output.weight)
        reference.out_proj.bias.copy_(ours.output.bias)
    query = torch.randn(2, 5, d_model)
    memory = torch.randn(2, 7, d_model)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, 4:] = True
    expected, expected_weights = reference(
        query, memory, memory, key_padding_mask=padding, need_weights=True, average_attn_weights=False
    )
    for need_weights in (False, True):
        got, weights = ours(query, memory, mask=~padding[:, None, None, :], need_weights=need_weights)
        assert torch.allclose(got, expected, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)


def test_embeddings_are_shared_and_scaled():
    model = tiny_model(vocab_size=100)
    config = model.config
    ids = random_ids(1, 4)
    expected = model.embedding.weight[ids] * math.sqrt(config.d_model) + model.positional_encoding[:4]
    assert torch.allclose(model.embed(ids), expected)
    hidden = torch.randn(1, 3, config.d_model)
    assert torch.allclose(model.project(hidden), hidden @ model.embedding.weight.T, atol=1e-6)
    matrices = [p for p in model.parameters() if p.shape == (config.vocab_size, config.d_model)]
    assert len(matrices) == 1, "source, target and output must share one embedding matrix"


def test_sub_layers_are_post_norm():
    """Each layer's output is LayerNorm's output: zero mean and unit variance per position (gain 1, bias 0)."""
    model = tiny_model()
    memory, _ = model.encode(random_ids(2, 6))
    assert torch.allclose(memory.mean(-1), torch.zeros(2, 6), atol=1e-5)
    assert torch.allclose(memory.var(-1, unbiased=False), torch.ones(2, 6), atol=1e-3)


def test_dropout_is_active_only_in_training():
    model = tiny_model(dropout=0.5)
    source, target = random_ids(2, 6), random_ids(2, 5, seed=7)
    model.train()
    assert not torch.allclose(model(source, target).logits, model(source, target).logits)
    model.eval()
    assert torch.equal(model(source, target).logits, model(source, target).logits)


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_dropout_drops_the_requested_share_of_every_element_and_rescales_the_rest(p):
    """Each element is dropped with probability p (four elements share one 64-bit draw: all four positions are
    checked), kept ones are scaled by 1/(1-p), the gradient passes through the same mask, and the mask follows
    torch.manual_seed."""
    dropout = Dropout(p).train()
    x = torch.ones(400, 1001, requires_grad=True)  # an odd size: the last draw is only partly used
    torch.manual_seed(3)
    y = dropout(x)
    assert y.detach().unique().tolist() == [0.0, pytest.approx(1 / (1 - p))]
    dropped = (y == 0).flatten().float()
    for lane in range(4):
        assert dropped[lane::4].mean().item() == pytest.approx(p, abs=0.004)  # ~0.0009 standard error
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())
    torch.manual_seed(3)
    assert torch.equal(dropout(x), y)
    assert torch.equal(dropout.eval()(x), x)


def test_dropout_matches_nn_dropout_in_expectation_and_falls_back_where_it_should(monkeypatch: pytest.MonkeyPatch):
    torch.manual_seed(0)
    x = torch.randn(64, 257)
    dropout = Dropout(0.1).train()
    mean = torch.stack([dropout(x) for _ in range(400)]).mean(0)
    assert torch.allclose(mean, x, atol=0.1 * x.abs().max().item())  # unbiased: E[dropout(x)] = x
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))
    assert torch.equal(Dropout(0.0).train()(x), x)
    monkeypatch.setattr(Dropout, "cheap_mask", False)
    torch.manual_seed(5)
    ours = dropout(x)
    torch.manual_seed(5)
    assert torch.equal(ours, nn.functional.dropout(x, 0.1, True))


@pytest.mark.parametrize("block_rows", [None, 1, 4])
def test_block_wise_projection_and_loss_equal_the_plain_ones(block_rows):
    """Projection and label-smoothed loss formed block by block (no whole logits) give F.cross_entropy's sum and
    the gradients of the plain logits → log-softmax path, for the hidden states and the (shared) weight."""
    torch.manual_seed(0)
    hidden = torch.randn(11, 16, requires_grad=True)
    weight = (0.3 * torch.randn(37, 16)).requires_grad_()
    target = torch.randint(1, 37, (11,))
    loss, nll = projected_label_smoothed_loss(hidden, weight, target, 0.1, block_rows=block_rows)
    (2.5 * loss).backward()  # a non-unit upstream gradient
    grads = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    logits = hidden @ weight.t()
    expected = nn.functional.cross_entropy(logits, target, label_smoothing=0.1, reduction="sum")
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert nll.item() == pytest.approx(nn.functional.cross_entropy(logits, target, reduction="sum").item(), rel=1e-5)
    assert not nll.requires_grad
    (2.5 * label_smoothed_losses(logits, target, 0.1)[0].sum()).backward()
    assert torch.allclose(grads[0], hidden.grad, atol=1e-5)
    assert torch.allclose(grads[1], weight.grad, atol=1e-5)
    with torch.no_grad():  # evaluation: the same sums, nothing to differentiate
        assert projected_label_smoothed_loss(hidden, weight, target, 0.1, block_rows)[0].item() == pytest.approx(
            loss.item()
        )


def test_the_training_loss_skips_padding_and_matches_the_logits_path():
    """model(…, target_output=…) gives the loss and gradients of logits → loss over the non-padding targets."""
    model = tiny_model()  # tiny: no dropout, so both passes see the same network
    source, target = torch.tensor([[5, 6, 7, 8, 3, 0]]), torch.tensor([[2, 9, 10, 11, 3, 0, 0]])
    output = model(source, target[:, :-1], target_output=target[:, 1:], label_smoothing=0.1)
    assert output.logits is None
    output.loss.backward()
    grad = model.embedding.weight.grad.clone()
    model.zero_grad()
    logits = model(source, target[:, :-1]).logits[target[:, 1:] != PAD]
    expected = nn.functional.cross_entropy(
        logits, target[:, 1:][target[:, 1:] != PAD], label_smoothing=0.1, reduction="sum"
    )
    expected.backward()
    assert output.loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert torch.allclose(grad, model.embedding.weight.grad, atol=1e-5)


def test_base_preset_has_the_papers_parameter_count():
    model = Transformer(preset("base", vocab_size=37000))
    assert model.num_parameters() == pytest.approx(65e6, rel=0.05)


def test_big_preset_has_the_papers_parameter_count():
    config = preset("big", vocab_size=37000)
    assert (config.d_model, config.d_ff, config.num_heads, config.dropout) == (1024, 4096, 16, 0.3)
    assert Transformer(config).num_parameters() == pytest.approx(213e6, rel=0.05)


def test_too_long_input_is_refused_with_a_clear_message():
    model = tiny_model()
    with pytest.raises(ValueError, match="exceeds the model's 256 positions"):
        model.encode(random_ids(1, 300))


@pytest.mark.parametrize("name", ["tiny", "small", "base", "big"])
def test_presets_round_trip_through_json(name):
    config = preset(name)
    assert ModelConfig.from_json(config.to_json()) == config


def test_invalid_configs_are_refused():
    with pytest.raises(ValueError, match="not divisible"):
        ModelConfig(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="unknown model config keys: colour"):
        ModelConfig.from_dict({"colour": "red"})
    with pytest.raises(ValueError, match="unknown preset"):
        preset("huge")


def test_small_preset_is_the_papers_depth_and_heads():
    config = preset("small")
    assert (config.encoder_layers, config.decoder_layers, config.num_heads, config.d_model, config.d_ff) == (
        6,
        6,
        8,
        256,
        1024,
    )


def test_one_product_for_the_projections_changes_nothing(monkeypatch: pytest.MonkeyPatch):
    """Fused Q/K/V (and cross-attention K/V) products give the paper's separate projections' outputs and gradients."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny")).eval()  # no dropout: the two passes must see the same network
    source, target = torch.tensor([[5, 6, 7, 8, 3, 0]]), torch.tensor([[2, 9, 10, 11, 0]])
    results = []
    for fused in (True, False):
        monkeypatch.setattr(MultiHeadAttention, "fused_projections", fused)
        model.zero_grad()
        logits = model(source, target).logits
        logits.square().sum().backward()
        results.append((logits.detach(), model.encoder_layers[0].self_attention.key.weight.grad.clone()))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-5)
    assert torch.allclose(results[0][1], results[1][1], atol=1e-5)


def test_branch_gain_shrinks_only_the_residual_branches():
    plain, scaled = Transformer(preset("tiny")), Transformer(preset("tiny"))
    torch.manual_seed(0)
    plain.reset_parameters()
    torch.manual_seed(0)
    scaled.reset_parameters(branch_gain=0.5)
    layer, reference = scaled.encoder_layers[0], plain.encoder_layers[0]
    for name in ("value", "output"):
        assert torch.allclose(
            getattr(layer.self_attention, name).weight, getattr(reference.self_attention, name).weight * 0.5
        )
    assert torch.allclose(layer.feed_forward.outer.weight, reference.feed_forward.outer.weight * 0.5)
    assert torch.equal(layer.self_attention.query.weight, reference.self_attention.query.weight)
    assert torch.equal(scaled.embedding.weight, plain.embedding.weight)


def test_config_records_the_language_pair_and_older_configs_read_as_english_to_german(tmp_path):
    from transformer.paper.config import ModelConfig, language_name, preset

    config = preset("tiny", source_language="en", target_language="fr")
    assert ModelConfig.from_json(config.to_json()) == config
    older = {key: value for key, value in preset("tiny").to_dict().items() if not key.endswith("_language")}
    assert (ModelConfig.from_dict(older).source_language, ModelConfig.from_dict(older).target_language) == ("en", "de")
    assert (language_name("fr"), language_name("xx")) == ("French", "xx")


def small_model() -> tuple[Transformer, torch.Tensor, torch.Tensor]:
    """The tiny model (2 layers of 4 heads per kind) with a batch of two sentences."""
    return tiny_model(), random_ids(2, 7), random_ids(2, 5, seed=2)


def test_a_head_mask_of_ones_changes_nothing():
    model, source, target = small_model()
    with torch.no_grad():
        plain = model(source, target).logits
        ones = {kind: torch.ones(2, 4) for kind in ("encoder", "decoder", "cross")}
        kept = model(source, target, head_mask=ones).logits
    assert torch.equal(plain, kept)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_switching_a_head_off_zeroes_its_output_before_the_output_projection(kind):
    """Michel et al.: head h off ≡ its columns of Wᴼ set to zero."""
    model, source, target = small_model()
    layer, head, width = 1, 2, model.config.d_model // model.config.num_heads
    mask = torch.ones(2, 4)
    mask[layer, head] = 0
    with torch.no_grad():
        masked = model(source, target, head_mask={kind: mask}).logits
        assert not torch.allclose(masked, model(source, target).logits)
        model.attention_modules(kind)[layer].output.weight[:, head * width : (head + 1) * width] = 0
        reference = model(source, target).logits
    torch.testing.assert_close(masked, reference)


def test_head_masks_hold_only_inside_their_block_and_are_checked():
    model, source, target = small_model()
    off = {"cross": torch.zeros(2, 4)}
    with torch.no_grad(), model.head_mask(off):
        inside = model(source, target).logits
    with torch.no_grad():
        after = model(source, target).logits
        assert torch.equal(model(source, target, head_mask=off).logits, inside)
    assert not torch.allclose(inside, after)
    assert all(
        module.head_gate is None for kind in ("encoder", "decoder", "cross") for module in model.attention_modules(kind)
    )
    with pytest.raises(ValueError, match="head mask of shape"), model.head_mask({"encoder": torch.ones(3, 4)}):
        pass
    with pytest.raises(ValueError, match="attention kind"), model.head_mask({"sideways": torch.ones(2, 4)}):
        pass
