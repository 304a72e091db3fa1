"""Greedy and beam search: a tiny model learns to reverse sequences, and the decoders agree where they must."""

from __future__ import annotations

import pytest
import torch

from transformer.cli.training.validation import sequence_losses
from transformer.paper.config import preset
from transformer.paper.data import pad
from transformer.paper.model import Transformer
from transformer.paper.schedule import learning_rate
from transformer.paper.tokenizer import BOS_ID, EOS_ID
from transformer.search import fast, packed
from transformer.search.decode import (
    EXTRA_OUTPUT_TOKENS,
    GREEDY,
    BeamRecorder,
    DecodingOptions,
    beam_search,
    greedy_decode,
    length_penalty,
    search,
    search_model,
)
from transformer.search.fast import StepDecoder, encode

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


@pytest.mark.parametrize("beams", [1, 3])
def test_a_finished_sentence_leaves_the_batch(beams, monkeypatch):
    """A batch costs what its sentences need: once the short sentence's search has ended, the search goes on with
    the long one's rows only, and finds what it finds alone (greedy decoding for one beam)."""
    torch.manual_seed(4)
    model = Transformer(preset("tiny")).eval()
    with torch.no_grad():  # no </s>: each sentence runs to its own length limit, the short one's first
        model.embedding.weight[EOS_ID] = -10 * model.embedding.weight[EOS_ID].abs().sign()
    short, long = [5, 6, EOS_ID], [7, 8, 9, 10, 11, 12, 13, 14, EOS_ID]
    rows = []
    step = StepDecoder.step

    def counting(decoder, tokens):
        rows.append(tokens.size(0))
        return step(decoder, tokens)

    def decoded(source):
        return greedy_decode(model, source) if beams == 1 else beam_search(model, source, beam_size=beams)

    monkeypatch.setattr(StepDecoder, "step", counting)
    batched = decoded(pad([short, long]))
    monkeypatch.undo()
    assert [len(output) for output in batched] == [
        len(short) + EXTRA_OUTPUT_TOKENS - 1,
        len(long) + EXTRA_OUTPUT_TOKENS - 1,
    ]
    assert rows.count(2 * beams) == len(short) + EXTRA_OUTPUT_TOKENS  # both sentences' rows until the short one ends
    assert set(rows[rows.count(2 * beams) :]) == {beams}  # then the long one's alone
    assert batched == [decoded(pad([source]))[0] for source in (short, long)]


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


def beam_search_counting_steps(
    model: Transformer, source: torch.Tensor, monkeypatch, **options
) -> tuple[list[list[int]], int]:
    """Beam search, and how many decoder steps it ran."""
    steps = []
    step = StepDecoder.step
    with monkeypatch.context() as patch:
        patch.setattr(StepDecoder, "step", lambda decoder, tokens: steps.append(1) or step(decoder, tokens))
        return beam_search(model, source, **options), len(steps)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_early_stop_saves_steps_without_changing_results(reversal, alpha, monkeypatch):
    """Stopping once no live hypothesis can beat the best finished one must cut steps and never change a result.

    An untrained model with a raised </s> logit finishes some hypotheses early while others run on to the limit.
    """
    torch.manual_seed(8)
    untrained = Transformer(preset("tiny")).eval()
    logits = StepDecoder.logits
    source, _, _ = reversal_batch(6, torch.Generator().manual_seed(10))
    saved = 0
    for model, eos_bonus in ((reversal[0], 0.0), (untrained, 0.0), (untrained, 2.4), (untrained, 2.8)):
        monkeypatch.setattr(
            StepDecoder,
            "logits",
            lambda decoder, hidden, bonus=eos_bonus: logits(decoder, hidden).index_add(
                -1, torch.tensor([EOS_ID]), torch.full((*hidden.shape[:-1], 1), bonus)
            ),
        )
        for row in source:
            row = row[row != 0].unsqueeze(0)
            fast, fast_steps = beam_search_counting_steps(model, row, monkeypatch, beam_size=4, alpha=alpha)
            full, full_steps = beam_search_counting_steps(
                model, row, monkeypatch, beam_size=4, alpha=alpha, early_stop=False
            )
            assert fast == full
            assert fast_steps <= full_steps
            saved += full_steps - fast_steps
    assert saved > 0


