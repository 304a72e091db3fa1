"""The head atlas: heads against gold syntax and gold alignments, each beside its baseline
(:mod:`transformer.analysis.syntax`, :mod:`transformer.analysis.atlas`, ``python -m transformer atlas``)."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.conftest import charts, no_exceptions
from transformer.analysis import atlas, atlas_groups, atlas_index, atlas_measures, atlas_scores, syntax
from transformer.cli import atlas as atlas_cli
from transformer.formats.checkpoint import load_checkpoint, write_json

PAGE = Path(__file__).resolve().parent.parent / "pages" / "head_atlas.py"
# Two pairs in the synthetic corpus's words, for the index of sentences.
TWO_PAIRS = [
    ("the small cat sees the big dog.", "der klein katze sieht der groß hund."),
    ("a dog sleeps.", "ein hund schläft."),
]

# "Die Katze schläft am Haus." with "am" = "an dem" (a multiword token), a subtyped relation and punctuation.
GERMAN_TREE = """# sent_id = 1
# text = Die Katze schläft am Haus.
1\tDie\tder\tDET\t_\t_\t2\tdet\t_\t_
2\tKatze\tKatze\tNOUN\t_\t_\t3\tnsubj:pass\t_\t_
3\tschläft\tschlafen\tVERB\t_\t_\t0\troot\t_\t_
4-5\tam\t_\t_\t_\t_\t_\t_\t_\t_
4\tan\tan\tADP\t_\t_\t6\tcase\t_\t_
5\tdem\tder\tDET\t_\t_\t6\tdet\t_\t_
6\tHaus\tHaus\tNOUN\t_\t_\t3\tobl\t_\tSpaceAfter=No
7\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

"""


def test_conllu_sentences_fold_contractions_into_their_surface_token(tmp_path: Path):
    path = tmp_path / "de.conllu"
    path.write_text(GERMAN_TREE, encoding="utf-8")
    (tree,) = syntax.read_conllu(path)
    assert tree.text == "Die Katze schläft am Haus."
    assert tree.tokens == ["Die", "Katze", "schläft", "am", "Haus", "."]
    # "am": its first word whose head lies outside it ("an", case → Haus) speaks for it
    assert tree.heads == [1, 2, -1, 4, 2, 2] and tree.relations == ["det", "nsubj", "root", "case", "obl", "punct"]
    assert list(tree.arcs()) == [(0, 1, "det"), (1, 2, "nsubj"), (3, 4, "case"), (4, 2, "obl")]  # no root, punct


def test_pieces_are_owned_by_the_tokens_they_spell():
    tokens = ["The", "café", "."]
    pieces = ["▁The", "▁caf", "<0xC3>", "<0xA9>", ".", "</s>"]
    assert syntax.piece_owners(pieces, tokens) == [0, 1, 1, 1, 2, -1]
    assert syntax.piece_owners(["▁", "The", "▁café", "."], tokens) == [0, 0, 1, 2]  # a bare ▁ goes with what follows
    assert syntax.piece_owners(["▁The", "▁cafe", "."], tokens) is None  # other letters: no mapping


def test_word_maps_average_a_words_rows_and_sum_its_columns():
    weights = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6], [0.0, 0.0, 1.0]])  # pieces: a, a, b
    mapped = syntax.word_map(weights, [0, 0, 1], [0, 0, 1], 2)
    assert mapped == pytest.approx(np.array([[0.7, 0.3], [0.0, 1.0]]))
    left_out = syntax.word_map(weights, [0, 1, -1], [0, 1, -1], 2)  # a piece owned by no word (</s>) is dropped
    assert left_out == pytest.approx(np.array([[0.5, 0.5], [0.2, 0.2]]))
    assert list(syntax.strongest_other(mapped)) == [1, 0]  # never the word itself


def test_the_shipped_atlas_reads_as_typed_scores_in_the_order_a_reader_should_trust():
    """Every score of the shipped model's atlas reads as a typed score; a head's relations come in the order of the
    margin a reader should trust (held out where measured), and a relation's best head, where its record keeps that
    relation, has the figures the summary holds."""
    found = json.loads((Path(__file__).resolve().parent.parent / "checkpoints/en-de-small/atlas.json").read_text())
    held_out = 0
    for record in found["heads"]:
        scores = atlas_scores.scores_of(record)
        assert len(scores) == len(record["scores"]) > 0
        if record["kind"] == "cross":
            (score,) = scores
            assert isinstance(score, atlas_scores.AlignmentScore) and score.difference.low <= score.difference.high
            continue
        assert all(isinstance(score, atlas_scores.RelationScore) for score in scores)
        trusted = [score.trusted_margin.value for score in scores]
        assert trusted == sorted(trusted, reverse=True)
        assert trusted == [atlas_groups.trusted_margin(stored) for stored in record["scores"]]
        held_out += sum(score.held_out is not None for score in scores)
    assert held_out > 0
    by_head = {(record["kind"], record["layer"], record["head"]): record for record in found["heads"]}
    compared = 0
    for kind in ("encoder", "decoder"):
        for chosen in atlas_scores.choices_of(found, kind):
            scores = atlas_scores.scores_of(by_head[kind, chosen.layer, chosen.head])  # a record keeps its best few
            for own in (score for score in scores if score.relation == chosen.relation):
                assert (own.accuracy, own.baseline, own.held_out) == (chosen.accuracy, chosen.baseline, chosen.held_out)
                compared += 1
    assert compared >= 10


def random_trees(count: int, seed: int = 0) -> list[syntax.Tree]:
    """Projective-ish random trees: each word's head is a random other word; a few relations by distance."""
    rng = random.Random(seed)
    trees = []
    for _ in range(count):
        n = rng.randint(4, 9)
        root = rng.randrange(n)
        heads = [-1 if i == root else rng.choice([j for j in range(n) if j != i]) for i in range(n)]
        relations = [
            "root" if h < 0 else ("amod" if h == i + 1 else "obj" if h < i else "nsubj") for i, h in enumerate(heads)
        ]
        trees.append(syntax.Tree(" ".join(f"w{i}" for i in range(n)), [f"w{i}" for i in range(n)], heads, relations))
    return trees


