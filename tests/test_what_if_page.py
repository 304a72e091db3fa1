"""The What if page, run headless on the tiny trained checkpoint: each tab shows what it promises and follows its
controls, and a link reopens the same view."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import array, charts, no_exceptions, plain, smaller_model
from transformer.analysis import ablation
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.data import read_parallel

PAGE = Path(__file__).resolve().parent.parent / "pages" / "what_if.py"


@pytest.fixture
def checkpoint(trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the tiny checkpoint (the importance tab may store a file beside it), with a dev set the page can
    measure on."""
    folder = shutil.copytree(trained_checkpoint, tmp_path / "tiny")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    return folder


@pytest.fixture
def sentence(corpus) -> str:
    return read_parallel(f"{corpus['dev']}.en", f"{corpus['dev']}.de")[0][0]


def open_page(sentence: str, **query: str) -> AppTest:
    app = AppTest.from_file(str(PAGE), default_timeout=180)
    app.query_params["wi_text"] = sentence
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def translations(app: AppTest) -> list[str]:
    """The two translations of the ablation tab as shown (markdown blocks with the translation's style)."""
    return [block.value for block in app.markdown if "font-size:1.25rem" in block.value]


def test_switching_every_cross_head_off_changes_the_translation_and_none_changes_nothing(checkpoint, sentence):
    app = open_page(sentence)
    no_exceptions(app)
    before, after = charts(app)[:2]
    assert array(before["figure"]["data"][0]["z"]).tolist() == array(after["figure"]["data"][0]["z"]).tolist()
    _intact, ablated = translations(app)
    assert "line-through" not in ablated and "#dcf5dc" not in ablated  # nothing off: nothing marked

    app.button(key="wi_all_cross").click().run()
    no_exceptions(app)
    assert len(app.multiselect(key="wi_off_cross__en").value) == 8 and app.query_params["wi_off_cross"]
    _, ablated = translations(app)
    assert "line-through" in ablated or "#dcf5dc" in ablated  # the output changed, and the page marks how
    other = open_page(sentence, wi_off_cross=app.query_params["wi_off_cross"])  # the link, in a new session
    assert other.multiselect(key="wi_off_cross__en").value == app.multiselect(key="wi_off_cross__en").value
    assert translations(other) == translations(app)


def test_importance_tab_ranks_heads_and_hands_the_least_important_to_the_ablation(checkpoint, sentence):
    app = open_page(sentence, wi_tab="importance", wi_sample="5")
    no_exceptions(app)
    assert app.radio(key="wi_measure__en").options == ["gradient proxy"]  # no ablation measured yet
    maps = [chart for chart in charts(app) if chart["figure"]["data"][0]["type"] == "heatmap"]
    assert len(maps) == 3 and all(array(m["figure"]["data"][0]["z"]).shape == (2, 4) for m in maps)
    app.button[[b.label for b in app.button].index("Measure by ablation")].click().run()
    no_exceptions(app)
    assert app.radio(key="wi_measure__en").value == "bleu_drop"
    app.slider(key="wi_k").set_value(3).run()
    app.button[[b.label for b in app.button].index("Switch these 3 heads off")].click().run()
    no_exceptions(app)
    assert app.session_state["wi_tab"] == "ablate"
    chosen = sum(len(app.session_state[f"wi_off_{kind}"]) for kind in ("encoder", "decoder", "cross"))
    assert chosen == 3


def test_stored_importance_is_used_only_for_its_own_weights(checkpoint, sentence, corpus):
    loaded = load_checkpoint(checkpoint)
    pairs = read_parallel(f"{corpus['dev']}.en", f"{corpus['dev']}.de")[:4]
    result = ablation.measure_importance(loaded.model, loaded.tokenizer, pairs[:2], report_pairs=pairs[2:])
    ablation.save_importance(loaded, {**result, "source": "words, pairs 3–4 (ranked on pairs 1–2)"})
    assert ablation.read_importance(loaded)["sentences"] == 2
    app = open_page(sentence, wi_tab="importance")
    no_exceptions(app)
    captions = " ".join(plain(caption.value) for caption in app.caption)
    assert not app.info and "words, pairs 3–4 (heads ranked on pairs 1–2)" in captions
    (table,) = [frame.value for frame in app.dataframe if "BLEU lost, 95% interval" in frame.value.columns]
    assert len(table) == 24 and all(cell.startswith("[") for cell in table["BLEU lost, 95% interval"])
    assert app.radio(key="wi_measure__en").options == ["BLEU lost", "chrF lost", "gradient proxy"]
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)  # other weights: the stored table is not theirs
    assert ablation.read_importance(load_checkpoint(checkpoint)) is None


