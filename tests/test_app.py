"""The main page, run headless on a tiny trained checkpoint: translation, every attention view, bad input, URL state."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from pages import explore, navigation, url_state
from pages.choices import shown_key
from tests.conftest import array, charts, no_exceptions, plain, rerun_fragments, wire_states
from transformer.analysis import precompute
from transformer.analysis.attention import KIND_TITLES, merge_tokens, word_groups
from transformer.analysis.omissions import OMISSIONS_FILE
from transformer.features.i18n import LANGUAGES
from transformer.formats.checkpoint import load_checkpoint
from transformer.formats.checkpoint_files import save_beside

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SENTENCE = "the small cat sees the big dog."


@pytest.fixture
def checkpoint(trained_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(trained_checkpoint))
    return trained_checkpoint


def start(text: str | None = SENTENCE, **query: str) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=120)
    if text is not None:
        app.query_params["text"] = text
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def heatmap_z(app: AppTest) -> np.ndarray:
    """The large per-head heatmap of the Heads tab (the first chart on the page)."""
    return array(charts(app)[0]["figure"]["data"][0]["z"])


def page_text(app: AppTest) -> str:
    return "\n".join(str(element.value) for element in [*app.markdown, *app.caption, *app.warning, *app.info])


def test_default_sentence_is_translated_with_every_view(checkpoint):
    app = AppTest.from_file(APP, default_timeout=120).run()
    no_exceptions(app)
    assert app.text_area(key="text").value == explore.DEFAULT_SENTENCE
    (heads,) = charts(app)  # only the open tab (Heads) is built
    # The first view is the model's clearest head, from the measurements stored beside the checkpoint.
    kind, layer, head = precompute.default_head(precompute.read(load_checkpoint(checkpoint)).tables)
    title = f"{KIND_TITLES[kind]}, layer {layer + 1}, head {head + 1}"
    assert heads["figure"]["layout"]["title"]["text"] == title
    assert (app.query_params["kind"], app.query_params["layer"], app.query_params["head"]) == (
        kind,
        str(layer + 1),
        str(head + 1),
    )
    assert "Source tokens" in page_text(app) and "Each row sums to 1" in page_text(app)  # the reading guide
    assert app.query_params["view"] == "Heads"
    linked = start(kind="decoder", layer="1", head="3")  # a link's choice wins over the default
    assert (linked.radio(key="kind__en").value, linked.selectbox(key="head__en").value) == ("decoder", "3")


def test_without_stored_measurements_the_page_opens_on_the_papers_layer(checkpoint, tmp_path: Path, monkeypatch):
    folder = shutil.copytree(checkpoint, tmp_path / "unmeasured")
    (folder / precompute.PRECOMPUTED_FILE).unlink()
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    app = AppTest.from_file(APP, default_timeout=120).run()
    no_exceptions(app)
    # Layer 5 of 6 in the paper, clipped to the tiny model's last layer.
    assert charts(app)[0]["figure"]["layout"]["title"]["text"] == "Encoder self-attention, layer 2, head 1"


def test_the_papers_sentences_are_one_click_away(checkpoint):
    app = start()
    before = charts(app)[0]["figure"]["layout"]["xaxis"]["ticktext"]
    (button,) = [button for button in app.button if "more difficult" in button.label]
    button.click().run()
    no_exceptions(app)
    assert app.text_area(key="text").value == explore.PAPER_SENTENCES["explore.paper_making"]
    assert app.query_params["text"].startswith("It is in this spirit")
    assert charts(app)[0]["figure"]["layout"]["xaxis"]["ticktext"] != before


def test_each_view_is_built_when_its_tab_is_chosen(checkpoint):
    app = start(view="Model view")
    no_exceptions(app)
    grid, cell = (chart["figure"] for chart in charts(app))
    assert grid["layout"]["xaxis"]["ticktext"] == ["H1", "H2", "H3", "H4"]  # tiny: 2 layers × 4 heads
    assert grid["layout"]["yaxis"]["ticktext"] == ["L1", "L2"]
    assert "head" in cell["layout"]["title"]["text"]
    focus = start(view="Token focus")
    no_exceptions(focus)
    assert "colour = head" in charts(focus)[0]["figure"]["layout"]["legend"]["title"]["text"]
    viewer = start(view="bertviz")
    no_exceptions(viewer)
    assert not charts(viewer) and viewer.get("iframe")
    # Alignment: no reading was measured against gold for this model, and the view says so beside the links.
    align = start(view="Alignment")
    no_exceptions(align)
    (links,) = charts(align)
    assert "mean-both" in links["figure"]["layout"]["title"]["text"]
    assert any("not measured against gold alignments" in str(w.value) for w in align.warning)
    assert (align.query_params["align_layer"], align.query_params["align_both"]) == ("avg", "1")
    # The checks are drawn on the sentence: every English content word carries its omission measure on hover, and
    # the words named in the warning are the ones marked red.
    english, german = (trace for trace in links["figure"]["data"] if trace.get("mode") == "markers+text")
    hovers = zip(english["text"], english["hovertext"], strict=True)
    measured = [text for text, hover in hovers if "left out of the English" in hover]
    assert measured and set(measured) <= set(SENTENCE.replace(".", " ").split())
    assert any("nats more likely" in hover for hover in german["hovertext"])
    colours = zip(english["text"], english["textfont"]["color"], strict=True)
    red = [text for text, colour in colours if colour == "#d62728"]
    warned = " ".join(str(w.value) for w in align.warning if "Possibly left untranslated" in str(w.value))
    assert all(f"“{word}" in warned for word in red) and (not red) == (not warned)
    assert any("has not been measured for this model" in plain(c.value) for c in align.caption)  # no omissions.json
    # Attribution: the second output token, by saliency, beside its attention; then contrasted with another token.
    attribution = start(view="Attribution", attr_position="1", attr_method="saliency")
    no_exceptions(attribution)
    source, prefix = (chart["figure"] for chart in charts(attribution))
    names = [trace["name"] for trace in source["data"]]
    assert names[0] == "attention" and set(names[1:]) <= {"attribution (raises the score)", "attribution (lowers it)"}
    assert len(prefix["data"][0]["x"]) == 2  # <s> and the first token written
    assert "of the attribution comes from the source" in page_text(attribution)
    assert attribution.selectbox(key="attr_against__en").value == -1
    attribution.selectbox(key="attr_against__en").set_value(
        attribution.selectbox(key="attr_against__en").options[1]
    ).run()
    no_exceptions(attribution)
    assert attribution.query_params["attr_against"] not in ("", "-1")
    # Logit lens: every decoder layer (tiny: 2) against every token written, with </s>.
    lens = start(view="Logit lens")
    no_exceptions(lens)
    (figure,) = charts(lens)
    cells = figure["figure"]["data"][0]
    assert len(cells["y"]) == 2 and cells["x"][-1].endswith("&lt;/s&gt;")  # shown literally
    assert "already the top prediction for good" in page_text(lens)
    unknown = start(view="<script>")
    no_exceptions(unknown)
    assert len(charts(unknown)) == 1 and unknown.query_params["view"] == "Heads"


def test_translation_appears_for_the_url_sentence(checkpoint):
    app = start()
    no_exceptions(app)
    assert any("katze" in element.value for element in app.markdown)
    source_tokens = len(SENTENCE.split()) + 2  # at least one piece per word, and </s>
    assert heatmap_z(app).shape[1] >= source_tokens - 1


def heatmap_axes(app: AppTest) -> tuple[list[str], list[str]]:
    """The Heads tab heatmap's (query labels, key labels)."""
    layout = charts(app)[0]["figure"]["layout"]
    return layout["yaxis"]["ticktext"], layout["xaxis"]["ticktext"]


