"""Head discovery, the paper figures and the training timeline: scores on hand-made attention with known answers,
and the command-line tools on the tiny trained checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_browser, uniform_encoder_copy
from transformer.analysis import figures, timeline
from transformer.analysis.alignment import build_dictionary, word_alignment_hits
from transformer.analysis.attention import attention_for
from transformer.analysis.heads import (
    SCORES,
    HeadScore,
    head_statistics,
    pronoun_to_antecedent,
)
from transformer.analysis.score_tables import head_score_tables
from transformer.cli import dictionary as dictionary_cli
from transformer.cli import paper_figures as figures_cli
from transformer.cli import timeline as timeline_cli
from transformer.formats.checkpoint import CheckpointError, load_checkpoint, read_json
from transformer.search.decode import GREEDY, translate_ids

PRONOUN_TOKENS = [
    "▁The",
    "▁committee",
    "▁rejected",
    "▁the",
    "▁pro",
    "posal",
    "▁because",
    "▁it",
    "▁was",
    "▁expensive",
    ".",
    "</s>",
]


def pronoun_heads() -> np.ndarray:
    """Three heads of one layer: exactly on the antecedent's pieces, uniform, and on the wrong noun."""
    size = len(PRONOUN_TOKENS)
    weights = np.full((1, 3, size, size), 1.0 / size)
    it = PRONOUN_TOKENS.index("▁it")
    weights[0, 0, it] = 0
    weights[0, 0, it, [4, 5]] = 0.5  # "pro" + "posal"
    weights[0, 2, it] = 0
    weights[0, 2, it, 1] = 1.0  # "committee"
    return weights


def test_anaphora_score_is_one_for_a_head_on_the_antecedent_and_uniform_share_for_a_uniform_head():
    weight, hit = pronoun_to_antecedent(pronoun_heads(), PRONOUN_TOKENS, "it", "proposal")
    size = len(PRONOUN_TOKENS)
    assert weight[0, 0] == pytest.approx(1.0)
    assert weight[0, 1] == pytest.approx(2 / size)  # uniform over pieces: the antecedent has two
    assert weight[0, 2] == pytest.approx(0.0)
    assert hit[0].tolist() == [True, True, False]
    with pytest.raises(ValueError, match="not found"):
        pronoun_to_antecedent(pronoun_heads(), PRONOUN_TOKENS, "they", "proposal")


def test_alignment_hits_count_dictionary_partners_and_consensus():
    source = ["the", "cat", "sleeps", "</s>"]
    output = ["die", "katze", "schläft", ".", "</s>"]
    dictionary = {"the": {"die"}, "cat": {"katze"}, "sleeps": {"schläft"}}
    diagonal = np.eye(5, 4)
    diagonal[4, 3] = 1.0
    cross = np.stack(
        [
            diagonal,  # aligns every word with its translation
            np.full((5, 4), 0.25),  # uniform: its argmax is the first source word
            0.6 * diagonal + 0.4 * np.eye(5, 4)[:, ::-1],  # mostly aligned
        ]
    )[None]  # [1 layer, 3 heads, 5, 4]
    dictionary_hits, dictionary_words, consensus_hits, counted = word_alignment_hits(cross, source, output, dictionary)
    assert (dictionary_words, counted) == (3, 3)  # "." and </s> are not counted
    assert (dictionary_hits[0] / dictionary_words).tolist() == pytest.approx([1.0, 1 / 3, 1.0])
    assert (consensus_hits[0] / counted).tolist() == pytest.approx([1.0, 1 / 3, 1.0])


def test_dictionary_pairs_words_that_translate_each_other():
    pairs = [
        ("the cat sleeps.", "die katze schläft."),
        ("the dog sleeps.", "der hund schläft."),
        ("a cat eats.", "eine katze isst."),
        ("the cat eats.", "die katze isst."),
    ] * 5
    rows = build_dictionary(pairs, min_count=3, min_dice=0.3)
    best = {}
    for english, german, dice in rows:
        best.setdefault(english, (german, dice))
    assert best["cat"][0] == "katze" and best["cat"][1] == pytest.approx(1.0)
    assert best["sleeps"][0] == "schläft"
    assert best["dog"][0] in {"hund", "der"}


