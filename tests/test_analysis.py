"""AttentionMaps: recorded from a real translation, merged to words, stripped of special tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transformer.analysis.attention import (
    AttentionMaps,
    attention_for,
    attention_for_many,
    encoder_attention,
    load_anaphora_examples,
    merge_matrix,
    merged_view,
    translate_with_attention,
    without_specials,
    word_attention,
    word_index,
)
from transformer.analysis.figures import its_metrics, making_metrics
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.tokenizer import EOS_ID
from transformer.search.decode import DecodingOptions


@pytest.fixture(scope="module")
def translation(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    return loaded, translate_with_attention(loaded.model, loaded.tokenizer, "the small cat sees the big dog.")


def test_translation_records_every_head_with_matching_tokens(translation):
    loaded, result = translation
    maps = result.maps
    config = loaded.config
    source, target = len(maps.source_tokens), len(maps.target_tokens)
    assert "katze" in result.translation
    assert maps.source_tokens[-1] == "</s>" and maps.target_tokens[0] == "<s>" and maps.predicted_tokens[-1] == "</s>"
    assert maps.encoder.shape == (config.encoder_layers, config.num_heads, source, source)
    assert maps.decoder.shape == (config.decoder_layers, config.num_heads, target, target)
    assert maps.cross.shape == (config.decoder_layers, config.num_heads, target, source)
    for kind in ("encoder", "decoder", "cross"):
        assert np.allclose(maps.weights(kind).sum(-1), 1, atol=1e-5)
    assert np.triu(maps.decoder, k=1).max() == 0
    assert maps.matrix("cross", None, None).shape == (target, source)
    assert np.allclose(maps.matrix("encoder", 1, None), maps.encoder[1].mean(0))


def test_bfloat16_search_finds_the_translation_and_records_float32_attention(translation):
    loaded, exact = translation
    fast = translate_with_attention(
        loaded.model, loaded.tokenizer, "the small cat sees the big dog.", DecodingOptions(precision="bfloat16")
    )
    assert fast.options.precision == "bfloat16" and fast.translation == exact.translation
    for kind in ("encoder", "decoder", "cross"):  # the same float32 pass over the same output: the same numbers
        assert fast.maps.weights(kind).dtype == np.float32
        assert np.array_equal(fast.maps.weights(kind), exact.maps.weights(kind))


def test_sentences_recorded_in_one_padded_pass_get_their_own_maps(translation):
    """Sources and outputs of different lengths recorded together: each sentence's maps are the ones it gets
    alone, with no row or column for another sentence's padding."""
    loaded, _ = translation
    tokenizer = loaded.tokenizer
    sources = [
        [*tokenizer.encode(text), EOS_ID]
        for text in ("the cat.", "the small cat sees the big dog and the big dog sees the cat.", "dog")
    ]
    outputs = [tokenizer.encode(text) for text in ("die katze.", "der hund", "die kleine katze sieht den hund.")]
    together = attention_for_many(loaded.model, tokenizer, sources, outputs)
    for source, output, maps in zip(sources, outputs, together, strict=True):
        alone = attention_for(loaded.model, tokenizer, source, output)
        assert maps.source_tokens == alone.source_tokens and maps.target_tokens == alone.target_tokens
        assert maps.predicted_tokens == alone.predicted_tokens
        for kind in ("encoder", "decoder", "cross"):
            assert maps.weights(kind).shape == alone.weights(kind).shape
            assert np.allclose(maps.weights(kind), alone.weights(kind), atol=1e-5)
    with pytest.raises(ValueError, match="2 sources but 3 outputs"):
        attention_for_many(loaded.model, tokenizer, sources[:2], outputs)


def test_merging_pieces_sums_keys_and_averages_queries():
    matrix = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.3, 0.3, 0.4]])
    merged = merge_matrix(matrix, [[0, 1], [2]], [[0], [1, 2]])
    assert np.allclose(merged, [[(0.1 + 0.5) / 2, (0.9 + 0.5) / 2], [0.3, 0.7]])
    assert np.allclose(merged.sum(-1), 1)


def test_merged_view_joins_word_pieces(translation):
    _, result = translation
    maps = AttentionMaps(
        source_tokens=["▁Gr", "üße", "▁aus", "</s>"],
        target_tokens=["<s>", "▁Hal", "lo"],
        predicted_tokens=["▁Hal", "lo", "</s>"],
        encoder=np.full((1, 1, 4, 4), 0.25),
        decoder=np.tril(np.ones((1, 1, 3, 3))) / np.arange(1, 4)[:, None],
        cross=np.full((1, 1, 3, 4), 0.25),
    )
    merged = merged_view(maps)
    assert merged.source_tokens == ["Grüße", "aus", "</s>"]
    assert merged.target_tokens == ["<s>", "Hallo"]
    assert merged.encoder.shape == (1, 1, 3, 3) and np.allclose(merged.encoder[0, 0, 0], [0.5, 0.25, 0.25])
    assert merged.cross.shape == (1, 1, 2, 3)
    whole = merged_view(result.maps)
    assert np.allclose(whole.cross.sum(-1), 1, atol=1e-5)