def test_changing_kind_layer_and_head_changes_the_heatmap(checkpoint):
    app = start(kind="encoder", layer="1", head="1")
    encoder_head = heatmap_z(app)
    source_queries, source_keys = heatmap_axes(app)
    assert source_queries == source_keys  # encoder self-attention: source against source
    app.selectbox(key="head__en").set_value("2").run()
    other_head = heatmap_z(app)
    assert encoder_head.shape == other_head.shape and not np.allclose(encoder_head, other_head, equal_nan=True)
    app.selectbox(key="layer__en").set_value("2").run()
    assert not np.allclose(heatmap_z(app), other_head, equal_nan=True)
    app.radio(key="kind__en").set_value("cross").run()
    no_exceptions(app)
    cross = heatmap_z(app)
    cross_queries, cross_keys = heatmap_axes(app)
    app.radio(key="kind__en").set_value("decoder").run()
    decoder = heatmap_z(app)
    target_queries, target_keys = heatmap_axes(app)
    # Decoder rows are labelled with the token each position writes (→), keys with the token read: <s> first.
    assert [query.removeprefix("→") for query in target_queries[:-1]] == target_keys[1:]
    assert target_keys[0] == "&lt;s&gt;" and target_queries[-1] == "→&lt;/s&gt;"
    # Cross-attention: the target tokens ask, the source tokens answer, whatever the two lengths happen to be.
    assert (cross_queries, cross_keys) == (target_queries, source_keys)
    assert cross.shape == (len(target_queries), len(source_keys))
    assert np.isnan(decoder[np.triu_indices(decoder.shape[0], k=1)]).all()  # the future is masked, not zero
    assert app.query_params["kind"] == "decoder" and app.query_params["layer"] == "2"