def test_early_stop_waits_for_a_longer_hypothesis_that_can_still_win(monkeypatch):
    """With α = 1, a hypothesis finished at step 1 (log P ≈ -0.55) loses to one that ends at step 12 (log P ≈ -0.85,
    divided by a 2.8× larger length penalty). The search must not stop after step 1 just because the live one
    scores worse *now*; only the largest penalty it could still reach bounds it."""
    model = Transformer(preset("tiny")).eval()
    steps = []

    def scripted_logits(hidden: torch.Tensor) -> torch.Tensor:
        steps.append(1)
        logits = torch.full((hidden.size(0), model.config.vocab_size), -30.0)
        if len(steps) == 1:
            logits[:, EOS_ID], logits[:, 5] = -1.0, -1.3
        elif len(steps) < 12:
            logits[:, 6] = 0.0
        else:
            logits[:, EOS_ID] = 0.0
        return logits

    monkeypatch.setattr(StepDecoder, "logits", lambda decoder, hidden: scripted_logits(hidden))
    assert beam_search(model, torch.tensor([[7, 8, EOS_ID]]), beam_size=2, alpha=1.0) == [[5] + [6] * 10]
    assert len(steps) == 12


def test_the_search_goes_on_after_beam_size_hypotheses_finish_while_a_longer_one_can_win(monkeypatch):
    """Beam 2, α = 1. After step 2 two hypotheses have finished: the empty one (log P ≈ -1.02) and "5" (≈ -1.12, score
    -0.96), while "6 7" lives on at ≈ -1.17 and every later token is certain until </s> at step 12 (score ≈ -0.41).
    A search that ends once beam_size hypotheses have finished returns "5"; the search must go on while a live
    hypothesis can still win, as tensor2tensor's (the paper's code) does."""
    model = Transformer(preset("tiny")).eval()
    step = StepDecoder.step
    seen: dict[str, object] = {}

    def remembering(decoder: StepDecoder, tokens: torch.Tensor) -> torch.Tensor:
        seen["tokens"], seen["position"] = tokens.tolist(), decoder.length
        return step(decoder, tokens)

    def scripted_logits(decoder: StepDecoder, hidden: torch.Tensor) -> torch.Tensor:
        logits = torch.full((hidden.size(0), model.config.vocab_size), -30.0)
        for row, token in enumerate(seen["tokens"]):
            if token == BOS_ID:
                logits[row, EOS_ID], logits[row, 5], logits[row, 6] = -0.9, -1.0, -1.05
            elif token == 5:
                logits[row, EOS_ID] = 0.0
            elif seen["position"] < 11:
                logits[row, 7] = 0.0
            else:
                logits[row, EOS_ID] = 0.0
        return logits

    monkeypatch.setattr(StepDecoder, "step", remembering)
    monkeypatch.setattr(StepDecoder, "logits", scripted_logits)
    assert beam_search(model, torch.tensor([[7, 8, EOS_ID]]), beam_size=2, alpha=1.0) == [[6] + [7] * 10]


