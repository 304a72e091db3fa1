"""Word alignment from the cross-attention: how links are read off a map, how they are scored against gold links,
and the ``python -m transformer align`` command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from transformer.analysis import alignment_choice
from transformer.analysis import word_alignment as wa
from transformer.cli import align as align_cli
from transformer.formats.checkpoint import load_checkpoint


def test_aer_precision_and_recall_match_a_hand_computed_example():
    # Sure links only: |A ∩ S| = 2 of |A| = 3 and |S| = 3 → AER = 1 − 4/6.
    result = wa.score([[(0, 0), (1, 1), (2, 1)]], [{(0, 0), (1, 1), (1, 2)}])
    assert (result.aer, result.precision, result.recall) == pytest.approx((1 / 3, 2 / 3, 2 / 3))
    # Och & Ney with a possible link: precision counts it, recall does not need it.
    result = wa.score([[(0, 0), (1, 1), (2, 2)]], [{(0, 0)}], possible=[{(1, 1)}])
    assert (result.aer, result.precision, result.recall) == pytest.approx((1 - 3 / 4, 2 / 3, 1.0))
    # Corpus-level: counts add over sentences before the ratio is taken.
    result = wa.score([[(0, 0)], [(0, 0), (1, 1)]], [{(0, 0)}, {(1, 0), (1, 1)}])
    assert result.aer == pytest.approx(1 - 2 * 2 / (3 + 3))


def constructed_pair() -> wa.ForcedPair:
    """English "a b" (pieces: a, a, b, then </s>), German "x y" (pieces: x, y, y); one layer, one head. Rows 0–2
    predict x, y, y; rows 1–3 read them (row 3 reads the last y and predicts </s>)."""
    cross = np.zeros((1, 1, 4, 4))
    cross[0, 0, 0] = [0.0, 0.0, 0.3, 0.7]  # predicts x: most on </s>, which is left out; then b
    cross[0, 0, 1] = [1.0, 0.0, 0.0, 0.0]  # predicts y / reads x: a
    cross[0, 0, 2] = [0.0, 1.0, 0.0, 0.0]  # predicts y / reads y: a
    cross[0, 0, 3] = [0.0, 0.0, 0.2, 0.8]  # reads y: b, after </s>
    return wa.ForcedPair(cross, source_words=[0, 0, 1], target_words=[0, 1, 1], english=["a", "b"], german=["x", "y"])


def test_links_merge_pieces_into_words_and_leave_the_end_of_sentence_out():
    pair = constructed_pair()
    # Predicting rows: x → b (</s> ignored although it holds more), y → a (both of its rows on a's pieces).
    assert wa.links(pair, wa.Method(0, 0)) == [(0, 1), (1, 0)]
    scores = wa.word_scores(pair, wa.Method(0, 0, shift=True))
    assert scores == pytest.approx(np.array([[1.0, 0.0], [0.5, 0.1]]))  # y's rows averaged: (a 1 + 0) / 2, b 0.2 / 2
    assert wa.links(pair, wa.Method(0, 0, shift=True)) == [(0, 0), (0, 1)]
    # Both directions: a's strongest German word is x, b's is y; only a–x is chosen from both sides.
    assert wa.links(pair, wa.Method(0, 0, shift=True, both=True)) == [(0, 0)]
    # A layer or all-layer average of one head is that head.
    assert wa.links(pair, wa.Method(0, None, shift=True)) == wa.links(pair, wa.Method(None, None, shift=True))


def test_a_word_translated_inside_a_compound_is_linked_to_it():
    # "the central bank" → "die Zentralbank": Zentralbank attends most to "central" and nearly as much to "bank".
    pair = wa.ForcedPair(
        np.zeros((1, 1, 3, 4)), [0, 1, 2], [0, 1], english=["the", "central", "bank"], german=["die", "Zentralbank"]
    )
    scores = np.array([[0.9, 0.05, 0.05], [0.0, 0.5, 0.4]])
    found = wa.links(pair, wa.Method(0, 0), scores)
    assert found == [(0, 0), (1, 1)]  # "bank" left without a link: drawn grey, read as untranslated
    assert wa.compound_links(pair, wa.Method(0, 0), found, scores) == [(2, 1)]
    # A word attended to weakly stays unlinked: under half of the German word's strongest attention.
    weak = np.array([[0.9, 0.05, 0.05], [0.0, 0.5, 0.2]])
    assert wa.compound_links(pair, wa.Method(0, 0), wa.links(pair, wa.Method(0, 0), weak), weak) == []


def test_regroup_finds_the_tokenizer_words_that_spell_each_whitespace_word():
    assert wa.regroup(["I'd", "like", "tea."], ["I", "'", "d", "like", "tea", "."]) == [[0, 1, 2], [3], [4, 5]]
    assert wa.regroup(["a", "b"], ["a", "", "b"]) == [[0], [2]]  # a bare word-start piece spells nothing
    assert wa.regroup(["a", "b"], ["a", "c"]) is None  # other letters (a normalised character, say): no mapping
    assert wa.regroup(["a"], ["a", "b"]) is None and wa.regroup(["ab"], ["a"]) is None


def test_method_names_round_trip_and_bad_ones_are_refused():
    for method in wa.every_method(layers=2, heads=3):
        assert wa.Method.parse(method.name) == method
    assert len({method.name for method in wa.every_method(layers=2, heads=3)}) == 4 * (1 + 2 * (1 + 3))
    assert wa.Method.parse("L2H4-shift-both") == wa.Method(1, 3, shift=True, both=True)
    assert wa.Method.parse("saliency-both") == wa.Method(None, None, both=True, gradient="saliency")
    assert len(wa.every_method(layers=2, heads=3, gradients=True)) == 36 + 4
    for bad in ("L0", "L2H0", "layer2", "L2-both-shift", "", "mean3", "saliency-shift", "L2H1-saliency"):
        with pytest.raises(ValueError):
            wa.Method.parse(bad)
    with pytest.raises(ValueError, match="6 layers of 8 heads"):
        wa.Method.parse("L7").check(layers=6, heads=8)


def test_the_best_method_prefers_the_simpler_reading_on_a_tie():
    tie = wa.Score(0.2, 0.8, 0.8, 10, 10)
    assert wa.best_method({"L2H1": tie, "L2": tie, "L3": wa.Score(0.3, 0.7, 0.7, 10, 10)}) == "L2"


def test_gold_files_are_read_with_sentences_from_one_and_the_english_index_first(tmp_path: Path):
    links = tmp_path / "gold.wa"
    links.write_text("1 0 1 S\n1 2 0 P\n\n2 1 1 S\n", encoding="utf-8")
    sure, possible = wa.read_gold(links, sentences=2)
    assert sure == [{(1, 0)}, {(1, 1)}] and possible == [{(0, 2)}, set()]
    links.write_text("3 0 0 S\n", encoding="utf-8")
    with pytest.raises(ValueError, match="outside 1–2"):
        wa.read_gold(links, sentences=2)
    links.write_text("1 a 0 S\n", encoding="utf-8")
    with pytest.raises(ValueError, match=":1: expected"):
        wa.read_gold(links, sentences=2)


def test_word_pieces_are_the_sentences_own_encoding_with_each_pieces_word(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    words = "the little house , near the river .".split()
    ids, owners = wa.word_pieces(loaded, words)
    assert ids == loaded.tokenizer.encode(" ".join(words))
    assert len(owners) == len(ids) and owners == sorted(owners) and set(owners) == set(range(len(words)))
    for index, word in enumerate(words):
        assert loaded.tokenizer.decode([i for i, owner in zip(ids, owners, strict=True) if owner == index]) == word


def write_gold(folder: Path, corpus: dict[str, Path]) -> tuple[Path, Path, Path]:
    """Ten training pairs of the synthetic corpus, split on spaces, with a monotone gold alignment."""
    english = Path(f"{corpus['train']}.en").read_text(encoding="utf-8").splitlines()[:10]
    german = Path(f"{corpus['train']}.de").read_text(encoding="utf-8").splitlines()[:10]
    lines = [
        f"{number} {position} {position} S"
        for number, (source, target) in enumerate(zip(english, german, strict=True), 1)
        for position in range(min(len(source.split()), len(target.split())))
    ]
    paths = folder / "gold.en", folder / "gold.de", folder / "gold.wa"
    for path, text in zip(paths, ("\n".join(english), "\n".join(german), "\n".join(lines)), strict=True):
        path.write_text(text + "\n", encoding="utf-8")
    return paths


def test_the_align_command_prints_links_scores_and_stores_its_choice(
    trained_checkpoint: Path, corpus, tmp_path, capsys
):
    checkpoint = tmp_path / "model"
    shutil.copytree(trained_checkpoint, checkpoint)
    english, german, gold = write_gold(tmp_path, corpus)
    base = ["--checkpoint", str(checkpoint), "--src", str(english), "--tgt", str(german)]

    assert align_cli.main([*base, "--method", "L1H2-shift"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sentences = english.read_text(encoding="utf-8").splitlines(), german.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10
    for line, source, target in zip(lines, *sentences, strict=True):
        found = [tuple(map(int, link.split("-"))) for link in line.split()]
        assert len({g for _, g in found}) == len(target.split())  # one link per German word
        assert all(0 <= e < len(source.split()) and 0 <= g < len(target.split()) for e, g in found)

    assert align_cli.main([*base, "--gold", str(gold), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == alignment_choice.FALLBACK_METHOD  # nothing stored yet
    assert 0.0 <= result["aer"] <= 1.0 and len(result["alignments"]) == 10
    assert result["interval"]["low"] <= result["aer"] <= result["interval"]["high"]

    assert align_cli.main([*base, "--gold", str(gold), "--choose", "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    assert chosen["aer"] == min(value["aer"] for value in chosen["methods"].values())
    assert len(chosen["held_out"]) == 2 and all(check["pairs"] == 5 for check in chosen["held_out"])
    # The figure to report: every pair aligned by the reading chosen on the other half, over all ten pairs, with
    # its interval; the two halves' AERs pooled (a weighted mean of the two, so between them).
    held_out = chosen["held_out_interval"]
    assert held_out["items"] == 10 and held_out["low"] <= held_out["value"] <= held_out["high"]
    halves = [check["interval"]["value"] for check in chosen["held_out"]]
    assert min(halves) - 1e-9 <= held_out["value"] <= max(halves) + 1e-9
    usual = chosen["usual"]["interval"]["value"]
    assert chosen["held_out_vs_usual"]["value"] == pytest.approx(held_out["value"] - usual, abs=1e-3)
    assert (checkpoint / alignment_choice.ALIGNMENT_FILE).is_file()
    assert align_cli.main([*base, "--gold", str(gold), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["method"], again["aer"]) == (chosen["method"], chosen["aer"])  # the stored choice is the default


def test_the_align_command_explains_bad_input(trained_checkpoint: Path, tmp_path: Path, capsys):
    english, german = tmp_path / "a.en", tmp_path / "a.de"
    english.write_text("one line\ntwo lines\n", encoding="utf-8")
    german.write_text("eine zeile\n", encoding="utf-8")
    base = ["--checkpoint", str(trained_checkpoint), "--src", str(english), "--tgt", str(german)]
    assert align_cli.main(base) == 1
    assert "has 2 lines but" in capsys.readouterr().err
    german.write_text("eine zeile\nzwei\n", encoding="utf-8")
    assert align_cli.main([*base, "--method", "L99"]) == 1
    assert "layers of" in capsys.readouterr().err
    assert align_cli.main([*base, "--gold", str(tmp_path / "missing.wa")]) == 1
    assert "missing.wa" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        align_cli.main([*base, "--choose"])


def test_gradient_readings_are_each_pieces_own_attribution(trained_checkpoint: Path):
    """The batch of copies (one backward pass for all German pieces of a pair) gives, row by row, what captum's
    saliency of each piece alone gives (transformer.analysis.attribution)."""
    from transformer.analysis import attribution as at

    loaded = load_checkpoint(trained_checkpoint)
    (pair,) = wa.force(loaded, ["the small dog sees the red house ."], ["der kleine hund sieht das rote haus ."])
    wa.add_gradients(loaded, [pair])
    rows = pair.gradients["saliency"]
    assert rows.shape == (len(pair.target_ids), len(pair.source_ids))
    for position in (0, len(pair.target_ids) - 1):
        alone = at.attribute(loaded.model, pair.source_ids, pair.target_ids, position, "saliency").source
        assert rows[position] == pytest.approx(alone, rel=1e-3, abs=1e-5)
    assert np.isfinite(pair.gradients["input_x_gradient"]).all()
    found = wa.links(pair, wa.Method.parse("saliency"))
    assert sorted({german for _, german in found}) == list(range(len(pair.german)))