def test_the_alignment_says_how_often_its_marks_were_right_for_this_model(
    checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    measured = shutil.copytree(checkpoint, tmp_path / "measured")
    figures = {"value": 0.25, "low": 0.2, "high": 0.3, "items": 10}
    stored = {"cases": 37, "deleted_marked": figures, "marks_right": {**figures, "value": 0.5}}
    save_beside(load_checkpoint(measured), OMISSIONS_FILE, {**stored, "intact_words_marked": {**figures, "value": 0.1}})
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(measured))
    app = start(view="Alignment")
    no_exceptions(app)
    (line,) = [plain(c.value) for c in app.caption if "How often a mark is right" in plain(c.value)]
    assert "37 omissions" in line and "25% of the deleted words" in line and "50% of the marks" in line
    assert "10% of the content words" in line


def test_head_average_is_the_mean_of_the_heads(checkpoint):
    heads = [heatmap_z(start(layer="1", head=str(h))) for h in (1, 2, 3, 4)]
    average = heatmap_z(start(layer="1", head="avg"))
    assert np.allclose(average, np.mean(heads, axis=0), atol=1e-5)


@pytest.mark.parametrize("text", ["", "   \n  "])
def test_empty_input_asks_for_a_sentence(checkpoint, text):
    app = start(text)
    no_exceptions(app)
    assert any("Type an English sentence" in element.value for element in app.info)
    assert not charts(app)


@pytest.mark.parametrize(
    "text",
    ["</script><img src=x onerror=alert(1)>", "Ich 😀 liebe 한국어 und 中文!", "tab\tbell\x07 nul\x00"],
)
def test_hostile_and_unusual_input_renders_as_text(checkpoint, text):
    views = (("Heads", 1), ("Model view", 2), ("Token focus", 1), ("Alignment", 1), ("Attribution", 2), ("bertviz", 0))
    for view, expected_charts in views:
        app = start(text, view=view)
        no_exceptions(app)
        assert len(charts(app)) == expected_charts, view
        html = "\n".join(element.value for element in app.markdown)
        assert "<img src=x" not in html and "</script>" not in html