def test_structure_heads_pick_the_sharpest_head_and_the_most_different_one():
    size = 6
    tokens = [f"▁w{i}" for i in range(size - 1)] + ["</s>"]
    uniform = np.full((size, size), 1 / size)
    previous = np.roll(np.eye(size), -1, axis=1)  # each token on the one before (sharp)
    following = np.roll(np.eye(size), 1, axis=1)  # each token on the one after (sharp, different)
    almost_previous = 0.9 * previous + 0.1 * uniform
    layer = np.stack([uniform, almost_previous, previous, following])
    assert figures.structure_heads(layer, tokens) == [2, 3]


def test_paper_numbering_reads_layer_five_either_way():
    assert figures.paper_layer(6, one_based=True) == 4
    assert figures.paper_layer(6, one_based=False) == 5
    assert figures.paper_layer(2, one_based=True) == 1  # clipped to the model's layers
    assert figures.paper_heads(8, one_based=True) == [4, 5]
    assert figures.paper_heads(8, one_based=False) == [5, 6]


def test_paper_sentences_keep_their_words_and_padding(loaded):
    attention = figures.sentence_attention(loaded, figures.FIGURES[3])
    words, weights = attention.view(words=True, specials=True)
    assert words[-7:] == ["</s>", *["<pad>"] * 6]
    assert {"making", "more", "difficult"} <= set(words)  # spelled even where the vocabulary needs byte pieces
    assert weights.shape[-2:] == (len(words), len(words))
    assert np.allclose(weights[..., :-6, -6:], 0)  # no real token attends to the paper's padding
    plain, _ = attention.view(words=True, specials=False)
    assert plain[-1] == "." and "<pad>" not in plain


def test_head_score_tables_cover_every_head(loaded):
    tables = head_score_tables(loaded, sample=6)
    shape = (loaded.config.encoder_layers, loaded.config.num_heads)
    for name in ("mean_distance", "entropy", "previous_token", "anaphora", "anaphora_hits"):
        assert np.asarray(tables.scores["encoder"][name]).shape == shape
    for name in ("alignment_dictionary", "alignment_consensus"):
        values = np.asarray(tables.scores["cross"][name], dtype=float)
        assert values.shape == (loaded.config.decoder_layers, loaded.config.num_heads)
    for name in ("mean_distance", "entropy", "previous_token", "self_mass", "delimiter_mass"):
        assert np.asarray(tables.scores["decoder"][name]).shape == (
            loaded.config.decoder_layers,
            loaded.config.num_heads,
        )
    assert tables.sentences == 6 and tables.output_words > 0
    entropy = np.asarray(tables.scores["encoder"]["entropy"])
    assert (entropy >= 0).all() and (entropy <= np.log2(loaded.config.max_positions)).all()
    # Every score over the sample has its interval over its sentences, around its value, and the heads near the
    # best include the best (the lowest, for the entropy).
    for kind in ("encoder", "decoder", "cross"):
        for name, values in tables.scores[kind].items():
            found = tables.interval(kind, name)
            low, high, near = found.low, found.high, found.near_best
            assert found.items == (tables.anaphora_sentences if name.startswith("anaphora") else 6)
            usable = np.isfinite(values)  # NaN only where nothing was counted (no dictionary partner at all)
            assert np.isfinite(low[usable]).all() and np.isfinite(high[usable]).all(), (kind, name)
            assert (low[usable] <= values[usable] + 1e-4).all() and (values[usable] <= high[usable] + 1e-4).all()
            if usable.any():
                best = np.nanargmin(values) if SCORES[name].low_is_notable else np.nanargmax(values)
                assert near.reshape(-1)[best] == 1