def test_a_settled_n_best_list_is_the_one_of_a_search_to_the_length_limit(monkeypatch):
    """With ``settle=beam_size`` (the beam tree of What if) the search ends only when none of its beam_size best
    finished hypotheses can still be displaced: they are those of a search run to the length limit."""
    torch.manual_seed(8)
    untrained = Transformer(preset("tiny")).eval()
    logits = StepDecoder.logits
    source, _, _ = reversal_batch(4, torch.Generator().manual_seed(12))
    monkeypatch.setattr(
        StepDecoder,
        "logits",
        lambda decoder, hidden: logits(decoder, hidden).index_add(
            -1, torch.tensor([EOS_ID]), torch.full((*hidden.shape[:-1], 1), 2.4)
        ),
    )

    def n_best(row: torch.Tensor, **options) -> tuple[list[float], int]:
        """The 4 best finished scores in the recorded tree, and the steps the search ran."""
        recorder = BeamRecorder()
        steps = beam_search_counting_steps(untrained, row, monkeypatch, beam_size=4, recorder=recorder, **options)[1]
        finished = sorted((node.score for node in recorder.nodes[0] if node.status == "finished"), reverse=True)
        return finished[:4], steps

    saved = 0
    for row in source:
        row = row[row != 0].unsqueeze(0)
        (settled, settled_steps), (full, full_steps) = n_best(row, settle=4), n_best(row, early_stop=False)
        assert len(settled) == 4 and settled == pytest.approx(full)
        saved += full_steps - settled_steps
    assert saved > 0


def test_bfloat16_search_copy_reverses_and_follows_weight_updates(reversal):
    model, _ = reversal
    assert search_model(model, "float32") is model
    reduced = search_model(model, "bfloat16")
    assert reduced is search_model(model, "bfloat16")  # made once
    assert {p.dtype for p in reduced.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # the original is untouched
    source, _, sequences = reversal_batch(100, torch.Generator().manual_seed(321))
    outputs = beam_search(reduced, source, beam_size=4)
    assert sum(out == seq[::-1] for out, seq in zip(outputs, sequences, strict=True)) / len(sequences) >= 0.95

    changed = Transformer(preset("tiny")).eval()
    before = search_model(changed, "bfloat16")
    with torch.no_grad():
        changed.embedding.weight.mul_(2)
    after = search_model(changed, "bfloat16")
    assert after is not before
    assert torch.allclose(after.embedding.weight.float(), changed.embedding.weight, rtol=1e-2)
    with pytest.raises(ValueError, match="precision"):
        search_model(model, "float8")


def test_decoding_options_reach_the_search_as_one_object():
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=20)).eval()
    source = torch.tensor([[5, 6, 7, EOS_ID], [8, 9, EOS_ID, 0]])
    assert search(model, source, DecodingOptions(beam_size=1)) == greedy_decode(model, source)
    assert search(model, source, DecodingOptions(beam_size=3, alpha=1.0)) == beam_search(model, source, 3, 1.0)
    # The output limit: input length + max_extra_tokens (§6.1: 50), whatever the model would still write.
    short = search(model, source, DecodingOptions(beam_size=2, max_extra_tokens=2))
    assert all(len(output) <= length + 2 for output, length in zip(short, (4, 3), strict=True))
    assert DecodingOptions().describe() == "beam 4, α = 0.6, float32 search"
    assert GREEDY.describe() == "greedy, float32 search"
    for wrong in (
        {"beam_size": 0},
        {"alpha": -1.0},
        {"alpha": float("nan")},
        {"precision": "float8"},
        {"max_extra_tokens": 0},
    ):
        with pytest.raises(ValueError):
            DecodingOptions(**wrong)


def packed_tiny_model(seed: int, onednn: bool, monkeypatch) -> Transformer:
    """A random tiny model for the packed search's checks; without ``onednn`` the packed weights take the ``addmm``
    path, as where oneDNN's operators are missing."""
    if not onednn:
        monkeypatch.setattr(packed, "_onednn_products", lambda: None)
    torch.manual_seed(seed)
    return Transformer(preset("tiny")).eval()


