"""Which heads link two words (transformer/analysis/linking.py and the main page's *Word pair* tab): the ranking
reads the right attention kind and direction at word level, on a hand-made translation whose answer is known, and
the tab answers on the visitor's own sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import charts, no_exceptions, plain
from transformer.analysis.attention import AttentionMaps
from transformer.analysis.linking import OUTPUT, SOURCE, Word, linking_heads, ordinary, words

SOURCE_TOKENS = ["▁The", "▁ani", "mal", "▁was", "▁tired", "▁it", "</s>"]  # words: The animal was tired it </s>
TARGET_TOKENS = ["<s>", "▁Das", "▁Tier", "▁es"]  # the decoder reads <s> Das Tier es
PREDICTED = ["▁Das", "▁Tier", "▁es", "</s>"]  # and writes Das Tier es </s>


def rows(count: int, queries: int, keys: int, seed: int) -> np.ndarray:
    weights = np.random.default_rng(seed).random((2, 3, queries, keys))
    return weights / weights.sum(-1, keepdims=True)


@pytest.fixture
def maps() -> AttentionMaps:
    encoder, decoder, cross = rows(2, 7, 7, 0), rows(2, 4, 4, 1), rows(2, 4, 7, 2)
    decoder = np.tril(decoder)
    return AttentionMaps(SOURCE_TOKENS, TARGET_TOKENS, PREDICTED, encoder, decoder, cross)


def test_words_merge_pieces_and_leave_special_tokens_out(maps):
    found = words(maps)
    assert found[SOURCE] == ["The", "animal", "was", "tired", "it", "</s>"]
    assert found[OUTPUT] == ["Das", "Tier", "es", "</s>"]
    assert [word for word in ordinary(maps) if word.side == SOURCE] == [Word(SOURCE, i) for i in range(5)]


def test_two_source_words_are_linked_by_the_encoder_in_their_stronger_direction(maps):
    it, animal = Word(SOURCE, 4), Word(SOURCE, 1)
    links = linking_heads(maps, it, animal)
    assert len(links) == 6 and {link.kind for link in links} == {"encoder"}
    weights = [link.weight for link in links]
    assert weights == sorted(weights, reverse=True)
    for link in links:
        forward = maps.encoder[link.layer, link.head, 5, 1:3].sum()  # "it" → both pieces of "animal"
        backward = maps.encoder[link.layer, link.head, 1:3, 5].mean()  # each piece of "animal" → "it", averaged
        assert link.weight == pytest.approx(max(forward, backward))
        assert (link.query, link.key) == ((it, animal) if forward >= backward else (animal, it))


def test_an_output_word_and_a_source_word_are_linked_by_cross_attention_from_the_output(maps):
    tier, animal = Word(OUTPUT, 1), Word(SOURCE, 1)
    for first, second in ((animal, tier), (tier, animal)):
        links = linking_heads(maps, first, second)
        assert {link.kind for link in links} == {"cross"}
        best = links[0]
        assert (best.query, best.key) == (tier, animal)
        # the decoder position that writes "Tier" (reading "Das", row 1), over both pieces of "animal"
        assert best.weight == pytest.approx(maps.cross[best.layer, best.head, 1, 1:3].sum())


def test_two_output_words_are_linked_from_the_later_to_the_earlier_through_the_mask(maps):
    es, tier = Word(OUTPUT, 2), Word(OUTPUT, 1)
    links = linking_heads(maps, tier, es)
    assert {link.kind for link in links} == {"decoder"} and (links[0].query, links[0].key) == (es, tier)
    # the row writing "es" reads position 2 ("Tier" read there): the key of "Tier" is the position after <s> and Das
    assert links[0].weight == pytest.approx(maps.decoder[links[0].layer, links[0].head, 2, 2])


def test_the_same_word_twice_or_a_word_not_there_is_refused(maps):
    with pytest.raises(ValueError):
        linking_heads(maps, Word(SOURCE, 1), Word(SOURCE, 1))
    with pytest.raises(ValueError):
        linking_heads(maps, Word(SOURCE, 1), Word(OUTPUT, 9))


def test_the_word_pair_tab_ranks_every_head_on_the_visitors_sentence(trained_checkpoint, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    app = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"))
    app.query_params.update({"text": "the red cat sees the dog.", "view": "Word pair"})
    app.run(timeout=180)
    no_exceptions(app)
    first, second = app.selectbox(key="pair_first__en"), app.selectbox(key="pair_second__en")
    assert first.value != second.value
    bars = [chart for chart in charts(app) if chart["figure"]["data"][0].get("orientation") == "h"]
    assert len(bars) == 1 and len(bars[0]["figure"]["data"][0]["x"]) == 8  # 2 layers × 4 heads of one kind
    app.selectbox(key="pair_second__en").set_value(first.value).run()
    assert any("two different words" in plain(info.value) for info in app.info)
    app.selectbox(key="pair_first__en").set_value("source-1").run()
    app.selectbox(key="pair_second__en").set_value("source-3").run()
    no_exceptions(app)
    assert (app.selectbox(key="pair_first__en").value, app.selectbox(key="pair_second__en").value) == (
        "source-1",
        "source-3",
    )
    assert "Encoder self-attention" in " ".join(plain(caption.value) for caption in app.caption)
    assert app.query_params["pair_first"] == "source-1" and app.query_params["pair_second"] == "source-3"