def test_rollout_tab_shows_raw_attention_rollout_and_flow(checkpoint, sentence):
    app = open_page(sentence, wi_tab="rollout")
    no_exceptions(app)
    shown = charts(app)
    assert len(shown) == 4  # encoder raw and rollout; cross raw and cross rollout
    rolled = array(shown[1]["figure"]["data"][0]["z"])
    assert np.allclose(rolled.sum(axis=1), 1.0, atol=1e-4)
    app.toggle(key="wi_flow").set_value(True).run()
    no_exceptions(app)
    assert len(charts(app)) == 5 and app.query_params["wi_flow"] == "1"


def test_beam_tab_lists_the_search_and_its_best_is_the_translation(checkpoint, sentence):
    app = open_page(sentence, wi_tab="beam")
    no_exceptions(app)
    table = app.dataframe[0].value
    shown = plain(next(m.value for m in app.markdown if "**Translation:**" in m.value))
    assert table.iloc[0]["Hypothesis"] in shown
    assert list(table["Score (log P / lp)"]) == sorted(table["Score (log P / lp)"], reverse=True)
    titles = [chart["figure"]["layout"]["title"]["text"] for chart in charts(app)]
    assert titles[0] == "Beam search tree" and "Probability of each output token" in titles[1]
    if len(table) > 1:
        app.selectbox(key="wi_hypothesis").set_value(1).run()
        no_exceptions(app)
        assert table.iloc[1]["Hypothesis"] in charts(app)[-1]["figure"]["layout"]["title"]["text"]


def test_forced_decoding_of_the_models_output_scores_100(checkpoint, sentence):
    app = open_page(sentence, wi_tab="forced")
    no_exceptions(app)
    assert app.info  # asks for a translation
    shown = plain(next(m.value for m in app.markdown if "**Translation:**" in m.value))
    output = shown.split("Translation: ")[1].split("  ·  ")[0]
    app.text_area(key="wi_given").set_value(output).run()
    no_exceptions(app)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["BLEU of the model's output against it"] == "100.0"
    assert metrics["log P of your translation"] == metrics["log P of the model's"]