def built_maps(tree: syntax.Tree) -> np.ndarray:
    """[1 layer, 2 heads, words + 1, words + 1] with </s> last: head 0 attends from each word to its gold head (the
    root to </s>), head 1 to the previous word (the first word to itself)."""
    n = len(tree.tokens)
    maps = np.zeros((1, 2, n + 1, n + 1))
    for word, head in enumerate(tree.heads):
        maps[0, 0, word, head if head >= 0 else n] = 1.0
        maps[0, 1, word, max(word - 1, 0)] = 1.0
    maps[0, :, n, n] = 1.0
    return maps


def test_a_head_on_the_gold_head_scores_one_and_a_previous_word_head_beats_no_baseline():
    trees = random_trees(60)
    readings = []
    for tree in trees:
        owners = [*range(len(tree.tokens)), -1]
        word_weights = syntax.word_map(built_maps(tree), owners, owners, len(tree.tokens))
        readings.append(syntax.Reading(tree, syntax.strongest_other(word_weights)))
    relations = atlas_measures.syntax_scores(readings, minimum=1)
    assert set(relations) == {"amod", "obj", "nsubj"}
    for relation, found in relations.items():
        assert found["accuracy"][0, 0, 0] == 1.0, relation  # dependent → head, every arc
        # the previous-word head is the offset −1 baseline itself: never better than the best offset
        assert found["accuracy"][0, 1].max() <= found["baseline"].max() + 1e-9
    assert relations["amod"]["baseline"][0] == 1.0 and relations["amod"]["baseline_offset"][0] == 1  # head next
    held_out = relations["nsubj"]["held_out"]
    assert [(h["layer"], h["head"], h["direction"], h["accuracy"]) for h in held_out] == [
        (1, 1, "dependent_to_head", 1.0)
    ] * 2
    # Its statistics name it: nearly all of its attention on the previous word.
    tree = trees[0]
    punctuation = np.zeros(len(tree.tokens) + 1)
    table = atlas_measures.statistics(built_maps(tree), punctuation, -1, False, False)
    features = dict(zip(atlas.FEATURES, table[0, 1], strict=True))
    assert features["previous"] >= atlas_groups.PATTERN_SHARE > features["self"]
    # The same comparison on other sentences, fixed beforehand: each head's direction and the baseline's offset.
    seen = atlas_measures.head_margins(readings, relations)
    other = []
    for tree in random_trees(80, seed=1):
        owners = [*range(len(tree.tokens)), -1]
        other.append(
            syntax.Reading(
                tree, syntax.strongest_other(syntax.word_map(built_maps(tree), owners, owners, len(tree.tokens)))
            )
        )
    unseen = atlas_measures.head_margins(other, relations, minimum=1)
    for relation in ("obj", "nsubj"):  # the gold head beats the offset on the held-out trees, its interval clear of 0
        assert unseen[relation]["accuracy"][0, 0] == 1.0 and unseen[relation]["low"][0, 0] > 0
        assert unseen[relation]["margin"][0, 0] == pytest.approx(1.0 - unseen[relation]["baseline"][0, 0])
        # the previous-word head never clears its baseline there
        assert not unseen[relation]["low"][0, 1] > 0
    assert unseen["nsubj"]["sentences"] == 80 and seen["nsubj"]["sentences"] == 60
    records = atlas._syntax_record(relations, 0, 1, seen, unseen)
    assert atlas_groups.group_of("encoder", features, records) == "previous"
    gold = atlas._syntax_record(relations, 0, 0, seen, unseen)
    assert gold[0]["accuracy"] == 1.0 and "baseline" in gold[0] and gold[0]["held_out"]["accuracy"] == 1.0
    gold_features = dict(zip(atlas.FEATURES, table[0, 0], strict=True))
    assert atlas_groups.group_of("encoder", gold_features, gold).startswith("syntax:")
    # A margin over a weak baseline alone does not make a head syntactic: it must find the gold word often too…
    weak = [
        {"relation": "advcl", "accuracy": 0.14, "baseline": 0.08, "margin": {"value": 0.06, "low": 0.03, "high": 0.09}}
    ]
    assert atlas_groups.group_of("encoder", {**gold_features, "entropy": 0.5}, weak) == "mixed"
    # …and a large margin whose interval reaches zero does not either; the held-out figures decide over the others.
    unsure = {"relation": "obj", "accuracy": 0.6, "baseline": 0.4, "margin": {"value": 0.2, "low": -0.01, "high": 0.4}}
    assert not atlas_groups.syntactic(unsure)
    assert atlas_groups.syntactic({**unsure, "margin": {"value": 0.2, "low": 0.05, "high": 0.35}})
    assert not atlas_groups.syntactic(
        {**unsure, "margin": {"value": 0.2, "low": 0.05, "high": 0.35}, "held_out": unsure}
    )