def test_long_paste_is_cut_with_a_visible_notice(checkpoint):
    app = start("the cat sees the dog. " * 230)  # about 5,000 characters
    no_exceptions(app)
    (warning,) = app.warning  # one message, and it says how much was really translated
    read = int(re.search(r"only its first ([\d,]+) characters", warning.value).group(1).replace(",", ""))
    assert "5,060 characters" in warning.value and 20 < read < 1000
    assert heatmap_z(app).shape[1] <= 96


@pytest.mark.parametrize(
    "text", ["Ich möchte heute mit dir ins Kino gehen, aber ich habe keine Zeit.", "저는 학생입니다", "😀😀😀 🎉🎉"]
)
def test_input_that_is_not_english_is_flagged(checkpoint, text):
    app = start(text)
    no_exceptions(app)
    assert any("This model reads English" in element.value for element in app.warning)
    assert charts(app)  # still translated and shown: the tokens tell what the model did with it


def test_english_input_is_not_flagged(checkpoint):
    app = start(SENTENCE)
    assert not app.warning


def test_words_by_default_pieces_on_request_and_specials_hidden(checkpoint):
    sentence = "the sleeps."
    tokenizer = load_checkpoint(checkpoint).tokenizer
    pieces = [*tokenizer.pieces(tokenizer.encode(sentence)), "</s>"]
    escaped = [html.escape(piece) for piece in pieces]
    app = start(sentence, layer="1", head="1", kind="encoder")
    no_exceptions(app)
    # A person reads words: no SentencePiece marker on the page's axes unless they ask for pieces.
    assert heatmap_axes(app)[1] == [html.escape(word) for word in merge_tokens(pieces, word_groups(pieces))]
    app.toggle(key="merge").set_value(False).run()
    no_exceptions(app)
    assert heatmap_axes(app)[1] == escaped and app.query_params["merge"] == "0"
    app.toggle(key="specials").set_value(False).run()
    no_exceptions(app)
    assert heatmap_axes(app)[1] == escaped[:-1]  # </s> is gone


def test_greedy_decoding_and_url_round_trip(checkpoint):
    app = start(beam="1")
    no_exceptions(app)
    assert app.radio(key="search__en").value == "greedy"
    assert any("greedy" in element.value for element in app.caption)
    app.radio(key="search__en").set_value("beam").run()
    assert app.query_params["beam"] == "4"


def test_switching_to_greedy_and_using_the_page_keeps_working(checkpoint):
    app = start()
    app.slider(key="alpha").set_value(1.2).run()
    app.radio(key="search__en").set_value("greedy").run()
    no_exceptions(app)
    app.button[0].click().run()  # Translate
    no_exceptions(app)
    app.toggle(key="merge").set_value(True).run()
    no_exceptions(app)
    assert any("greedy" in element.value for element in app.caption) and charts(app)
    app.radio(key="search__en").set_value("beam").run()
    assert app.slider(key="alpha").value == 1.2  # the hidden length penalty was kept
    assert any("α = 1.2" in element.value for element in app.caption)


def open_tab(app: AppTest, view: str) -> AppTest:
    """Choose a tab as a click does (the testing API has no tab clicks): set the tabs' state and rerun."""
    app.session_state["view"] = view
    return app.run()


