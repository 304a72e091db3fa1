"""bertviz's head and model views as standalone pages: any token shows as text, nothing is fetched, the views draw."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import bertviz
import numpy as np
import pytest
import torch

from tests.conftest import needs_browser
from transformer.analysis.attention import KIND_TITLES, AttentionMaps
from transformer.plots.bertviz import frame_height, head_view_html, model_view_html, standalone_filename

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Frame, Page

HOSTILE = "</script><img src=x onerror=alert(1)>"
HOSTILE_ESCAPED = "\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"
SOURCE = ["▁The", HOSTILE, "▁cat", "</s>"]
TARGET = ["<s>", "▁Die", "<!--", "▁Katze & co\u2028", '"\\']
VIEWS: dict[str, Callable[..., str]] = {"head": head_view_html, "model": model_view_html}


def softmax(rng: np.random.Generator, shape: tuple[int, ...], causal: bool = False) -> np.ndarray:
    scores = rng.normal(size=shape)
    if causal:
        scores = np.where(np.tril(np.ones(shape[-2:], dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def fake_maps(layers: int = 2, heads: int = 3, source: list[str] = SOURCE, target: list[str] = TARGET) -> AttentionMaps:
    rng = np.random.default_rng(0)
    s, t = len(source), len(target)
    return AttentionMaps(
        source_tokens=source,
        target_tokens=target,
        predicted_tokens=[*target[1:], "</s>"],
        encoder=softmax(rng, (layers, heads, s, s)),
        decoder=softmax(rng, (layers, heads, t, t), causal=True),
        cross=softmax(rng, (layers, heads, t, s)),
    )


def shown(tokens: list[str]) -> list[str]:
    """Tokens as bertviz displays them: the SentencePiece word marker becomes a space."""
    return [token.replace("▁", " ") for token in tokens]


@dataclass
class ParsedPage:
    """The elements a browser builds from the document, read by Python's HTML tokenizer (script text ends at
    ``</script`` exactly as in a browser)."""

    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    scripts: list[tuple[dict[str, str | None], str]] = field(default_factory=list)

    @property
    def params(self) -> dict:
        (data,) = [text for attrs, text in self.scripts if attrs.get("type") == "application/json"]
        return json.loads(data)


class PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = ParsedPage()
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.page.scripts.append((dict(attrs), ""))
            self.in_script = True

    def handle_endtag(self, tag: str) -> None:
        self.in_script = self.in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self.in_script:
            attrs, text = self.page.scripts[-1]
            self.page.scripts[-1] = (attrs, text + data)


def parse(document: str) -> ParsedPage:
    parser = PageParser()
    parser.feed(document)
    parser.close()
    return parser.page


@pytest.mark.parametrize("view", VIEWS)
def test_hostile_tokens_are_data_not_markup(view: str):
    document = VIEWS[view](fake_maps())
    assert HOSTILE not in document
    assert HOSTILE_ESCAPED in document
    assert "<!--" not in document
    page = parse(document)
    # The token opened no element: the page holds only its own structure.
    tags = {"html", "head", "meta", "title", "style", "body", "div", "span", "select", "option", "script"}
    assert {tag for tag, _ in page.tags} == tags
    assert [tag for tag, _ in page.tags].count("script") == 5  # the data block, d3, jQuery, the shim, bertviz's view
    entries = page.params["attention"]
    # Every token arrives in the browser exactly as it was, to be shown as text.
    assert entries[0]["left_text"] == shown(SOURCE)
    assert entries[1]["left_text"] == shown(TARGET)
    assert entries[2]["right_text"] == shown(SOURCE)


@pytest.mark.parametrize("view", VIEWS)
def test_bertviz_writes_tokens_as_text_only(view: str):
    # Escaping the JSON suffices only because bertviz's scripts never parse a string as HTML.
    script = parse(VIEWS[view](fake_maps())).scripts[-1][1]
    assert "const params = JSON.parse(" in script
    for parses_html in (".html(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert parses_html not in script
    assert re.search(r"\.text\((d => d|function \(d\) \{\s*return d;\s*\})\)", script)


URL = re.compile(r"https?://|//[\w.-]+\.\w{2,}/")
LOADING_ATTRIBUTES = {"src", "href", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href"}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("kind", [None, "cross"])
def test_document_loads_nothing_from_anywhere(view: str, kind: str | None):
    document = VIEWS[view](fake_maps(), kind)
    assert document.startswith("<!DOCTYPE html>")
    page = parse(document)
    for tag, attrs in page.tags:
        assert tag not in {"link", "img", "iframe", "object", "embed", "base", "audio", "video", "source"}
        assert not LOADING_ATTRIBUTES & attrs.keys(), (tag, attrs)
    (policy,) = [attrs["content"] for tag, attrs in page.tags if attrs.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in policy
    for text in ("cdnjs", "require.config", "requirejs.config", "@import", "url(", "sourceMappingURL"):
        assert text not in document
    # What URLs remain are XML namespaces d3 names elements with, and credits in comments.
    for match in URL.finditer(document):
        line_start = document.rfind("\n", 0, match.start()) + 1
        before = document[line_start : match.start()].lstrip()
        assert document.startswith("http://www.w3.org/", match.start()) or before.startswith(("//", "*", "/*")), (
            document[line_start : match.end() + 40]
        )


def test_params_hold_every_layer_and_head():
    maps = fake_maps(layers=4, heads=5)
    head = parse(head_view_html(maps)).params
    assert [entry["name"] for entry in head["attention"]] == ["Encoder", "Decoder", "Cross"]
    shapes = [np.array(entry["attn"]).shape for entry in head["attention"]]
    assert shapes == [(4, 5, 4, 4), (4, 5, 5, 5), (4, 5, 5, 4)]
    assert head["include_layers"] == [0, 1, 2, 3]
    np.testing.assert_allclose(head["attention"][2]["attn"], maps.cross, atol=5e-5)

    model = parse(model_view_html(maps, layers=[1, 3], heads=[0, 4])).params
    assert np.array(model["attention"][0]["attn"]).shape == (2, 2, 4, 4)
    assert (model["include_layers"], model["include_heads"], model["total_heads"]) == ([1, 3], [0, 4], 5)
    np.testing.assert_allclose(model["attention"][1]["attn"][1][0], maps.decoder[3, 0], atol=5e-5)


@pytest.mark.parametrize("view", VIEWS)
def test_kind_selects_one_attention_and_drops_the_menu(view: str):
    maps = fake_maps()
    everything = VIEWS[view](maps)
    options = [html.unescape(text) for text in re.findall(r'<option value="\d">([^<]*)</option>', everything)]
    assert options == [KIND_TITLES["encoder"], KIND_TITLES["decoder"], KIND_TITLES["cross"]]

    cross = VIEWS[view](maps, "cross")
    assert '<select id="filter">' not in cross
    (entry,) = parse(cross).params["attention"]
    assert (entry["name"], entry["left_text"], entry["right_text"]) == ("Cross", shown(TARGET), shown(SOURCE))
    assert np.array(entry["attn"]).shape == (2, 3, len(TARGET), len(SOURCE))
    with pytest.raises(ValueError, match="unknown attention kind"):
        VIEWS[view](maps, "self")


def test_head_view_starts_on_the_chosen_layer_and_heads():
    params = parse(head_view_html(fake_maps(), "encoder", layer=1, heads=[0, 2])).params
    assert (params["layer"], params["heads"]) == (1, [0, 2])
    for bad in ({"layer": 2}, {"heads": [3]}, {"heads": []}):
        with pytest.raises(ValueError):
            head_view_html(fake_maps(), **bad)
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        model_view_html(fake_maps(), layers=[5])


def bertviz_params(document: str) -> dict:
    start = document.index("const params = ") + len("const params = ")
    return json.JSONDecoder().raw_decode(document, start)[0]


@pytest.mark.parametrize("view", VIEWS)
def test_params_are_what_bertviz_itself_would_pass(view: str):
    """The same parameters bertviz's Python builds for these maps, so its scripts read them as designed."""
    maps = fake_maps()

    def per_layer(weights: np.ndarray) -> list[torch.Tensor]:
        return [torch.from_numpy(layer[None]) for layer in weights]

    arguments = {
        "encoder_attention": per_layer(maps.encoder),
        "decoder_attention": per_layer(maps.decoder),
        "cross_attention": per_layer(maps.cross),
        "encoder_tokens": maps.source_tokens,
        "decoder_tokens": maps.target_tokens,
        "html_action": "return",
    }
    if view == "head":
        ours = parse(head_view_html(maps, layer=1, heads=[2])).params
        theirs = bertviz_params(bertviz.head_view(**arguments, layer=1, heads=[2]).data)
    else:
        ours = parse(model_view_html(maps)).params
        theirs = bertviz_params(bertviz.model_view(**arguments, display_mode="light").data)
    assert ours.keys() == theirs.keys()
    for key in ours.keys() - {"attention", "root_div_id"}:
        assert ours[key] == theirs[key], key
    for our_entry, their_entry in zip(ours["attention"], theirs["attention"], strict=True):
        assert {key: our_entry[key] for key in ("name", "left_text", "right_text")} == {
            key: their_entry[key] for key in ("name", "left_text", "right_text")
        }
        np.testing.assert_allclose(our_entry["attn"], their_entry["attn"], atol=5e-5)