def test_diagonal_links_spread_each_german_word_over_the_english():
    assert atlas_measures.diagonal_links(3, 5) == [(0, 0), (0, 1), (1, 2), (2, 3), (2, 4)]
    assert atlas_measures.diagonal_links(4, 1) == [(0, 0)] and atlas_measures.diagonal_links(0, 3) == []


def write_gold(folder: Path) -> None:
    """A tiny treebank pair and alignment gold in the synthetic corpus's words."""
    english = [
        ("the small cat sees the big dog .", [2, 2, 3, -1, 6, 6, 3, 3], "det amod nsubj root det amod obj punct"),
        ("a dog sleeps near the house .", [1, 2, -1, 5, 5, 2, 2], "det nsubj root case det obl punct"),
    ] * 3
    german = [
        ("der klein katze sieht der groß hund .", [2, 2, 3, -1, 6, 6, 3, 3], "det amod nsubj root det amod obj punct"),
        ("ein hund schläft nahe der haus .", [1, 2, -1, 5, 5, 2, 2], "det nsubj root case det obl punct"),
    ] * 3
    for name, sentences in (("en", english), ("de", german)):
        blocks = []
        for text, heads, relations in sentences:
            words = text.split()
            rows = [
                f"{i + 1}\t{w}\t{w}\tX\t_\t_\t{h + 1}\t{r}\t_\t{'SpaceAfter=No' if i + 2 == len(words) else '_'}"
                for i, (w, h, r) in enumerate(zip(words, heads, relations.split(), strict=True))
            ]
            blocks.append(f"# text = {text.replace(' .', '.')}\n" + "\n".join(rows) + "\n")
        (folder / f"{name}.conllu").write_text("\n".join(blocks) + "\n", encoding="utf-8")
    (folder / "gold.en").write_text("the small cat sees the big dog .\na dog sleeps near the house .\n")
    (folder / "gold.de").write_text("der klein katze sieht der groß hund .\nein hund schläft nahe der haus .\n")
    links = [f"1 {i + 1} {i + 1} S" for i in range(8)] + [f"2 {i + 1} {i + 1} S" for i in range(7)]
    (folder / "gold.de-en.wa").write_text("\n".join(links) + "\n")