def test_words_merged_by_what_they_predict_label_each_row_with_the_word_it_writes():
    """Rows grouped by the word each position writes: "▁Kinder" (predicts "▁spiel") and "▁spiel" (predicts "en")
    become the row "spielen", not a row labelled with a piece of one word and the start of the next."""
    target = ["<s>", "▁Die", "▁Kinder", "▁spiel", "en", "."]
    predicted = ["▁Die", "▁Kinder", "▁spiel", "en", ".", "</s>"]
    cross = np.zeros((1, 1, 6, 3))
    cross[0, 0, np.arange(6), [0, 1, 2, 2, 2, 2]] = 1.0  # each position's key, by hand
    maps = AttentionMaps(
        source_tokens=["▁The", "▁children", "</s>"],
        target_tokens=target,
        predicted_tokens=predicted,
        encoder=np.full((1, 1, 3, 3), 1 / 3),
        decoder=np.tril(np.ones((1, 1, 6, 6))) / np.arange(1, 7)[:, None],
        cross=cross,
    )
    by_input = merged_view(maps)
    by_prediction = merged_view(maps, by_prediction=True)
    assert by_input.target_tokens == ["<s>", "Die", "Kinder", "spielen", "."]
    assert by_prediction.predicted_tokens == ["Die", "Kinder", "spielen", ".", "</s>"]
    assert by_prediction.cross.shape == by_input.cross.shape == (1, 1, 5, 3)
    # "spielen" is written by positions 2 and 3 (which attend keys 2 and 2): its row is all on key 2.
    assert np.allclose(by_prediction.cross[0, 0, 2], [0, 0, 1])
    assert np.allclose(by_prediction.decoder.sum(-1), 1)
    # Without special tokens, rows go by what they write: the row writing "Die" (reading <s>) stays.
    stripped = without_specials(by_prediction, by_prediction=True)
    assert stripped.predicted_tokens == ["Die", "Kinder", "spielen", "."]
    assert stripped.target_tokens == ["Die", "Kinder", "spielen", "."]
    assert np.allclose(stripped.cross[0, 0, 0], [1, 0])


def test_hiding_special_tokens_removes_their_rows_and_columns(translation):
    _, result = translation
    stripped = without_specials(result.maps)
    assert "</s>" not in stripped.source_tokens and "<s>" not in stripped.target_tokens
    assert stripped.encoder.shape[-1] == len(stripped.source_tokens)
    assert stripped.cross.shape[-2:] == (len(stripped.target_tokens), len(stripped.source_tokens))


def test_paper_style_padding_gets_no_attention(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    tokens, weights = encoder_attention(loaded.model, loaded.tokenizer, "the cat.", pads=3)
    assert tokens[-4:] == ["</s>", "<pad>", "<pad>", "<pad>"]
    assert weights.shape[-1] == len(tokens)
    assert weights[..., -3:].max() == 0


def test_word_attention_follows_word_pieces():
    tokens = ["▁The", "▁Law", "▁is", "▁it", "s", "▁own", "</s>"]
    weights = np.zeros((1, 1, 7, 7))
    weights[0, 0, 3, 1] = 1.0  # piece "▁it" of "its" looks at "Law"
    weights[0, 0, 4, 1] = 0.5  # piece "s" splits its weight
    weights[0, 0, 4, 5] = 0.5
    its, law = word_index(tokens, "its"), word_index(tokens, "Law")
    assert (its, law) == (3, 1)
    assert word_attention(weights, tokens, its, law)[0, 0] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="'application' not found"):
        word_index(tokens, "application")


def test_making_metrics_count_heads_that_complete_the_phrase():
    tokens = ["▁laws", "▁making", "▁the", "▁process", "▁more", "▁diff", "icult", ".", "</s>"]
    layers, heads = 2, 4
    weights = np.full((layers, heads, 9, 9), 1 / 9)
    weights[0, :, 1] = np.eye(9)[2]  # layer 1: "making" looks at "the" only
    for head, key in enumerate([4, 5, 3, 1]):  # more, "diff" piece of difficult, process, itself
        weights[1, head, 1] = 0.0
        weights[1, head, 1, key] = 0.7
        weights[1, head, 1, 0] = 0.3
    metrics = making_metrics(weights, tokens)
    # Heads 0 and 1 point at "more" and "difficult"; head 2 at "process"; head 3 at itself, so its largest
    # non-self weight is "laws".
    assert metrics["heads_on_more_difficult_per_layer"] == [0, 2]
    assert metrics["best_layer_making"] == 1 and metrics["making_heads_on_more_difficult"] == 2
    assert metrics["strongest_word_from_making"][1] == ["more", "difficult", "process", "laws"]


def test_its_metrics_find_the_head_that_resolves_the_anaphor():
    tokens = ["▁The", "▁Law", "▁is", "▁fair", ",", "▁but", "▁its", "▁application", "</s>"]
    weights = np.full((2, 3, 9, 9), 1 / 9)
    weights[1, 2, 6] = 0.0
    weights[1, 2, 6, 1] = 0.8  # "its" → "Law"
    weights[1, 2, 6, 7] = 0.2
    metrics = its_metrics(weights, tokens)
    assert (metrics["best_layer_its"], metrics["best_head_its"]) == (1, 2)
    assert metrics["its_to_law"] == pytest.approx(0.8) and metrics["its_to_application"] == pytest.approx(0.2)
    uniform = its_metrics(np.full((1, 1, 9, 9), 1 / 9), tokens)
    assert uniform["its_to_law"] == pytest.approx(1 / 9)  # what a uniform head scores


def test_anaphora_set_marks_words_that_exist(tokenizer):
    examples = load_anaphora_examples()
    assert len(examples) >= 50
    assert len({e.pronoun for e in examples}) >= 8 and len({e.antecedent for e in examples}) >= 40
    for example in examples:
        words = example.sentence.replace(",", " ").replace(".", " ").split()
        assert words.count(example.pronoun) == 1 and words.count(example.antecedent) == 1, example