def test_standalone_filename_names_view_and_kind():
    assert standalone_filename("cross") == "attention-head-view-cross.html"
    assert standalone_filename(None, "model") == "attention-model-view-all.html"
    with pytest.raises(ValueError):
        standalone_filename("encoder", "neuron")


# In a browser: Debian's Chromium driven by Playwright, every request outside the page's own file refused and recorded.


@dataclass
class BrowserPage:
    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def watched(browser: Browser) -> Iterator[BrowserPage]:
    # A short viewport, so that the document's scroll height is the height of what it drew.
    context = browser.new_context(viewport={"width": 1100, "height": 50})
    # Well above the fraction of a second these pages take, and short enough that a page that never draws fails soon.
    context.set_default_timeout(10_000)
    watched = BrowserPage(context.new_page())
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    watched.page.on("request", lambda request: watched.requests.append(request.url))
    watched.page.on("console", lambda message: message.type == "error" and watched.errors.append(message.text))
    watched.page.on("pageerror", lambda error: watched.errors.append(str(error)))
    watched.page.on("dialog", lambda dialog: (watched.dialogs.append(dialog.message), dialog.dismiss()))
    yield watched
    context.close()


def open_file(watched: BrowserPage, tmp_path: Path, document: str, name: str) -> Page:
    path = tmp_path / name
    path.write_text(document, encoding="utf-8")
    watched.page.goto(path.as_uri())
    watched.page.wait_for_selector("#vis svg line", state="attached")
    return watched.page