def test_the_atlas_command_prints_a_record_per_head_and_stores_the_atlas(
    atlas_checkpoint: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    checkpoint = atlas_checkpoint
    monkeypatch.setattr(atlas_index, "default_pairs", lambda languages=("en", "de"): (TWO_PAIRS, ["two pairs"]))
    assert atlas_cli.main(["--checkpoint", str(checkpoint), "--json", "--save"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    loaded = load_checkpoint(checkpoint)
    layers, heads = loaded.model.config.encoder_layers, loaded.model.config.num_heads
    assert len(records) == 3 * layers * heads
    assert {(r["kind"], r["layer"], r["head"]) for r in records} == {
        (kind, layer, head)
        for kind in ("encoder", "decoder", "cross")
        for layer in range(1, layers + 1)
        for head in range(1, heads + 1)
    }
    for record in records:
        assert record["scores"] and all("baseline" in score for score in record["scores"])
        assert record["cluster"] and len(record["related"]) == atlas.RELATED
        assert [record["kind"], record["layer"], record["head"]] not in record["related"]
        # its clearest examples: two sentences, the strongest link first, the query word itself never its own key
        weights = [example["weight"] for example in record["examples"]]
        assert len(weights) == 2 and weights == sorted(weights, reverse=True)
        assert all(("key_words" in e) == (record["kind"] == "cross") for e in record["examples"])
    encoder = next(r for r in records if r["kind"] == "encoder")
    assert {s["relation"] for s in encoder["scores"]} == {"det", "amod", "nsubj", "obj", "case", "obl"}
    cross = next(r for r in records if r["kind"] == "cross")
    assert cross["scores"][0]["baseline_reading"] == "diagonal" and 0 <= cross["scores"][0]["aer"] <= 1
    stored = atlas.stored(loaded)
    assert stored is not None and [r["cluster"] for r in stored["heads"]] == [r["cluster"] for r in records]
    assert all(len(r["scores"]) <= atlas.STORED_SCORES for r in stored["heads"])  # the card's, not every relation
    assert [r["scores"][0] for r in stored["heads"]] == [r["scores"][0] for r in records]
    assert stored["treebank"]["pairs"] == 6
    assert atlas_index.load(loaded) is not None  # the index the examples came from, stored beside it too
    # An atlas stored by an older version of the measure is not misread: it counts as not stored.
    write_json(checkpoint / atlas.ATLAS_FILE, {**json.loads((checkpoint / atlas.ATLAS_FILE).read_text()), "version": 1})
    assert atlas.stored(loaded) is None


@pytest.fixture
def atlas_checkpoint(trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the tiny model with the treebank and the alignment gold made for it, the app pointed at it."""
    write_gold(tmp_path)
    monkeypatch.setattr(atlas, "ENGLISH_TREES", tmp_path / "en.conllu")
    monkeypatch.setattr(atlas, "GERMAN_TREES", tmp_path / "de.conllu")
    monkeypatch.setattr(atlas, "HELD_OUT_ENGLISH", tmp_path / "en.conllu")  # held out in name only, here
    monkeypatch.setattr(atlas, "HELD_OUT_GERMAN", tmp_path / "de.conllu")
    monkeypatch.setattr(atlas, "HELD_OUT_MIN_ARCS", 1)
    monkeypatch.setattr(atlas, "ALIGNMENT_GOLD", tmp_path / "gold")
    monkeypatch.setattr(atlas, "MIN_ARCS", 1)
    checkpoint = shutil.copytree(trained_checkpoint, tmp_path / "model")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(checkpoint))
    return checkpoint


def run_atlas_page(**query: str) -> AppTest:
    app = AppTest.from_file(str(PAGE), default_timeout=120)
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def test_the_atlas_page_maps_every_head_and_opens_its_card(atlas_checkpoint: Path):
    loaded = load_checkpoint(atlas_checkpoint)
    found = atlas.build(loaded)
    atlas.add_examples(found["heads"], atlas_index.build(loaded, TWO_PAIRS))
    atlas.save(loaded, found)  # with its examples, but no index stored beside it
    app = run_atlas_page()
    no_exceptions(app)
    examples = [str(m.value) for m in app.markdown if 'class="translation"' in str(m.value)]
    assert len(examples) == 1 and examples[0].count("<li>") == 2  # the card's two stored examples
    assert any(b.key == "atlas_build_index" for b in app.button)  # and a way to search more
    # The card and the relations' table give the held-out figures first, each margin with its 95% interval.
    tables = [frame.value for frame in app.dataframe]
    card_table, relations_table = tables[0], tables[-1]
    for table in (card_table, relations_table):
        assert "held out: margin, 95% interval" in table.columns
        assert all(
            re.fullmatch(r"[+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\]", cell)
            for cell in table["held out: margin, 95% interval"]
        )
    told = " ".join(str(m.value) for m in app.markdown)
    assert "sentences never trained on" in told and "whole 95% interval" in told
    (chart,) = charts(app)
    points = [i for trace in chart["figure"]["data"] for i in trace.get("customdata") or []]
    heads = 3 * loaded.model.config.encoder_layers * loaded.model.config.num_heads
    assert sorted(points) == list(range(heads))  # every head once on the map
    first = app.selectbox(key="atlas_head__en").value
    assert app.query_params["atlas_head"] == first
    app.selectbox(key="atlas_head__en").set_value("cross-2-3").run()
    no_exceptions(app)
    assert app.main.header[0].value.startswith("Cross L2 H3")
    assert "alignment error rate" in " ".join(str(m.value) for m in app.markdown)
    assert app.query_params["atlas_head"] == "cross-2-3"
    related = [b for b in app.button if (b.key or "").startswith("atlas_related_")]
    assert len(related) == atlas.RELATED
    related[0].click().run()
    kind, layer, head = related[0].key.removeprefix("atlas_related_").split("_")
    assert app.selectbox(key="atlas_head__en").value == f"{kind}-{layer}-{head}" != "cross-2-3"
    # A shared link opens the same card; a malformed one the default.
    assert run_atlas_page(atlas_head="encoder-1-2").main.header[0].value.startswith("Encoder L1 H2")
    assert run_atlas_page(atlas_head="encoder-9-9").selectbox(key="atlas_head__en").value == first


def test_without_a_stored_atlas_the_page_says_how_to_measure_it_and_measures_on_request(atlas_checkpoint: Path):
    loaded = load_checkpoint(atlas_checkpoint)
    atlas.save(loaded, {**atlas.build(loaded), "version": atlas.ATLAS_VERSION - 1})  # an older measure's records
    app = run_atlas_page()
    no_exceptions(app)
    assert not charts(app)
    assert any("python -m transformer atlas" in str(info.value) for info in app.info)
    app.button[0].click().run()
    no_exceptions(app)
    assert len(charts(app)) == 1 and "not stored" in " ".join(str(c.value) for c in app.caption)


def planted_index() -> atlas_index.Index:
    """Three English sentences, encoder only (decoder and cross empty), one layer of two heads: head 2 links "it"
    to "animal" in the planted sentence (1) with the largest weight of the index; head 1 links "it" to "the"."""
    english = [["the", "dog", "barks"], ["the", "animal", "was", "tired", "because", "it", "slept"], ["it", "rains"]]
    rows = [(s, q) for s, words in enumerate(english) for q in range(len(words))]
    key = np.zeros((len(rows), 2), dtype=np.uint8)
    weight = np.full((len(rows), 2), 0.4, dtype=np.float16)
    for row, (sentence, query) in enumerate(rows):
        key[row] = [0, (query + 1) % len(english[sentence])]
        if (sentence, query) == (1, 5):
            key[row], weight[row, 1] = [0, 1], 0.9  # "it" → "the" (head 1), "it" → "animal" (head 2)
    empty = {"sentence": np.zeros(0, dtype=np.int32), "query": np.zeros(0, dtype=np.uint8)}
    return atlas_index.Index(
        english=english,
        german=[[] for _ in english],
        sentence={
            "encoder": np.array([s for s, _ in rows], dtype=np.int32),
            "decoder": empty["sentence"],
            "cross": empty["sentence"],
        },
        query={
            "encoder": np.array([q for _, q in rows], dtype=np.uint8),
            "decoder": empty["query"],
            "cross": empty["query"],
        },
        key={"encoder": key, "decoder": np.zeros((0, 2), dtype=np.uint8), "cross": np.zeros((0, 2), dtype=np.uint8)},
        weight={"encoder": weight, "decoder": np.zeros((0, 2), np.float16), "cross": np.zeros((0, 2), np.float16)},
        heads=2,
        names=["planted"],
    )


def test_the_index_returns_the_planted_sentence_first_and_the_heads_that_link_two_words():
    index = planted_index()
    (first, *rest) = atlas_index.strongest(index, "encoder", 0, 1, top=3)
    assert (first["sentence"], first["query_word"], first["key_word"]) == (1, "it", "animal")
    assert first["weight"] == pytest.approx(0.9, abs=1e-3) and len({f["sentence"] for f in rest}) == len(rest) == 2
    found = atlas_index.heads_linking(index, "It", "ANIMAL")  # case ignored
    assert found == [{"kind": "encoder", "layer": 1, "head": 2, "hits": 1, "chances": 1}]
    assert atlas_index.heads_linking(index, "it", "the")[0]["head"] == 1
    assert atlas_index.heads_linking(index, "it", "zebra") == []


def test_an_index_built_and_stored_beside_a_model_is_read_back_for_its_weights_only(
    trained_checkpoint: Path, tmp_path: Path
):
    checkpoint = shutil.copytree(trained_checkpoint, tmp_path / "model")
    loaded = load_checkpoint(checkpoint)
    index = atlas_index.build(loaded, [*TWO_PAIRS, ("dog", "hund")], ["test"])
    assert len(index.english) == 2 and index.english[1] == ["a", "dog", "sleeps", "."]
    layers_heads = loaded.model.config.encoder_layers * loaded.model.config.num_heads
    for kind, queries in (("encoder", 8 + 4), ("decoder", 8 + 4), ("cross", 8 + 4)):
        assert index.key[kind].shape == (queries, layers_heads)
    # a self-attention head's strongest link is another word; a cross head's an English word
    assert (index.key["encoder"][:8] != index.query["encoder"][:8, None]).all()
    assert index.key["cross"][8:].max() < 4
    atlas_index.save(loaded, index)
    again = atlas_index.load(loaded)
    assert again is not None and again.english == index.english and (again.key["cross"] == index.key["cross"]).all()
    (checkpoint / "model.safetensors").write_bytes((checkpoint / "model.safetensors").read_bytes()[:-8] + b"\0" * 8)
    assert atlas_index.load(load_checkpoint(checkpoint)) is None  # other weights: not theirs


def test_the_card_finds_where_else_the_head_links_words_and_which_heads_link_two_typed_words(
    atlas_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(atlas_index, "default_pairs", lambda languages=("en", "de"): (TWO_PAIRS, ["two pairs"]))
    loaded = load_checkpoint(atlas_checkpoint)
    atlas.save(loaded, atlas.build(loaded))
    app = run_atlas_page(atlas_head="encoder-1-1")
    no_exceptions(app)
    assert not (atlas_checkpoint / atlas_index.INDEX_FILE).exists()
    (build,) = [b for b in app.button if b.key == "atlas_build_index"]
    build.click().run()
    no_exceptions(app)
    assert (atlas_checkpoint / atlas_index.INDEX_FILE).is_file()  # stored beside the model for the next visit
    listed = [str(m.value) for m in app.markdown if 'class="translation"' in str(m.value)]
    assert len(listed) == 1 and listed[0].count("<li>") == 2  # one line per sentence: the index has two
    assert "over 2 dev and test sentence pairs (two pairs)" in " ".join(str(c.value) for c in app.caption)
    app.text_input(key="atlas_from").set_value("the").run()
    app.text_input(key="atlas_to").set_value("dog").run()
    no_exceptions(app)
    assert app.query_params["atlas_to"] == "dog"
    (linking,) = [frame.value for frame in app.dataframe if "links / chances" in frame.value.columns]
    assert len(linking) >= 1
    # one sentence holds both words, with "the" twice: two chances for every head
    assert all(int(c.split(" / ")[1]) == 2 for c in linking["links / chances"])


def test_a_model_head_built_to_attend_to_the_previous_word_is_found_positional_and_beats_no_baseline(
    trained_checkpoint: Path, tmp_path: Path
):
    """Encoder layer 1, head 1 of a real model rebuilt so that its query is the positional encoding and its key the
    encoding one position later (the exact rotation of §3.5; token embeddings zeroed so that the layer reads
    positions only): its scores peak at the previous position."""
    from transformer.plots.positional import offset_rotation

    loaded = load_checkpoint(trained_checkpoint)
    model = loaded.model
    width = model.config.d_model // model.config.num_heads
    shift = torch.tensor(offset_rotation(model.config.d_model, 1), dtype=torch.float32)  # PE(p + 1) = PE(p) · M
    with torch.no_grad():
        model.embedding.weight.zero_()
        attention = model.encoder_layers[0].self_attention
        for projection in (attention.query, attention.key):
            projection.weight[:width] = 0
            projection.bias[:width] = 0
        attention.query.weight[:width, :width] = 20 * torch.eye(width)  # q_i = PE(i)[:width]
        attention.key.weight[:width] = 20 * shift[:, :width].T  # k_j = PE(j + 1)[:width]: q_i · k_j peaks at j = i − 1
    write_gold(tmp_path)
    english, german = (syntax.read_conllu(tmp_path / f"{name}.conllu") for name in ("en", "de"))
    measured = atlas_measures.measure(loaded, english, german)
    features = dict(zip(atlas.FEATURES, measured.statistics("encoder")[0, 0], strict=True))
    assert features["previous"] > 0.8
    relations = atlas_measures.syntax_scores(measured.readings["encoder"], 1)
    seen = atlas_measures.head_margins(measured.readings["encoder"], relations)
    scores = atlas._syntax_record(relations, 0, 0, seen, None)
    assert not any(atlas_groups.syntactic(score) for score in scores)  # never clear of the offset it imitates
    assert all(score["accuracy"] <= score["baseline"] for score in scores)  # the offset −1 rule does as well
    assert atlas_groups.group_of("encoder", features, scores) == "previous"