def test_side_by_side_compares_two_sentences_and_two_checkpoints(checkpoint, sentence, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")  # a typed folder: as on a laptop, every visitor may
    app = open_page(sentence, wi_tab="compare", wi_mode="sentences", wi_other_text=sentence)
    no_exceptions(app)
    difference = array(charts(app)[-1]["figure"]["data"][0]["z"])
    assert difference.shape[0] > 0 and np.abs(difference).max() == 0.0  # the same sentence twice: no difference
    app.text_input(key="wi_other_text").set_value(sentence + " " + sentence).run()
    no_exceptions(app)
    assert any("differ in shape" in info.value for info in app.info)
    app.radio(key="wi_mode__en").set_value("checkpoints").run()
    no_exceptions(app)
    assert str(checkpoint) in app.selectbox(key="wi_other").options
    app.text_input(key="wi_other_path").set_value(str(tmp_path / "missing")).run()
    no_exceptions(app)
    assert app.error and "Cannot load" in app.error[0].value
    app.text_input(key="wi_other_path").set_value(str(checkpoint)).run()
    no_exceptions(app)
    assert len(charts(app)) == 3 and np.abs(array(charts(app)[-1]["figure"]["data"][0]["z"])).max() == 0.0


def test_a_what_if_link_reproduces_the_view(checkpoint, sentence):
    app = open_page(sentence, wi_tab="beam")
    app.selectbox(key="wi_beam_layer").set_value(2).run()
    copy = AppTest.from_file(str(PAGE), default_timeout=180)
    for key, value in app.query_params.items():
        copy.query_params[key] = value
    copy.run()
    no_exceptions(copy)
    assert copy.query_params["wi_tab"] == "beam" and copy.selectbox(key="wi_beam_layer").value == 2
    assert [chart["figure"] for chart in charts(copy)] == [chart["figure"] for chart in charts(app)]


def test_a_link_names_an_app_checkpoint_by_name_not_by_the_servers_folder(trained_checkpoint, tmp_path, monkeypatch):
    """The side-by-side tab's checkpoint choice goes into the page's link: a checkpoint of the app's checkpoints/
    folder by its name, so that a shared link neither carries nor needs the server's own folders."""
    from transformer.formats import checkpoint as checkpoint_module

    folder = tmp_path / "checkpoints"
    shutil.copytree(trained_checkpoint, folder / "tiny")
    monkeypatch.setattr(checkpoint_module, "REPOSITORY_CHECKPOINTS", folder)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", "tiny")
    app = open_page("the cat sees the dog.", wi_tab="compare", wi_mode="checkpoints")
    no_exceptions(app)
    assert app.selectbox(key="wi_other").options == ["tiny"]
    assert app.query_params["wi_other"] == "tiny"
    assert str(tmp_path) not in " ".join(str(value) for value in app.query_params.values())


def test_every_tab_opens_on_the_models_clearest_head(monkeypatch):
    """Without a link's choice, each tab's view opens on the head the main page opens on (the shipped model's
    best-aligned cross-attention head), not on cross-attention layer 1, head 1 (a diffuse head)."""
    from transformer.analysis import precompute
    from transformer.formats.checkpoint import DEFAULT_CHECKPOINT_NAME

    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", DEFAULT_CHECKPOINT_NAME)
    stored = precompute.read(load_checkpoint(DEFAULT_CHECKPOINT_NAME))
    kind, layer, head = precompute.default_head(stored.tables)
    assert (kind, layer, head) != ("cross", 0, 0)
    for tab, prefix in (("ablate", "wi_"), ("beam", "wi_beam_"), ("forced", "wi_forced_")):
        given = {"wi_given": "Die Kinder spielen im Park."} if tab == "forced" else {}
        app = open_page("The children are playing in the park.", wi_tab=tab, **given)
        no_exceptions(app)
        shown = (
            app.radio(key=f"{prefix}kind__en").value,
            app.selectbox(key=f"{prefix}layer").value,
            app.selectbox(key=f"{prefix}head").value,
        )
        assert shown == (kind, layer + 1, head + 1), tab


def test_switched_off_heads_are_named_layer_head_from_1_and_old_links_still_open(checkpoint, sentence):
    """``wi_off_cross=2-4`` is layer 2, head 4; a link from before version 2 gave layer × heads + head from 0."""
    app = open_page(sentence, wi_off_cross="2-4", v="2")
    no_exceptions(app)
    assert app.multiselect(key="wi_off_cross__en").value == [(1, 3)]
    heads = json.loads((Path(checkpoint) / "config.json").read_text())["num_heads"]
    old = open_page(sentence, wi_off_cross=str(1 * heads + 3))  # no v: the old spelling of the same head
    no_exceptions(old)
    assert old.multiselect(key="wi_off_cross__en").value == [(1, 3)] and old.query_params["wi_off_cross"] == "2-4"


def test_side_by_side_with_a_model_of_another_shape_offers_what_both_have(checkpoint, sentence, tmp_path, monkeypatch):
    """A model with fewer layers and heads beside the loaded one: both translations, both maps, and pickers that
    offer only the layers and heads both models have (it used to stop at "no such layer or head")."""
    small = smaller_model(checkpoint, tmp_path / "small", layers=1, heads=2)
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    app = open_page(sentence, wi_tab="compare", wi_mode="checkpoints", wi_other_path=str(small), wi_compare_layer="2")
    no_exceptions(app)
    assert not app.warning and not app.error
    labels = [plain(block.value) for block in app.markdown]
    assert "tiny" in labels and "small" in labels  # each side's translation under its model's name
    assert app.selectbox(key="wi_compare_layer").options == ["1"] and app.selectbox(key="wi_compare_head").options == [
        "1",
        "2",
    ]
    assert len(charts(app)) >= 2
    assert any("differ in shape" in plain(caption.value) for caption in app.caption)