def svg_texts(frame: Page | Frame, selector: str = "#vis svg text") -> list[str]:
    return frame.eval_on_selector_all(selector, "elements => elements.map(element => element.textContent)")


def count(frame: Page | Frame, selector: str) -> int:
    return frame.eval_on_selector_all(selector, "elements => elements.length")


# The model view's transparent click area over its first thumbnail.
FIRST_THUMBNAIL = "#vis svg rect.attn_background ~ rect"


def assert_quiet(watched: BrowserPage, frame: Page | Frame, *allowed: str) -> None:
    """No request but the page's own file, no error, no dialog, and no image a token could have smuggled in."""
    assert [url for url in watched.requests if url not in allowed] == []
    assert watched.errors == []
    assert watched.dialogs == []
    assert count(frame, "img") == 0


@needs_browser
def test_head_view_draws_offline_and_shows_hostile_tokens_as_text(watched: BrowserPage, tmp_path: Path):
    maps = fake_maps(layers=2, heads=3)
    page = open_file(watched, tmp_path, head_view_html(maps), standalone_filename(None))
    heads, sources, targets = 3, len(SOURCE), len(TARGET)
    # Encoder first: every token on both sides, a line per head and token pair.
    assert svg_texts(page) == shown(SOURCE) * 2
    assert count(page, "#vis svg line") == heads * sources * sources
    # Hovering a query token leaves only its lines visible (d3 v5 hands bertviz the token's index).
    page.hover("#vis svg #left > g:nth-child(2) > g:nth-child(2) > text")
    assert count(page, "#vis svg line[visibility=visible]") == heads * sources
    # The menu switches to cross attention: decoder tokens on the left, source tokens on the right.
    page.select_option("#filter", "2")
    assert svg_texts(page) == shown(TARGET) + shown(SOURCE)
    assert count(page, "#vis svg line") == heads * targets * sources
    page.select_option("#layer", "1")
    assert count(page, "#vis svg line") == heads * targets * sources
    assert page.evaluate("document.documentElement.scrollHeight") <= frame_height(maps, "head")
    assert_quiet(watched, page, page.url)