def test_figures_cli_writes_every_figure_and_metric(trained_checkpoint: Path, tmp_path: Path, capsys):
    out = tmp_path / "figures"
    assert (
        figures_cli.main(["--checkpoint", str(trained_checkpoint), "--out", str(out), "--no-png", "--sample", "4"]) == 0
    )
    for number in (3, 4, 5):
        page = (out / f"figure_{number}.html").read_text(encoding="utf-8")
        assert figures.FIGURES[number].caption.split(".")[0] in page
        assert 'src="http' not in page and "Plotly.newPlot" in page  # plotly.js inline: works offline
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    keys = ("making_heads_on_more_difficult", "its_to_law", "its_to_application", "best_layer_making", "best_head_its")
    for key in keys:
        assert isinstance(metrics[key], int | float), key
    layers, heads = 2, 4
    assert 0 <= metrics["making_heads_on_more_difficult"] <= heads
    assert 0 <= metrics["best_layer_making"] < layers and 0 <= metrics["best_head_its"] < heads
    assert np.asarray(metrics["figure_4"]["its_to_law_per_head"]).shape == (layers, heads)
    assert np.asarray(metrics["head_scores"]["encoder"]["anaphora"]).shape == (layers, heads)
    assert "anaphora_held_out" in metrics and "dictionary_held_out" in metrics  # chosen on half, scored on half
    assert metrics["translations"]["3"]["reference"].startswith("In diesem Sinne")
    assert metrics["checkpoint"] == trained_checkpoint.name  # names the model, not the folders it was drawn on
    assert "its_to_law" in capsys.readouterr().out