def test_choices_hold_when_tabs_change(checkpoint):
    app = start()
    app.radio(key="kind__en").set_value("cross").run()
    app.selectbox(key="layer__en").set_value("avg").run()
    # Averaged over layers, the heads are averaged too: "head 2 of every layer" mixes unrelated heads.
    assert app.selectbox(key="head__en").value == "avg" and app.selectbox(key="head__en").disabled
    open_tab(app, "Model view")
    app.radio(key="grid_kind__en").set_value("decoder").run()
    app.selectbox(key="grid_head__en").set_value("2").run()
    open_tab(app, "Token focus")
    app.selectbox(key="focus_layer").set_value(0).run()
    app.multiselect(key="focus_heads__en").set_value([1, 3]).run()
    open_tab(app, "bertviz")
    app.radio(key="bertviz_view__en").set_value("model view").run()
    open_tab(app, "Heads")
    no_exceptions(app)
    assert (
        app.radio(key="kind__en").value,
        app.selectbox(key="layer__en").value,
        app.selectbox(key="head__en").value,
    ) == (
        "cross",
        "avg",
        "avg",
    )
    assert "all layers" in charts(app)[0]["figure"]["layout"]["title"]["text"]
    assert app.query_params["kind"] == "cross" and app.query_params["layer"] == "avg"
    # The link names layers and heads as the app shows them, from 1: heads 2 and 4, layer 1.
    assert app.query_params["grid_kind"] == "decoder" and app.query_params["focus_heads"] == "2,4"
    assert app.query_params["focus_layer"] == "1" and app.query_params["v"] == "2"
    open_tab(app, "Model view")
    assert app.radio(key="grid_kind__en").value == "decoder" and app.selectbox(key="grid_head__en").value == "2"
    open_tab(app, "Token focus")
    assert app.selectbox(key="focus_layer").value == 0 and app.multiselect(key="focus_heads__en").value == [1, 3]
    open_tab(app, "bertviz")
    assert app.radio(key="bertviz_view__en").value == "model view"


def test_a_link_reproduces_every_choice(checkpoint):
    app = start()
    app.radio(key="kind__en").set_value("decoder").run()
    app.toggle(key="specials").set_value(False).run()
    app.toggle(key="predicted").set_value(False).run()  # rows by the token they read (not the default)
    open_tab(app, "Token focus")
    app.radio(key="focus_kind__en").set_value("cross").run()
    app.selectbox(key="focus_query__en").set_value(1).run()
    link = dict(app.query_params)
    copy = AppTest.from_file(APP, default_timeout=120)
    for key, value in link.items():
        copy.query_params[key] = value
    copy.run()
    no_exceptions(copy)
    for key in ("kind", "specials", "predicted", "focus_kind", "focus_query", "focus_heads", "view"):
        assert copy.query_params[key] == link[key], key
    assert copy.toggle(key="specials").value is False and copy.toggle(key="predicted").value is False
    assert charts(copy)[0]["figure"] == charts(app)[0]["figure"]


def test_search_precision_from_the_url_and_the_sidebar(checkpoint):
    app = start(precision="float32")
    no_exceptions(app)
    assert app.radio(key="precision").value == "float32"
    assert any("float32 search" in element.value for element in app.caption)
    exact = heatmap_z(app)
    app.radio(key="precision").set_value("bfloat16").run()
    no_exceptions(app)
    assert any("bfloat16 search" in element.value for element in app.caption)
    assert app.query_params["precision"] == "bfloat16"
    assert np.array_equal(heatmap_z(app), exact)  # same output here, and attention is recorded in float32
    assert start(precision="float8").radio(key="precision").value in ("float32", "bfloat16")  # ignored, no error