@needs_browser
def test_model_view_draws_every_layer_and_head_offline(watched: BrowserPage, tmp_path: Path):
    maps = fake_maps(layers=2, heads=3)
    page = open_file(watched, tmp_path, model_view_html(maps, "encoder"), standalone_filename("encoder", "model"))
    assert count(page, "#vis svg line") == 2 * 3 * len(SOURCE) ** 2
    # Clicking a thumbnail enlarges it, with the tokens written out as text.
    page.click(FIRST_THUMBNAIL)
    assert svg_texts(page, "#vis svg text.token") == shown(SOURCE) * 2
    assert page.evaluate("document.documentElement.scrollHeight") <= frame_height(maps, "model", "encoder")
    assert_quiet(watched, page, page.url)


@needs_browser
def test_views_number_from_1_and_the_model_view_fits_its_frame(watched: BrowserPage, tmp_path: Path):
    maps = fake_maps(layers=2, heads=8)
    watched.page.set_viewport_size({"width": 800, "height": 50})  # the app's column at 1280 px is about this wide
    page = open_file(watched, tmp_path, model_view_html(maps, "encoder"), "model.html")
    model_url = page.url
    labels = svg_texts(page)
    assert labels[labels.index("Heads") + 1 : labels.index("Heads") + 9] == [str(head) for head in range(1, 9)]
    assert "0" not in labels
    width = page.evaluate("document.querySelector('#vis svg').getBoundingClientRect().right")
    assert width <= 800, "the last head columns are cut off"
    page.click(FIRST_THUMBNAIL)
    assert "Layer 1, Head 1" in svg_texts(page, "#vis svg text.detail")
    page = open_file(watched, tmp_path, head_view_html(maps), "head.html")
    assert page.eval_on_selector_all("#layer option", "options => options.map(option => option.textContent)") == [
        "1",
        "2",
    ]
    assert_quiet(watched, page, model_url, page.url)


@needs_browser
@pytest.mark.parametrize("view", VIEWS)
def test_view_draws_inside_a_sandboxed_frame_as_streamlit_embeds_it(watched: BrowserPage, view: str):
    document = VIEWS[view](fake_maps(), "cross")
    # components.html puts the page in an iframe's srcdoc with this sandbox.
    watched.page.set_content(
        '<iframe sandbox="allow-forms allow-modals allow-popups allow-same-origin allow-scripts" width="1000" '
        f'height="600" srcdoc="{html.escape(document)}"></iframe>'
    )
    frame = watched.page.frames[1]
    frame.wait_for_selector("#vis svg line", state="attached")
    assert count(frame, "#vis svg line") > 0
    if view == "model":
        frame.click(FIRST_THUMBNAIL)  # its tokens show once a thumbnail is enlarged
    assert HOSTILE in svg_texts(frame)
    assert_quiet(watched, frame)


@needs_browser
@pytest.mark.parametrize("view", VIEWS)
def test_frame_height_fits_every_kind_without_much_blank(watched: BrowserPage, tmp_path: Path, view: str):
    maps = fake_maps(layers=6, heads=8, source=[f"▁s{i}" for i in range(30)], target=[f"▁t{i}" for i in range(12)])
    page = open_file(watched, tmp_path, VIEWS[view](maps), f"{view}.html")
    heights = []
    for option in ("0", "1", "2"):
        page.select_option("#filter", option)
        heights.append(page.evaluate("document.documentElement.scrollHeight"))
    assert max(heights) <= frame_height(maps, view) <= max(heights) + 40
    assert_quiet(watched, page, page.url)