def test_figures_cli_explains_a_missing_checkpoint(tmp_path: Path, capsys):
    assert figures_cli.main(["--checkpoint", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 1
    assert "error:" in capsys.readouterr().err


@needs_browser
def test_figures_cli_renders_pngs_with_chromium(trained_checkpoint: Path, tmp_path: Path):
    out = tmp_path / "figures"
    assert figures_cli.main(["--checkpoint", str(trained_checkpoint), "--out", str(out), "--sample", "0"]) == 0
    for number in (3, 4, 5):
        data = (out / f"figure_{number}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a drawn figure, not a blank page


def test_timeline_keeps_each_snapshots_attention_and_scores(trained_checkpoint: Path, tmp_path: Path):
    early = uniform_encoder_copy(trained_checkpoint, tmp_path / "early", step=5)
    path = tmp_path / "timeline.safetensors"
    assert timeline_cli.main([str(trained_checkpoint), str(early), "--out", str(path)]) == 0
    points = timeline.load_timeline(path)
    assert [point.step for point in points] == [5, read_json(trained_checkpoint / "meta.json")["step"]]
    first = points[0].attention[3]
    real = [i for i, token in enumerate(first.tokens) if token != "<pad>"]
    assert np.allclose(first.weights[:, :, real][..., real], 1 / len(real), atol=1e-3)  # uniform at "step 5"
    assert not np.allclose(points[1].attention[3].weights, first.weights, atol=1e-2)
    assert points[0].scores["entropy"].shape == (2, 4)
    assert points[0].scores["entropy"].mean() > points[1].scores["entropy"].mean()  # heads sharpen with training
    assert points[1].metrics.keys() >= {"making_heads_on_more_difficult", "its_to_law", "figure_3"}
    # Each recorded point keeps every score's interval over the pronoun sentences; a uniform head is as good as
    # any other, so at "step 5" no entropy head is clearly the sharpest.
    for point in points:
        for key, values in point.scores.items():
            found = point.intervals[key]
            assert found.items >= 2 and found.near_best.dtype == bool
            usable = np.isfinite(values)
            assert (found.low[usable] <= values[usable] + 1e-4).all()
            assert (values[usable] <= found.high[usable] + 1e-4).all()
    assert points[0].intervals["entropy"].near_best.all()


def test_a_timeline_recorded_before_intervals_still_opens_without_them(trained_checkpoint: Path, tmp_path: Path):
    point = timeline.measure(load_checkpoint(trained_checkpoint), "snapshot")
    point.intervals = {}
    path = tmp_path / "timeline.safetensors"
    timeline.save_timeline([point], path)
    (loaded_point,) = timeline.load_timeline(path)
    assert loaded_point.intervals == {} and loaded_point.scores.keys() == point.scores.keys()


def test_a_damaged_timeline_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "timeline.safetensors"
    path.write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="not a readable timeline"):
        timeline.load_timeline(path)
    assert timeline.load_timeline(tmp_path / "missing.safetensors") == []


def test_dictionary_cli_pairs_words_that_occur_together(tmp_path: Path):

    (tmp_path / "toy.en").write_text("the cat sleeps\nthe dog sleeps\na cat runs\n" * 3, encoding="utf-8")
    (tmp_path / "toy.de").write_text("die katze schläft\nder hund schläft\neine katze rennt\n" * 3, encoding="utf-8")
    out = tmp_path / "dictionary.tsv"
    assert (
        dictionary_cli.main(["dictionary", "--train", str(tmp_path / "toy"), "--out", str(out), "--min-count", "2"])
        == 0
    )
    pairs = {tuple(line.split("\t")[:2]) for line in out.read_text(encoding="utf-8").splitlines()[1:]}
    assert {("cat", "katze"), ("sleeps", "schläft"), ("dog", "hund")} <= pairs
    assert ("cat", "hund") not in pairs


def test_head_statistics_on_heads_with_known_answers():
    tokens = ["▁a", "▁b", "▁c", ".", "</s>", "<pad>"]
    size = len(tokens)
    previous = np.zeros((size, size))
    previous[0, 0] = 1.0
    for i in range(1, size):
        previous[i, i - 1] = 1.0
    uniform = np.full((size, size), 1.0 / 5)
    uniform[:, -1] = 0.0  # padding gets nothing
    weights = np.stack([previous, uniform])[None]  # [1 layer, 2 heads, S, S]
    stats = head_statistics(weights, tokens, far=2)
    # The previous-token head: every non-pad query but the first puts all weight one step back.
    assert stats["previous_token"][0, 0] == pytest.approx(4 / 5)
    assert stats["mean_distance"][0, 0] == pytest.approx(4 / 5)
    assert stats["entropy"][0, 0] == pytest.approx(0.0)
    # The uniform head: entropy log2(5), a fifth on each neighbour, and 2/5 on "." and </s>.
    assert stats["entropy"][0, 1] == pytest.approx(np.log2(5))
    assert stats["delimiter_mass"][0, 1] == pytest.approx(2 / 5)
    assert stats["next_token"][0, 1] == pytest.approx(np.mean([0.2, 0.2, 0.2, 0.2, 0.0]))
    assert stats["long_range_mass"][0, 1] == pytest.approx(np.mean([0.4, 0.2, 0.0, 0.2, 0.4]))
    assert stats["self_mass"][0, 1] == pytest.approx(0.2)


def test_a_score_added_to_the_registry_reaches_the_tables(trained_checkpoint: Path, monkeypatch):
    """Adding a head score is one registry entry: the tables (and so the Head discovery page, the figures CLI and
    the stored measurements) pick it up with its description."""
    first_key = HeadScore(
        "first_key",
        "Weight on the first token",
        ("encoder",),
        "attention on position 0",
        lambda rows: rows.weights[..., 0],
        per_query=True,
    )
    monkeypatch.setitem(SCORES, first_key.key, first_key)
    tables = head_score_tables(load_checkpoint(trained_checkpoint), sentences=["the cat sat."], cross=False)
    assert tables.descriptions["first_key"] == "attention on position 0"
    assert "first_key" not in tables.intervals["encoder"]  # one sentence: no interval to give
    values = np.asarray(tables.scores["encoder"]["first_key"])
    assert values.shape == np.asarray(tables.scores["encoder"]["entropy"]).shape
    assert ((values >= 0) & (values <= 1)).all()
    assert "cross" not in tables.scores and tables.kinds == ("encoder",)


def test_the_registry_describes_every_score_it_measures(trained_checkpoint: Path):
    tables = head_score_tables(load_checkpoint(trained_checkpoint), sentences=["the cat sat."])
    measured = {*tables.scores["encoder"], *tables.scores["decoder"], *tables.scores["cross"]}
    assert measured == set(SCORES)
    for key, score in SCORES.items():
        assert score.name and score.description
        for kind in score.kinds:
            values = tables.scores[kind][key]
            if score.share:  # drawn on a fixed 0–1 scale: a value outside it would be clipped
                assert np.nanmin(values) >= 0 and np.nanmax(values) <= 1 + 1e-9


def test_decoder_heads_are_scored_on_the_models_own_translations(trained_checkpoint: Path):
    """The decoder's masked self-attention is scored like the encoder's, on the teacher-forced pass over each greedy
    translation: its weight on itself is the mean of each map's diagonal, and it never looks ahead (no next-token
    score, which the mask fixes at 0)."""
    loaded = load_checkpoint(trained_checkpoint)
    sentences = ["the cat sat.", "the small dog sees the big cat."]
    tables = head_score_tables(loaded, sentences=sentences)
    assert "next_token" in tables.scores["encoder"] and "next_token" not in tables.scores["decoder"]
    sources, outputs = translate_ids(loaded.model, loaded.tokenizer, sentences, GREEDY)
    diagonals = []
    for source, output in zip(sources, outputs, strict=True):
        maps = attention_for(loaded.model, loaded.tokenizer, source, output)
        assert maps.decoder.shape[-1] == len(output) + 1  # <s> and the output
        diagonals.append(np.diagonal(maps.decoder, axis1=-2, axis2=-1).mean(-1))
    np.testing.assert_allclose(tables.scores["decoder"]["self_mass"], np.mean(diagonals, axis=0), atol=2e-4)
    mean_distance = np.asarray(tables.scores["decoder"]["mean_distance"])
    assert (mean_distance >= 0).all() and (mean_distance > 0).any()


def test_the_anaphora_head_is_chosen_on_half_the_sentences_and_scored_on_the_other(monkeypatch):
    """Eight planted sentences: head 1 is on the antecedent in every one, head 3 on the wrong noun; the head chosen
    on either half is head 1, and every sentence is scored by a head chosen without it."""
    from types import SimpleNamespace

    from transformer.analysis import held_out

    examples = [SimpleNamespace(sentence=f"s{i}", pronoun="it", antecedent="proposal") for i in range(8)]
    monkeypatch.setattr(
        held_out,
        "encoder_attentions",
        lambda loaded, sentences: [(PRONOUN_TOKENS, pronoun_heads())] * len(sentences),
    )
    found = held_out.anaphora_held_out(None, examples)
    assert found["heads"] == [[1, 1], [1, 1]] and found["sentences"] == 8
    assert found["weight"]["value"] == pytest.approx(1.0) and found["weight"]["low"] == pytest.approx(1.0)
    assert found["hits"]["value"] == 1.0 and found["in_sample"] == {"layer": 1, "head": 1, "weight": 1.0}
    assert held_out.anaphora_held_out(None, examples[:3]) == {}  # too few sentences to split


def test_the_dictionary_head_is_chosen_on_half_the_translations_and_scored_on_the_other(monkeypatch):
    """Six planted translations of ten dictionary words each: head (2, 3) finds the translation of every word, head
    (1, 1) of half; either half chooses head (2, 3), and the pooled share is its."""
    from types import SimpleNamespace

    from transformer.analysis import held_out

    class Planted:
        def __init__(self, loaded, sentences):
            self.decoded = [([0], [1], SimpleNamespace(cross=None)) for _ in sentences]

    found = np.zeros((2, 4))
    found[1, 2], found[0, 0] = 10, 5
    monkeypatch.setattr(held_out, "Sample", Planted)
    monkeypatch.setattr(held_out, "sentence_alignment_hits", lambda *args: (found, 10, found, 10))
    result = held_out.dictionary_held_out(SimpleNamespace(tokenizer=None), ["s"] * 6, dictionary={})
    assert result["heads"] == [[2, 3], [2, 3]] and result["words"] == 60
    assert result["share"]["value"] == 1.0 and result["in_sample"]["share"] == 1.0
