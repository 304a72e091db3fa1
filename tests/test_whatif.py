"""The what-if tools on the tiny trained model: the beam search's tree, forced decoding, the translation diff of an
ablation, side-by-side differences and the command line that reaches them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from transformer.analysis.ablation import expand_heads, parse_heads, word_diff
from transformer.analysis.attention import translate_with_attention
from transformer.analysis.beam import explore_beam, token_probabilities
from transformer.analysis.compare import difference, same_tokens
from transformer.analysis.forced import force
from transformer.cli import whatif
from transformer.paper.data import read_parallel
from transformer.search.decode import DecodingOptions, length_penalty


@pytest.fixture(scope="module")
def sentences(corpus) -> list[str]:
    return [source for source, _ in read_parallel(f"{corpus['dev']}.en", f"{corpus['dev']}.de")[:6]]


@pytest.mark.parametrize("beam", [1, 2, 4])
def test_the_beam_trees_best_finished_hypothesis_is_the_decoders_output(loaded, sentences, beam):
    options = DecodingOptions(beam_size=beam, alpha=0.6)
    for sentence in sentences:
        tree = explore_beam(loaded.model, loaded.tokenizer, sentence, options)
        output = translate_with_attention(loaded.model, loaded.tokenizer, sentence, options).output_ids
        assert tree.tokens(tree.best().id) == output
        assert tree.finished()[0] is tree.best()
        scores = [node.score for node in tree.finished()]
        assert scores == sorted(scores, reverse=True)


def test_the_tree_holds_what_the_search_weighed(loaded, sentences):
    beam = 3
    tree = explore_beam(loaded.model, loaded.tokenizer, sentences[0], DecodingOptions(beam_size=beam, alpha=0.6))
    assert tree.nodes[0].status == "root" and tree.nodes[0].parent is None
    by_step: dict[int, list] = {}
    for node in tree.nodes[1:]:
        parent = tree.nodes[node.parent]
        assert node.step == parent.step + 1 and parent.status in ("root", "kept")  # only live hypotheses grow
        assert node.log_prob <= parent.log_prob + 1e-6  # log-probabilities only fall as a hypothesis grows
        assert node.score == pytest.approx(node.log_prob / length_penalty(node.step, 0.6))
        by_step.setdefault(node.step, []).append(node)
    for step, nodes in by_step.items():
        assert len(nodes) <= 2 * beam  # the search weighs the best 2·beam continuations
        assert sum(node.status == "kept" for node in nodes) <= beam
        kept = [node.log_prob for node in nodes if node.status == "kept"]
        eos = loaded.model.config.eos_id  # a pruned </s> (past the first beam ranks) may beat a kept continuation
        pruned = [node.log_prob for node in nodes if node.status == "pruned" and node.token != eos]
        if kept and pruned:  # a pruned continuation never beats a kept one
            assert max(pruned) <= min(kept) + 1e-6, step
    assert any(node.status == "pruned" for node in tree.nodes)


def test_forced_decoding_of_the_models_own_output_reproduces_its_probabilities(loaded, sentences):
    for sentence in sentences[:3]:
        tree = explore_beam(loaded.model, loaded.tokenizer, sentence, DecodingOptions(beam_size=4))
        best = tree.best()
        scored = token_probabilities(loaded.model, loaded.tokenizer, tree.source_ids, tree.tokens(best.id), top_k=3)
        path = tree.path(best.id)
        assert [p.token for p in scored] == [node.token for node in path]  # the output, then </s>
        assert sum(p.log_prob for p in scored) == pytest.approx(best.log_prob, abs=1e-4)
        steps = [node.log_prob - tree.nodes[node.parent].log_prob for node in path]
        assert [p.log_prob for p in scored] == pytest.approx(steps, abs=1e-4)
        for p in scored:
            assert p.probability == pytest.approx(math.exp(p.log_prob))
            assert len(p.top) == 3 and p.top[0][1] >= p.top[1][1] >= p.top[2][1]
            assert p.rank >= 1 and (p.rank == 1) == (p.top[0][0] == p.piece)


def test_forcing_a_given_translation(loaded, sentences):
    model, tokenizer = loaded.model, loaded.tokenizer
    translation = translate_with_attention(model, tokenizer, sentences[0], DecodingOptions(beam_size=1))
    itself = force(model, tokenizer, translation, translation.translation)
    assert itself.bleu == pytest.approx(100.0) and itself.chrf == pytest.approx(100.0)
    assert itself.given.log_prob == pytest.approx(itself.model.log_prob, abs=1e-4)
    other = force(model, tokenizer, translation, "ein völlig anderer Satz über nichts.")
    assert other.bleu < 100.0
    assert len(other.given.tokens) == len(tokenizer.encode("ein völlig anderer Satz über nichts.")) + 1
    *_, queries, keys = other.given.maps.cross.shape
    assert keys == len(translation.source_ids) and queries == len(other.given.tokens)  # reads <s> y₁…yₙ, writes n + 1
    assert other.given.log_prob < itself.given.log_prob  # greedy's own output is the more probable one here
    huge = force(model, tokenizer, translation, "haus " * 2000)
    assert huge.given.truncated and len(huge.given.output_ids) == model.config.max_positions - 1
    with pytest.raises(ValueError, match="type a translation"):
        force(model, tokenizer, translation, "   ")


def test_word_diff_marks_what_changed():
    assert word_diff("a b c d", "a x c d e") == [
        ("same", "a"),
        ("removed", "b"),
        ("added", "x"),
        ("same", "c d"),
        ("added", "e"),
    ]
    assert word_diff("gleich", "gleich") == [("same", "gleich")]
    assert word_diff("", "neu") == [("added", "neu")]


def test_heads_are_written_kind_layer_head(loaded):
    assert parse_heads("cross:2:4, encoder:1:1") == [("cross", 1, 3), ("encoder", 0, 0)]
    every = expand_heads(loaded.model, parse_heads("decoder:*:2,decoder:1:2"))
    assert every == [("decoder", 0, 1), ("decoder", 1, 1)]  # tiny model: 2 layers, no repeats
    assert len(expand_heads(loaded.model, parse_heads("cross:*:*"))) == 8
    for bad in ("cross:0:1", "cross:1", "attention:1:1", "cross:a:1"):
        with pytest.raises(ValueError):
            parse_heads(bad)


def test_side_by_side_difference(loaded, sentences):
    model, tokenizer = loaded.model, loaded.tokenizer
    first = translate_with_attention(model, tokenizer, sentences[0]).maps
    again = translate_with_attention(model, tokenizer, sentences[0]).maps
    assert np.array_equal(difference(first, again, "encoder", 1, 2), np.zeros_like(first.encoder[1, 2]))
    longer = translate_with_attention(model, tokenizer, sentences[0] + " " + sentences[1]).maps
    assert difference(first, longer, "encoder", 1, 2) is None and not same_tokens(first, longer, "encoder")


def test_the_whatif_command(trained_checkpoint: Path, sentences, capsys):
    common = ["--checkpoint", str(trained_checkpoint), "--json"]

    def run(*arguments: str) -> dict:
        assert whatif.main([*arguments, *common]) == 0
        return json.loads(capsys.readouterr().out)

    sentence = sentences[0]
    beam = run("beam", sentence, "--beam", "3")
    assert (
        beam["nbest"][0]["translation"] == run("ablate", sentence, "--off", "cross:1:1", "--beam", "3")["translation"]
    )
    assert len(beam["tokens"]) >= 1 and beam["tokens"][-1]["piece"] == "</s>"
    blind = run("ablate", sentence, "--off", "cross:*:*")
    assert len(blind["heads_off"]) == 8
    forced = run("force", sentence, "--given", beam["nbest"][0]["translation"], "--beam", "3")
    assert forced["bleu"] == pytest.approx(100.0)
    rolled = run("rollout", sentence, "--flow")
    assert np.allclose(np.sum(rolled["encoder_rollout"], axis=1), 1.0, atol=1e-3)
    assert len(rolled["cross_rollout"]) == len(rolled["target_tokens"])
    same = run("compare", sentence, "--other", str(trained_checkpoint), "--layer", "2", "--head", "3")
    assert same["same_tokens"] and same["largest_difference"] == 0.0
    assert whatif.main(["ablate", sentence, "--off", "cross:9:1", *common]) == 1
    assert "no head" in capsys.readouterr().err