def test_checkpoint_selector_switches_models(checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from transformer.formats import checkpoint as ckpt

    monkeypatch.setattr(ckpt, "REPOSITORY_CHECKPOINTS", tmp_path)
    shutil.copytree(checkpoint, tmp_path / "second-model")
    app = start()
    picker = app.sidebar.selectbox(key="checkpoint")
    assert picker.options[0] == str(checkpoint) and "second-model" in picker.options
    picker.set_value("second-model").run()
    no_exceptions(app)
    assert any("`second-model`" in element.value for element in app.caption)


def test_broken_checkpoint_shows_what_to_do(checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    broken = shutil.copytree(checkpoint, tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(b"\x00" * 10)
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(broken))
    app = start()
    no_exceptions(app)
    assert "model.safetensors" in plain(app.error[0].value) and "retrain" in plain(app.error[0].value)
    assert not charts(app)


@pytest.mark.parametrize("text", [SENTENCE, ""])
def test_first_visit_placeholder_gives_way_to_the_page(checkpoint, text, monkeypatch: pytest.MonkeyPatch):
    # A server's first visitor sees the page's title and a read-only sentence box while the model code is imported;
    # once the page has its model, its own box replaces them.
    monkeypatch.setattr(navigation, "model_code_loaded", lambda: False)
    app = start(text)
    no_exceptions(app)
    assert [area.key for area in app.text_area] == ["text"] and app.text_area(key="text").value == text
    assert [title.value for title in app.title] == ["Attention Explorer"]
    assert len(charts(app)) == (1 if text else 0)


def test_labels_name_the_checkpoints_language_pair(checkpoint, tmp_path: Path, monkeypatch):
    folder = shutil.copytree(checkpoint, tmp_path / "en-fr")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert (config["source_language"], config["target_language"]) == ("en", "de")  # the trainer records them
    (folder / "config.json").write_text(json.dumps({**config, "target_language": "fr"}), encoding="utf-8")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    app = start()
    no_exceptions(app)
    assert app.text_area(key="text").label == "English sentence"
    assert any("English→French" in caption.value for caption in app.caption)
    assert any(caption.value.startswith("French translation") for caption in app.caption)


def test_a_link_from_before_heads_were_named_from_1_opens_the_same_view(checkpoint):
    """Links written before version 2 named the token focus's layer and heads from 0; without ``v=2`` they are read
    that way, and the page's new link names the same heads from 1."""
    old = AppTest.from_file(APP, default_timeout=120)
    for key, value in {"view": "Token focus", "focus_layer": "1", "focus_heads": "0,2"}.items():
        old.query_params[key] = value
    old.run()
    no_exceptions(old)
    assert old.selectbox(key="focus_layer").value == 1 and old.multiselect(key="focus_heads__en").value == [0, 2]
    assert (old.query_params["focus_layer"], old.query_params["focus_heads"]) == ("2", "1,3")
    new = AppTest.from_file(APP, default_timeout=120)
    for key, value in dict(old.query_params).items():
        new.query_params[key] = value
    new.run()
    assert new.selectbox(key="focus_layer").value == 1 and new.multiselect(key="focus_heads__en").value == [0, 2]


def test_a_fragments_rerun_with_the_labels_of_the_language_before_keeps_every_choice_as_its_option(checkpoint):
    """Streamlit sends a choice as the label it shows. A fragment that reruns just as the visitor changes the language
    (a click while the page reruns) brings the labels of the language before: each fragment of the page is rerun with
    the English labels after the page has run in Korean. Every control still holds the option chosen, never a label
    and never its default instead, and the page shows no error."""
    app = start(kind="decoder", layer="2", head="3", scale="fitted", search="greedy", palette="colour_blind")
    no_exceptions(app)
    declared = app.session_state[url_state.DECLARED]
    chosen = {key: app.session_state[key] for key in declared if key in app.session_state}
    assert {key: chosen[key] for key in ("kind", "layer", "scale", "search", "palette")} == {
        "kind": "decoder",
        "layer": "2",
        "scale": "fitted",
        "search": "greedy",
        "palette": "colour_blind",
    }
    english = wire_states(app)
    assert "Decoder self (masked)" in [state.string_value for state in english.widgets]  # the wire holds labels
    app.sidebar.selectbox(key="lang").set_value("ko").run()
    fragments = rerun_fragments(app, english, lang=LANGUAGES["ko"])
    assert len(fragments) == 2  # the sentence panel and the views below it
    no_exceptions(app)
    assert {key: app.session_state[key] for key in chosen} == {**chosen, "lang": "ko"}
    widgets = {key: shown_key(key, "ko") for key in chosen if shown_key(key, "ko") in app.session_state}
    assert {"kind", "layer", "head", "scale", "search", "palette"} <= widgets.keys()
    assert {key: app.session_state[widget] for key, widget in widgets.items()} == {key: chosen[key] for key in widgets}