@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("long", [False, True])
def test_step_decoder_computes_what_the_teacher_forced_pass_computes(onednn, long, monkeypatch):
    """The search's encoder and decoder step (packed weights, cached keys and values) give each position the hidden
    state the whole-prefix pass gives it: with padded sources, beams sharing a sentence's memory, heads switched off, an
    unscaled attention module, and again after the weights change in place (as an optimizer step changes them); with
    oneDNN's packed products and with the ``addmm`` fallback used where they are missing; for short sources, whose
    keys and values absorb the cross-attention's projections, and long ones."""
    model = packed_tiny_model(11, onednn, monkeypatch)
    model.decoder_layers[1].self_attention.scaled = False
    model.encoder_layers[0].self_attention.scaled = False
    source = pad([[5, 6, 7, 8, EOS_ID], [9, 10, EOS_ID]] if not long else [[*range(5, 17), EOS_ID], [9, 10, EOS_ID]])
    monkeypatch.setattr(fast, "FOLD_SENTENCES", source.size(0))  # the app folds for one sentence at a time
    beams = 2
    targets = torch.randint(4, 30, (source.size(0) * beams, 6))
    targets[:, 0] = BOS_ID
    mask = {kind: torch.ones(2, 4) for kind in ("encoder", "decoder", "cross")}
    mask["encoder"][1, 2] = 0.0
    mask["decoder"][0, 1] = 0.0
    mask["cross"][1, 3] = 0.0
    for update in (False, True):
        if update:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(0.05 * torch.randn_like(parameter))
        with torch.no_grad(), model.head_mask(mask):
            memory, _ = model.encode(source)
            assert torch.allclose(encode(model, source), memory, atol=1e-5)
            expanded = memory.repeat_interleave(beams, dim=0)
            source_mask = model.source_mask(source).repeat_interleave(beams, dim=0)
            full, _, _ = model.decode(targets, expanded, source_mask)
            decoder = StepDecoder(model, memory, source, beams)
            assert decoder.folded is not long
            assert decoder.packed.projection.onednn is (onednn and packed._onednn_products() is not None)
            for position in range(targets.size(1)):
                hidden = decoder.step(targets[:, position])
                assert torch.allclose(hidden, full[:, position], atol=1e-5), (update, position)
            assert torch.allclose(decoder.logits(hidden), model.project(full[:, -1]), atol=1e-4)


@pytest.mark.parametrize("onednn", [True, False])
def test_the_apps_attention_pass_records_what_the_models_own_modules_record(onednn, monkeypatch):
    """The maps the app shows come from the packed weights (``encode_recording``, ``decoder_attention``): every
    layer's and head's probabilities equal ``need_weights=True`` of the model's modules, for padded sources and
    targets, heads switched off (recorded before their gate, as the modules record them) and an unscaled module, and
    the recorded encoder's memory is the search's."""
    model = packed_tiny_model(12, onednn, monkeypatch)
    model.encoder_layers[1].self_attention.scaled = False
    model.decoder_layers[0].cross_attention.scaled = False
    source = pad([[*range(5, 14), EOS_ID], [9, 10, EOS_ID]])
    target = pad([[BOS_ID, 7, 8, 9, 10, 11], [BOS_ID, 12]])
    mask = {kind: torch.ones(2, 4) for kind in ("encoder", "decoder", "cross")}
    mask["encoder"][0, 1] = mask["decoder"][1, 3] = mask["cross"][0, 0] = 0.0
    with torch.no_grad(), model.head_mask(mask):
        memory, encoder = model.encode(source, need_weights=True)
        _, decoder, cross = model.decode(target, memory, model.source_mask(source), need_weights=True)
        packed_memory, packed_encoder = fast.encode_recording(model, source)
        packed_decoder, packed_cross = fast.decoder_attention(model, packed_memory, source, target)
        searched_memory = encode(model, source)
    assert torch.allclose(packed_memory, memory, atol=1e-5)
    assert torch.allclose(packed_memory, searched_memory, atol=1e-6)
    for fast_map, reference in ((packed_encoder, encoder), (packed_decoder, decoder), (packed_cross, cross)):
        assert fast_map.shape == reference.shape
        assert torch.allclose(fast_map, reference, atol=1e-5)
    assert float(cross[1, :, :, :, 3:].abs().max()) == 0.0  # the padded source keys hold no weight
