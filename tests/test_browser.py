"""The app end to end in a real browser: ``streamlit run app.py`` on a free local port, driven by Debian's Chromium.

The page may reach the app's own server and nothing else: every request (WebSockets included) is routed, anything
not addressed to the server or to an inline scheme is refused and recorded, and so are failed requests, console
errors, uncaught page errors and dialogs. Each test ends by checking that all of these records are empty.

The server runs the shipped model ``checkpoints/en-de-small`` when it is there, otherwise the tiny model that the
``trained_checkpoint`` fixture trains. With ``SCREENSHOT_PATH`` set, the screenshot of the translated page is saved
there (``python benchmarks/screenshot.py`` makes the README's ``docs/screenshot.png`` this way).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from benchmarks.app_server import REPOSITORY, serving
from tests.conftest import SHIPPED, needs_browser, served_name, smaller_model
from tests.test_plots_bertviz import shown
from transformer.analysis.attention import merge_tokens, word_groups
from transformer.paper.tokenizer import Tokenizer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Frame, Page, Request, WebSocket

pytestmark = needs_browser

VIEWPORT = {"width": 1400, "height": 1000}
HOSTILE = "</script><img src=x onerror=alert(1)>"
# Schemes that never leave the browser: Streamlit's and plotly's inline images, the bertviz frame's srcdoc.
INLINE_SCHEMES = ("data", "blob", "about")
UNANSWERED_PORT = 9  # the discard port: nothing listens there, so a request sent to it as a proxy goes nowhere
SERVER_START_SECONDS = 60
# The first render imports torch and loads the model in the server; later steps take a second or two.
FIRST_RENDER_MS = 90_000
STEP_MS = 30_000

HEATMAP = ".js-plotly-plot .heatmaplayer image"
BERTVIZ_FRAME = 'iframe[title="st.iframe"]'


# ------------------------------------------------------------------------------------------------ server
# The app's server (``server``, ``server_log``) is conftest's: one per test process for every browser module.
@pytest.fixture(scope="module")
def checkpoint(served_checkpoint: Path) -> Path:
    """The model the app serves: the shipped one when present, otherwise the tiny one."""
    return served_checkpoint


@pytest.fixture(scope="module")
def sentence(checkpoint: Path) -> str:
    # The tiny model only knows the synthetic word list of tests/conftest.py.
    if checkpoint == SHIPPED:
        return "The animal didn't cross the street because it was too tired."
    return "the small cat sees the big dog."


@pytest.fixture(scope="module")
def checkpoint_tokenizer(checkpoint: Path) -> Tokenizer:
    # Not named "tokenizer": that is conftest's tokenizer of the synthetic corpus, which trained_checkpoint uses.
    return Tokenizer.load(checkpoint / "spm.model")


# ------------------------------------------------------------------------------------------------ browser
@dataclass
class Visit:
    """One browser tab on the app, with everything it did that it should not have."""

    page: Page
    blocked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_quiet(self, page_link: str | None = None) -> None:
        """Nothing blocked, failed or logged. Opened by a link to ``page_link``, Streamlit's frontend first looks for
        its server under that path, then at the root: those two probes answer 404 by design and are not counted."""
        failed, errors = self.failed, self.errors
        if page_link is not None:
            probes = re.compile(rf"/{page_link}/_stcore/(health|host-config)\b")
            failed = [failure for failure in failed if not probes.search(failure)]
            errors = [error for error in errors if not (probes.search(error) and "404" in error)]
        assert self.blocked == [], "requests that would have left the machine"
        assert failed == []
        assert errors == []
        assert self.dialogs == []


def offline_context(
    browser: Browser, origin: str, blocked: list[str], viewport: dict[str, int] | None = None
) -> BrowserContext:
    """A context whose pages reach ``origin`` (HTTP and WebSocket) and inline schemes only: every other address goes
    to a proxy that is not there, so nothing leaves the machine, and is appended to ``blocked``. (Watched, not
    intercepted: a route for every request cost a fifth more CPU per visit, and turns the browser's cache off.)"""
    server = urlsplit(origin)
    local = {"127.0.0.1", "localhost", server.hostname}
    context = browser.new_context(
        viewport=viewport or VIEWPORT,
        proxy={"server": f"http://127.0.0.1:{UNANSWERED_PORT}", "bypass": ",".join(sorted(local))},
    )
    context.set_default_timeout(STEP_MS)

    def to_server(url: str, *schemes: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in schemes and (parts.hostname, parts.port) == (server.hostname, server.port)

    def request(request: Request) -> None:
        url = request.url
        if not (urlsplit(url).scheme in INLINE_SCHEMES or to_server(url, "http")):
            blocked.append(url)

    def socket(socket: WebSocket) -> None:
        if not to_server(socket.url, "ws"):
            blocked.append(socket.url)

    context.on("request", request)
    context.on("page", lambda page: page.on("websocket", socket))
    return context


def test_the_offline_context_records_and_refuses_every_address_but_the_apps(browser: Browser, server: str):
    """What the browser tests call offline: a fetch, an image and a WebSocket to another machine are each recorded
    and none of them gets an answer; the app's own address answers."""
    blocked: list[str] = []
    context = offline_context(browser, server, blocked)
    page = context.new_page()
    page.goto(f"{server}/_stcore/health")
    outcome = page.evaluate(
        """async () => {
            const image = new Promise(done => {
                const picture = new Image();
                picture.onload = () => done('loaded');
                picture.onerror = () => done('refused');
                picture.src = 'http://192.0.2.1/pixel.png';
            });
            const fetched = await fetch('http://example.com/').then(() => 'answered', () => 'refused');
            new WebSocket('ws://example.com/stream');
            return [fetched, await image];
        }"""
    )
    page.wait_for_timeout(500)
    assert outcome == ["refused", "refused"]
    assert {"http://example.com/", "http://192.0.2.1/pixel.png", "ws://example.com/stream"} <= set(blocked)
    assert all(urlsplit(server).netloc not in url for url in blocked)
    context.close()


@pytest.fixture(scope="module")
def open_app(browser: Browser, server: str) -> Iterator[Callable[..., Visit]]:
    """Opens the app in a fresh offline context (of the given viewport) and waits for the default sentence's
    heatmap (or what ``ready`` selects)."""
    contexts: list[BrowserContext] = []

    def open_visit(viewport: dict[str, int] | None = None, path: str = "/?kind=encoder", ready: str = HEATMAP) -> Visit:
        blocked: list[str] = []
        context = offline_context(browser, server, blocked, viewport)
        contexts.append(context)
        visit = Visit(context.new_page(), blocked)
        page = visit.page
        page.on("requestfailed", lambda request: visit.failed.append(f"{request.url}: {request.failure}"))
        # The server's own error answers too: a missing script or stylesheet would break the page just as well.
        page.on(
            "response",
            lambda response: response.status >= 400 and visit.failed.append(f"{response.url}: HTTP {response.status}"),
        )
        page.on(
            "console",
            lambda message: (
                message.type == "error" and visit.errors.append(f"{message.text} ({message.location.get('url')})")
            ),
        )
        page.on("pageerror", lambda error: visit.errors.append(f"uncaught: {error}"))
        page.on("dialog", lambda dialog: (visit.dialogs.append(f"{dialog.type}: {dialog.message}"), dialog.dismiss()))
        # By default encoder self-attention, so that both heatmap axes show the typed sentence's pieces (the app
        # would otherwise open on the model's clearest head, which may be a cross-attention head).
        page.goto(f"{server}{path}")
        page.wait_for_selector(ready, state="attached", timeout=FIRST_RENDER_MS)
        return visit

    yield open_visit
    for context in contexts:
        context.close()


# ------------------------------------------------------------------------------------------------ the page
def expected_tokens(tokenizer: Tokenizer, text: str) -> list[str]:
    """The source words the app shows for ``text`` by default (pieces merged into words, </s> shown)."""
    pieces = [*tokenizer.pieces(tokenizer.encode(text)), "</s>"]
    return merge_tokens(pieces, word_groups(pieces))


# What the page shows of the current translation: the translation itself, the "Source tokens" strip, and the
# heatmap of the Heads tab (the page's first plotly chart) with its tick labels and title.
SHOWN_JS = """() => {
    const markdown = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'));
    const strip = markdown.find(element => element.textContent.startsWith('Source tokens'));
    const plot = document.querySelector('.js-plotly-plot');
    const texts = selector => plot ? Array.from(plot.querySelectorAll(selector)).map(t => t.textContent) : [];
    return {
        translation: document.querySelector('[data-testid="stMain"] .translation')?.textContent ?? null,
        strip: strip ? Array.from(strip.querySelectorAll('span')).map(span => span.textContent) : [],
        x: texts('.xtick text'),
        y: texts('.ytick text'),
        title: texts('.gtitle').join(''),
        images: plot ? plot.querySelectorAll('.heatmaplayer image').length : 0,
    };
}"""

# The heatmap's cells as drawn: plotly paints them into one PNG; decode it and count its colours.
CELLS_JS = """async image => {
    const picture = new Image();
    picture.src = image.getAttribute('href');
    await picture.decode();
    const canvas = document.createElement('canvas');
    [canvas.width, canvas.height] = [picture.naturalWidth, picture.naturalHeight];
    const context = canvas.getContext('2d');
    context.drawImage(picture, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    for (let i = 0; i < pixels.length; i += 4) colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
    const box = image.getBBox();
    return {colours: colours.size, width: box.width, height: box.height};
}"""


def translate(visit: Visit, text: str, tokens: list[str]) -> dict:
    """Types ``text``, presses Translate and waits until the run is over and the page shows ``tokens``; returns
    what the page shows (see ``SHOWN_JS``)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    page = visit.page
    page.get_by_label("English sentence").fill(text)
    page.get_by_role("button", name="Translate").click()
    # The script writes the URL last, so a URL holding the text means the run is over.
    page.wait_for_url(lambda url: parse_qs(urlsplit(url).query).get("text") == [text])
    # On a timeout, the assertion below says what the page shows instead.
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_function(
            f"tokens => {{ const shown = ({SHOWN_JS})(); return shown.images > 0 "
            "&& JSON.stringify([shown.strip, shown.x, shown.y]) === JSON.stringify([tokens, tokens, tokens]); }",
            arg=tokens,
        )
    shown = page.evaluate(SHOWN_JS)
    assert [shown["strip"], shown["x"], shown["y"]] == [tokens] * 3
    return shown


# Streamlit marks its app element with the script's state: "notRunning" once a run is over.
IDLE_JS = """() => document.querySelector('[data-testid="stApp"]')
    ?.getAttribute('data-test-script-state') === 'notRunning'"""


def open_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    page.wait_for_selector(f'[role="tab"][aria-selected="true"]:has-text("{name}")')


def bertviz_frame(page: Page) -> Frame:
    """The bertviz frame, once it has drawn its attention lines."""
    open_tab(page, "bertviz")
    frame = page.wait_for_selector(BERTVIZ_FRAME).content_frame()
    assert frame is not None
    frame.wait_for_selector("#vis svg line", state="attached")
    return frame


def texts(frame: Page | Frame, selector: str) -> list[str]:
    return frame.eval_on_selector_all(selector, "elements => elements.map(element => element.textContent)")


def save_screenshot(page: Page, path: Path) -> None:
    """The whole page in one picture: Streamlit scrolls inside its main block, so the viewport grows to the block's
    full height for the shot."""
    main = '[data-testid="stMain"]'
    height = page.eval_on_selector(main, "main => main.scrollHeight")
    page.mouse.move(0, 0)  # no hover label over the heatmap
    page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], height)})
    try:
        page.wait_for_function(
            f"() => {{ const main = document.querySelector('{main}'); return main.scrollHeight <= main.clientHeight; }}"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=path, full_page=True, animations="disabled")
    finally:
        page.set_viewport_size(VIEWPORT)


@dataclass
class Translated:
    visit: Visit
    tokens: list[str]  # the sentence's source pieces, </s> included
    shown: dict  # what translate() found on the page


@pytest.fixture(scope="module")
def translated(open_app: Callable[[], Visit], sentence: str, checkpoint_tokenizer: Tokenizer) -> Translated:
    """One tab in which the test sentence has been typed and translated."""
    visit = open_app()
    tokens = expected_tokens(checkpoint_tokenizer, sentence)
    return Translated(visit, tokens, translate(visit, sentence, tokens))


# ------------------------------------------------------------------------------------------------ tests
def test_typed_sentence_is_translated_with_its_heatmap(translated: Translated, tmp_path: Path):
    page, shown_now = translated.visit.page, translated.shown
    open_tab(page, "Heads")  # in case another test switched tabs: a chart in a hidden tab is drawn without size
    assert shown_now["translation"] not in (None, "", "∅")
    # Encoder self-attention by default: the sentence's pieces along both axes, one image of coloured cells.
    assert shown_now["title"].startswith("Encoder self-attention")
    assert shown_now["images"] == 1
    cells = page.eval_on_selector(HEATMAP, CELLS_JS)
    assert cells["colours"] > 1, "the heatmap is blank"
    assert min(cells["width"], cells["height"]) >= 4 * len(translated.tokens)  # at least 4 px per cell
    save_screenshot(page, Path(os.environ.get("SCREENSHOT_PATH") or tmp_path / "translated.png"))
    translated.visit.assert_quiet()


def test_bertviz_draws_the_sentence_in_its_frame(translated: Translated):
    frame = bertviz_frame(translated.visit.page)
    # The head view opens on encoder self-attention: the source tokens down both sides, lines between them.
    assert texts(frame, "#vis svg text") == shown(translated.tokens) * 2
    assert frame.eval_on_selector_all("#vis svg line, #vis svg path", "elements => elements.length") > 0
    translated.visit.assert_quiet()


def test_hostile_input_is_shown_as_text_and_never_runs(open_app: Callable[[], Visit], checkpoint_tokenizer: Tokenizer):
    visit = open_app()
    page = visit.page
    tokens = expected_tokens(checkpoint_tokenizer, HOSTILE)
    # Shown literally: translate() checks that the token strip and the heatmap's labels show its pieces as text.
    translate(visit, HOSTILE, tokens)
    assert page.get_by_label("English sentence").input_value() == HOSTILE
    frame = bertviz_frame(page)
    assert texts(frame, "#vis svg text") == shown(tokens) * 2
    for each in page.frames:  # the page itself and the bertviz frame
        assert each.locator('img[src="x"]').count() == 0, each.url
    assert visit.dialogs == []
    visit.assert_quiet()


# The first heatmap's margins as its figure asked for them and as plotly.js drew them, and how far its tick labels
# reach past the chart's left and bottom edges (positive: cut).
MARGINS_JS = """() => {
    const plot = document.querySelector('.js-plotly-plot');
    const svg = plot.querySelector('.main-svg').getBoundingClientRect();
    const boxes = selector => Array.from(plot.querySelectorAll(selector)).map(t => t.getBoundingClientRect());
    return {
        asked: [plot.layout.margin.l, plot.layout.margin.b],
        drawn: [plot._fullLayout._size.l, plot._fullLayout._size.b],
        past_left: Math.max(...boxes('.ytick text').map(box => svg.left - box.left)),
        past_bottom: Math.max(...boxes('.xtick text').map(box => box.bottom - svg.bottom)),
    };
}"""


def test_heatmap_margins_fit_its_labels_without_a_second_drawing(
    open_app: Callable[[], Visit], checkpoint_tokenizer: Tokenizer
):
    # Wide and narrow letters, accents, typographic quotes and characters the model spells in bytes: plotly.js draws
    # the chart a second time when its labels need more room than the figure asked for, so the estimate must fit.
    visit = open_app()
    for text in ("Mummy, WOW: «Ärzte» in Zürich — 日本!", "I will."):
        translate(visit, text, expected_tokens(checkpoint_tokenizer, text))
        margins = visit.page.evaluate(MARGINS_JS)
        assert margins["drawn"] == margins["asked"], f"the labels pushed the margins out: {margins}"
        assert margins["past_left"] <= 0.5 and margins["past_bottom"] <= 0.5, f"cut labels: {margins}"
    visit.assert_quiet()


def test_sidebar_names_the_pages_and_the_paper_figures_page_draws_offline(open_app: Callable[[], Visit]):
    visit = open_app()
    page = visit.page
    links = texts(page, '[data-testid="stSidebarNav"] a')
    names = [
        "Translate and explore",
        "Lessons",
        "Attention, step by step",
        "Paper figures",
        "Head discovery",
        "Head atlas",
        "What if",
        "Positional encoding",
        "Train a tiny model",
        "Why self-attention",
        "Model and training",
    ]
    assert len(links) == len(names) and all(link.endswith(name) for link, name in zip(links, names, strict=True))
    page.get_by_role("link", name="Paper figures").click()
    page.wait_for_selector("text=Figure 3 — Long-distance dependency", timeout=FIRST_RENDER_MS)
    # Figure 3's lines from "making": plotly draws each line trace as an SVG path.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some(plot => "
        "plot.querySelector('.gtitle')?.textContent.startsWith('Figure 3') && "
        "plot.querySelectorAll('.scatterlayer path.js-line').length > 0)",
        timeout=FIRST_RENDER_MS,
    )
    visit.assert_quiet()


@contextlib.contextmanager
def fresh_server_page(browser: Browser, checkpoint: Path, tmp_path: Path) -> Iterator[tuple[Page, str]]:
    """A server of its own, just started (its first visit still to come), and an offline page; nothing the page
    asked for may have left the machine."""
    with serving(served_name(checkpoint), tmp_path / "server.log") as (origin, _):
        blocked: list[str] = []
        context = offline_context(browser, origin, blocked, None)
        try:
            yield context.new_page(), origin
        finally:
            context.close()
    assert not blocked


def test_a_link_to_a_page_opens_it_under_the_apps_own_navigation(browser: Browser, checkpoint: Path, tmp_path: Path):
    """A shared link as a fresh server's very first request: the linked page with the app's sidebar, not
    Streamlit's listing of every module in pages/."""
    with fresh_server_page(browser, checkpoint, tmp_path) as (page, origin):
        page.goto(f"{origin}/step_by_step?steps_kind=decoder&steps_step=5")
        page.wait_for_selector("text=Step 5 of 11: Masked", timeout=FIRST_RENDER_MS)
        links = texts(page, '[data-testid="stSidebarNav"] a')
        assert any(link.endswith("Attention, step by step") for link in links), links
        assert not any(link.strip() in ("url state", "common", "app") for link in links), links
        assert parse_qs(urlsplit(page.url).query).get("steps_kind") == ["decoder"]


# Every sentence box the page shows, in order, with what it held while it was there: [disabled, value].
BOXES_SEEN_JS = """() => {
    const boxes = [];
    window.boxesSeen = [];
    setInterval(() => {
        for (const box of document.querySelectorAll('textarea')) {
            if (!boxes.includes(box)) { boxes.push(box); window.boxesSeen.push([box.disabled, '']); }
        }
        boxes.forEach((box, i) => { if (box.isConnected && box.value) window.boxesSeen[i][1] = box.value; });
    }, 20);
}"""


def test_a_fresh_servers_first_visitor_sees_the_sentence_box_while_the_model_code_loads(
    browser: Browser, checkpoint: Path, tmp_path: Path
):
    """The server's first visit: the title and the visitor's sentence (read-only) are drawn before torch and the model
    code are imported, then the page's own box takes their place with the same sentence."""
    sentence = "A link's own sentence for the first visitor."
    with fresh_server_page(browser, checkpoint, tmp_path) as (page, origin):
        page.add_init_script(f"({BOXES_SEEN_JS})()")
        page.goto(f"{origin}/?text={quote(sentence)}")
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=FIRST_RENDER_MS)
        seen = page.evaluate("window.boxesSeen")
        assert seen[0] == [True, sentence], seen  # the first paint: read-only, the link's sentence
        assert seen[-1] == [False, sentence], seen  # the page's own box
        assert page.locator("textarea").count() == 1 and page.locator("h1").count() == 1


# Every text a visitor reads on the page: the page's own and the charts' (ticks, titles, annotations, legends);
# not code, where a guide names the marker the pieces switch would show.
PAGE_TEXTS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] *')]
    .filter(element => element.childElementCount === 0 && element.checkVisibility() && !element.closest('code'))
    .map(element => element.textContent.trim()).filter(Boolean)"""


@pytest.mark.parametrize(
    "path",
    [
        "/?kind=cross",
        "/step_by_step?steps_tab=decoding",
        "/step_by_step?steps_kind=decoder",
        "/what_if?wi_tab=beam",
        "/why_self_attention",
        "/?view=Attribution",
    ],
)
def test_words_not_sentencepiece_markers_are_what_a_visitor_reads(open_app: Callable[..., Visit], path: str):
    """A first-time visitor reads words, or pieces without SentencePiece's ▁ (a teacher would explain it first):
    on the main page (words), the step page, What if's beam tree and Why self-attention."""
    visit = open_app(path=path, ready='[data-testid="stMain"] .js-plotly-plot')
    robot_visitor().settle(visit.page)
    texts = visit.page.evaluate(PAGE_TEXTS_JS)
    assert texts and not [text for text in texts if "▁" in text]
    visit.assert_quiet(urlsplit(path).path.strip("/") or None)


# The chips of every multiselect and whether each is drawn whole inside its box.
CHIPS_JS = """() => [...document.querySelectorAll('[data-testid="stMultiSelect"]')].map(select => {
    const box = select.getBoundingClientRect();
    return [...select.querySelectorAll('[data-tag]')].map(tag => {
        const chip = tag.getBoundingClientRect();
        const inside = chip.left >= box.left - 1 && chip.right <= box.right + 1;
        return [tag.textContent.trim(), inside && tag.scrollWidth <= tag.clientWidth + 1];
    });
})"""


def test_paper_figures_show_every_chosen_head_whole_and_count_layers_from_one(open_app: Callable[..., Visit]):
    every_head = "/paper_figures?v=2&fig3_heads=1,2,3,4,5,6,7,8"
    visit = open_app(path=every_head, ready='[data-testid="stMain"] .js-plotly-plot')
    page = visit.page
    robot_visitor().settle(page)
    chips = page.evaluate(CHIPS_JS)
    figure_3 = chips[0]
    assert [text for text, _ in figure_3] == [str(head) for head in range(1, 9)]  # every head chosen, 1 to 8
    assert all(whole for _, whole in figure_3), figure_3  # none cut off at the box's edge
    # Layers are counted from 1 as on every page: no choice of numbering, and the paper's layer is the 5th.
    assert page.get_by_text("Count layers and heads from").count() == 0
    layers = page.locator('[data-testid="stSelectbox"]').filter(has_text="Encoder layer")
    shown = layers.evaluate("box => [box.innerText, ...[...box.querySelectorAll('input')].map(i => i.value)].join(' ')")
    assert "layer 5 (the paper's layer)" in shown
    visit.assert_quiet("paper_figures")


def test_the_alignment_says_how_often_its_marks_are_right(open_app: Callable[..., Visit], checkpoint: Path):
    visit = open_app(path="/?view=Alignment", ready='[data-testid="stMain"] .js-plotly-plot')
    robot_visitor().settle(visit.page)
    measured = (checkpoint / "omissions.json").is_file()
    expected = "How often a mark is right, measured for this model" if measured else "has not been measured"
    assert visit.page.get_by_text(expected).count() == 1
    visit.assert_quiet()


def test_the_classroom_page_walks_through_a_head(open_app: Callable[..., Visit], tmp_path: Path):
    """Attention, step by step: the softmax step of a cross-attention head, its equation typeset, its weights drawn.
    With ``CLASSROOM_SCREENSHOT_PATH`` set, the page's picture is saved there (the README's second screenshot)."""
    visit = open_app(path="/step_by_step?steps_kind=cross&steps_layer=4&steps_head=5&steps_query=3&steps_step=6")
    page = visit.page
    page.wait_for_selector("text=Step 6 of 11: Softmax", timeout=STEP_MS)
    assert page.locator(".katex").count() >= 1 and page.locator(".katex-error").count() == 0
    cells = page.eval_on_selector(HEATMAP, CELLS_JS)
    assert cells["colours"] > 1, "the weights are blank"
    page.get_by_role("button", name="Next →").click()
    page.wait_for_selector("text=Step 7 of 11: Weighted values", timeout=STEP_MS)
    page.get_by_role("button", name="← Previous").click()
    page.wait_for_selector("text=Step 6 of 11: Softmax", timeout=STEP_MS)
    page.wait_for_selector(HEATMAP, state="attached", timeout=STEP_MS)
    save_screenshot(page, Path(os.environ.get("CLASSROOM_SCREENSHOT_PATH") or tmp_path / "classroom.png"))
    visit.assert_quiet(page_link="step_by_step")


def test_the_what_if_page_draws_the_beam_search_tree(open_app: Callable[..., Visit], tmp_path: Path):
    """What if, Beam search tab: the search tree drawn (its nodes as plotly markers), the n-best list shown; and the
    ablation tab marks what switching every cross-attention head off changed. With ``WHATIF_SCREENSHOT_PATH`` set,
    the beam tab's picture is saved there."""
    visit = open_app(path="/what_if?wi_tab=beam&wi_text=The%20children%20are%20playing%20in%20the%20park.")
    page = visit.page
    page.wait_for_selector("text=Beam search tree", timeout=STEP_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some(plot => "
        "plot.querySelector('.gtitle')?.textContent === 'Beam search tree' && "
        "plot.querySelectorAll('.scatterlayer .point').length > 3)",
        timeout=STEP_MS,
    )
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1  # the n-best list
    save_screenshot(page, Path(os.environ.get("WHATIF_SCREENSHOT_PATH") or tmp_path / "whatif.png"))
    page.get_by_role("tab", name="Switch heads off").click()
    # The tab's own run over first (its intact translation shown, the script idle): a click while it still runs
    # could land on a button that run is about to draw again.
    page.wait_for_selector("text=With 0 heads off", timeout=STEP_MS)
    page.wait_for_function(IDLE_JS, timeout=STEP_MS)
    page.get_by_role("button", name="Cross", exact=True).click()
    page.wait_for_selector("text=/With [1-9][0-9]* heads off/", timeout=STEP_MS)
    visit.assert_quiet(page_link="what_if")


HANGUL_RENDERS_JS = """() => {
    const context = document.createElement('canvas').getContext('2d');
    context.font = '20px sans-serif';
    // Without a font that has Hangul, every syllable is drawn as the same missing-glyph box.
    const width = text => context.measureText(text).width;
    return width('가가가') !== width('\\u0378\\u0378\\u0378') && width('한') > 10;
}"""


def test_the_classroom_page_in_korean(open_app: Callable[..., Visit], tmp_path: Path):
    """The step page with ``lang=ko``: Korean labels, drawn with real Hangul glyphs (Debian's fonts-noto-cjk).
    With ``KOREAN_SCREENSHOT_PATH`` set, the picture is saved there."""
    visit = open_app(path="/step_by_step?lang=ko&steps_kind=cross&steps_step=6")
    page = visit.page
    page.wait_for_selector("text=11단계 중 6단계", timeout=STEP_MS)
    links = texts(page, '[data-testid="stSidebarNav"] a')
    assert any(link.endswith("번역하고 살펴보기") for link in links), links
    assert page.evaluate(HANGUL_RENDERS_JS), "no font with Hangul: install fonts-noto-cjk"
    save_screenshot(page, Path(os.environ.get("KOREAN_SCREENSHOT_PATH") or tmp_path / "classroom-ko.png"))
    visit.assert_quiet(page_link="step_by_step")


# ------------------------------------------------------------------------------------------------ layout
BOXES_JS = """() => {
    const box = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const plot = document.querySelector('.js-plotly-plot');
    return {
        plot: box(plot),
        svg: box(plot.querySelector('svg.main-svg')),
        title: box(plot.querySelector('.gtitle')),
        modebar: box(plot.querySelector('.modebar-container .modebar') ?? plot.querySelector('.modebar-container')),
        yticks: Array.from(plot.querySelectorAll('.ytick text')).map(box),
        translation: box(document.querySelector('[data-testid="stMain"] .translation')),
    };
}"""


def overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_first_screen_shows_the_translation_and_a_chart(open_app: Callable[..., Visit]):
    visit = open_app({"width": 1280, "height": 800})
    visit.page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] .translation')?.textContent")
    boxes = visit.page.evaluate(BOXES_JS)
    assert boxes["translation"][3] < 800, "the translation is below the fold"
    assert boxes["plot"][1] < 800 - 150, "the first chart starts below the fold"
    visit.assert_quiet()


def test_phone_layout_keeps_titles_and_labels_readable(open_app: Callable[..., Visit]):
    visit = open_app({"width": 390, "height": 844})
    page = visit.page
    page.hover(".js-plotly-plot")  # the toolbar shows on hover (a tap on a phone)
    boxes = page.evaluate(BOXES_JS)
    assert not overlap(boxes["title"], boxes["modebar"]), "the chart's toolbar covers its title"
    assert boxes["yticks"] and all(tick[0] >= boxes["svg"][0] - 0.5 for tick in boxes["yticks"]), "cut labels"
    assert boxes["plot"][1] < 1200, "too much scrolling before the first chart"
    visit.assert_quiet()


def test_positional_encoding_formulas_render_without_katex_errors(open_app: Callable[..., Visit]):
    visit = open_app()
    page = visit.page
    page.get_by_role("link", name="Positional encoding").click()
    page.wait_for_selector(".katex", state="attached", timeout=FIRST_RENDER_MS)
    page.wait_for_selector("text=The encoding table", timeout=FIRST_RENDER_MS)
    # Each formula is typeset as it is drawn: the second may come a moment after the first.
    page.wait_for_function("() => document.querySelectorAll('.katex').length >= 2", timeout=FIRST_RENDER_MS)
    assert page.locator(".katex").count() >= 2
    # KaTeX draws what it cannot parse (an undefined command such as "\\qquadPE") in its error colour.
    errors = page.locator('.katex-error, .katex [mathcolor="#cc0000"], .katex [style*="#cc0000"]')
    assert errors.count() == 0, texts(page, '.katex [mathcolor="#cc0000"]')
    visit.assert_quiet()


# ------------------------------------------------------------------------------------------------ coming back
@functools.cache
def robot_visitor():
    """``benchmarks/robot_visitor.py`` as a module: its journeys, and its reading of every control on a page."""
    spec = importlib.util.spec_from_file_location("robot_visitor", REPOSITORY / "benchmarks" / "robot_visitor.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def controls(page: Page) -> dict[str, object]:
    """Every keyed control on the page with the value it shows (the robot visitor's reading)."""
    robot = robot_visitor()
    robot.settle(page)
    return robot.values(page.evaluate(robot.CONTROLS_JS))


def go_to(page: Page, name: str) -> None:
    page.get_by_role("link", name=name).click()
    robot_visitor().settle(page)


def problems(page: Page) -> list[str]:
    return page.evaluate(robot_visitor().PROBLEMS_JS)


def test_coming_back_to_a_page_keeps_its_choices_and_never_crashes(open_app: Callable[..., Visit]):
    """Leave a page for another and come back, twice round every page: no error page (Streamlit drops the widget
    state of a page that is not drawn: the main page's second visit failed with KeyError 'beam'), and the choices
    made on each page are still there."""
    visit = open_app()
    page = visit.page
    page.locator(".st-key-beam input[type=range]").focus()
    page.keyboard.press("ArrowRight")  # beam 4 → 5
    page.wait_for_function("() => document.querySelector('.st-key-beam input').getAttribute('aria-valuetext') == '5'")
    chosen = controls(page)
    assert chosen["beam"] == "5"
    go_to(page, "Head discovery")
    page.locator(".st-key-heads_source__en [data-testid=stRadioOption]").nth(1).click()  # one sentence
    robot_visitor().settle(page)
    box = page.locator(".st-key-heads_sentence input")
    box.fill("My brother lives in Berlin.")
    box.press("Enter")
    heads = controls(page)
    assert heads["heads_sentence"] == "My brother lives in Berlin."
    for _ in range(2):
        for name in (
            "Attention, step by step",
            "What if",
            "Translate and explore",
            "Paper figures",
            "Head discovery",
            "Positional encoding",
            "Model and training",
            "Translate and explore",
        ):
            go_to(page, name)
            assert problems(page) == [], name
        assert {key: controls(page)[key] for key in chosen} == chosen
        go_to(page, "Head discovery")
        assert {key: controls(page)[key] for key in heads} == heads
    visit.assert_quiet()


def test_choices_on_a_tab_hold_while_other_tabs_are_used(open_app: Callable[..., Visit]):
    """Heads → encoder self-attention, layer 2, head 8 → Model view (its attention kind changed) → Token focus →
    Heads: still layer 2, head 8, and the URL named them all along."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    page.locator(".st-key-kind__en [data-testid=stRadioOption]").nth(0).click()  # encoder self-attention
    robot.settle(page)
    for key, option in (("layer__en", "2"), ("head__en", "8")):
        page.locator(f".st-key-{key} button[aria-haspopup=listbox]").click()
        page.get_by_role("option", name=option, exact=True).click()
        robot.settle(page)
    heads = controls(page)
    assert (heads["layer__en"], heads["head__en"]) == ("2", "8")
    open_tab(page, "Model view")
    page.locator(".st-key-grid_kind__en [data-testid=stRadioOption]").nth(2).click()  # cross-attention
    robot.settle(page)
    grid = controls(page)
    in_url = parse_qs(urlsplit(page.url).query)
    assert (in_url.get("kind"), in_url.get("layer"), in_url.get("head")) == (["encoder"], ["2"], ["8"])
    open_tab(page, "Token focus")
    robot.settle(page)
    open_tab(page, "Model view")
    assert {key: controls(page)[key] for key in ("grid_kind__en", "grid_layer__en", "grid_head__en")} == {
        key: grid[key] for key in ("grid_kind__en", "grid_layer__en", "grid_head__en")
    }
    open_tab(page, "Heads")
    assert {key: controls(page)[key] for key in ("kind__en", "layer__en", "head__en")} == {
        key: heads[key] for key in ("kind__en", "layer__en", "head__en")
    }
    visit.assert_quiet()


def test_alignment_and_attribution_choices_hold_across_tabs_and_pages(open_app: Callable[..., Visit]):
    """Alignment: layer 1 and one direction only; Attribution: input × gradient → Heads tab → another page → back:
    every choice is still shown, and the URL names them."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    open_tab(page, "Alignment")
    robot.settle(page)
    page.locator(".st-key-align_layer__en button[aria-haspopup=listbox]").click()
    page.get_by_role("option", name="1", exact=True).click()
    robot.settle(page)
    page.locator(".st-key-align_both label").click()
    robot.settle(page)
    aligned = {key: controls(page)[key] for key in ("align_layer__en", "align_both")}
    assert aligned == {"align_layer__en": "1", "align_both": False}
    open_tab(page, "Attribution")
    robot.settle(page)
    page.locator(".st-key-attr_method__en [data-testid=stRadioOption]").nth(1).click()  # input × gradient
    robot.settle(page)
    open_tab(page, "Heads")
    go_to(page, "Positional encoding")
    go_to(page, "Translate and explore")
    open_tab(page, "Attribution")
    assert controls(page)["attr_method__en"] == "input × gradient"
    open_tab(page, "Alignment")
    assert {key: controls(page)[key] for key in aligned} == aligned
    in_url = parse_qs(urlsplit(page.url).query)
    assert (in_url["align_layer"], in_url["align_both"], in_url["attr_method"]) == (["1"], ["0"], ["input_x_gradient"])
    visit.assert_quiet()


def test_a_link_keeps_a_sentence_with_invisible_and_right_to_left_characters(open_app: Callable[..., Visit]):
    """A sentence with a right-to-left override travels in the link exactly as typed (the link used to drop it)."""
    visit = open_app(path="/head_discovery?heads_source=one+sentence")
    page = visit.page
    typed = "Bidi \u202eright\u202c and zero\u200bwidth."
    box = page.locator(".st-key-heads_sentence input")
    box.fill(typed)
    box.press("Enter")
    robot_visitor().settle(page)
    assert parse_qs(urlsplit(page.url).query)["heads_sentence"] == [typed]
    visit.assert_quiet(page_link="head_discovery")


ROBOT_ACTIONS = 40  # the benchmark walks 300 and more


def test_a_robot_visitor_meets_no_error_and_loses_no_choice(browser: Browser, server: str, server_log: Path):
    """A seeded random journey of 40 actions over every page, tab and control (benchmarks/robot_visitor.py, which
    walks 300–2,000 for docs/reliability.md): no error shown, no traceback in the server's log, no choice lost on coming
    back, and every link it opens in a fresh browser reproduces the view."""
    robot = robot_visitor()
    pages = sorted(set(robot.PAGES.values()))
    journey = robot.walk(server, actions=ROBOT_ACTIONS, seed=11, pages=pages, log=server_log, browser=browser)
    assert journey.count == ROBOT_ACTIONS
    report = [f"{v.what} after action {v.action}: {v.detail}\n  " + "\n  ".join(v.trail) for v in journey.violations]
    assert journey.violations == [], "\n".join(report)


def test_cross_attention_rows_are_labelled_by_the_word_they_write(open_app: Callable[..., Visit]):
    """By default a cross-attention row is labelled with the token its position writes ("→Die" first), so the row
    of "Die" is the one that lights up "The"; the chart says how to read it. Rows labelled by the token read looked
    shifted by one word. With words merged, each row is one whole output word."""
    visit = open_app(path="/?kind=cross&layer=1&head=1&merge=1")
    page = visit.page
    page.wait_for_selector("text=decoder position writes")
    translation = page.evaluate(SHOWN_JS)["translation"]
    rows = page.evaluate(
        "() => [...document.querySelector('.js-plotly-plot').querySelectorAll('.ytick text')].map(t => t.textContent)"
    )
    assert rows[0] == "→" + translation.split()[0]
    assert rows[-1] == "→</s>"
    words = [row.removeprefix("→") for row in rows[:-1]]
    assert all(word and " " not in word for word in words), words  # no piece of one word joined to the next
    visit.assert_quiet()


def test_presenter_mode_is_readable_from_the_back_of_a_room(open_app: Callable[..., Visit]):
    """Presenter mode at 1920 × 1080: the heatmap's token labels at least 20 px (they stayed at 12 px while the
    colour bar grew), and the chart starts on the first screen with room to show its first rows."""
    visit = open_app({"width": 1920, "height": 1080}, path="/?kind=encoder&present=1")
    page = visit.page
    robot_visitor().settle(page)
    shown = page.evaluate("""() => {
        const plot = document.querySelector('.js-plotly-plot');
        const sizes = [...plot.querySelectorAll('.xtick text, .ytick text')]
            .map(label => parseFloat(getComputedStyle(label).fontSize));
        return {sizes, top: plot.querySelector('.heatmaplayer image').getBoundingClientRect().top};
    }""")
    assert shown["sizes"] and min(shown["sizes"]) >= 20, shown["sizes"]
    assert shown["top"] < 1080 - 250, "the heatmap starts too low for the first screen"
    visit.assert_quiet()


CHART_BOXES_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(plot => {
    const box = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return {
        svg: box(plot.querySelector('svg.main-svg')),
        titles: [...plot.querySelectorAll('.gtitle, .annotation-text')].map(t => [t.textContent, box(t)]),
        cells: [...plot.querySelectorAll('.heatmaplayer image')].map(image => box(image)[2] - box(image)[0]),
    };
})"""


@pytest.mark.parametrize(
    "path",
    [
        "/step_by_step?steps_tab=scaling",
        "/what_if?wi_tab=rollout&wi_flow=1",
        "/what_if?wi_tab=importance",
    ],
)
def test_figures_at_1280_px_keep_their_titles_and_room_to_read(open_app: Callable[..., Visit], path: str):
    """At 1280 × 800 every chart's titles lie inside the chart (the √d_k panel's was cut to '…against d_'), and
    every heatmap is at least 200 px wide (rollout, flow and head importance were drawn 80–160 px wide)."""
    visit = open_app({"width": 1280, "height": 800}, path=path, ready=".js-plotly-plot")
    page = visit.page
    robot_visitor().settle(page)
    charts = page.evaluate(CHART_BOXES_JS)
    assert charts
    for chart in charts:
        left, _, right, _ = chart["svg"]
        for text, (text_left, _, text_right, _) in chart["titles"]:
            assert left - 1 <= text_left and text_right <= right + 1, f"cut title {text!r}"
        assert all(width >= 200 for width in chart["cells"]), chart["cells"]
    visit.assert_quiet(page_link=path.split("?")[0].strip("/"))


def test_switching_the_language_keeps_every_choice_shown(open_app: Callable[..., Visit]):
    """After the sidebar's language changes to Korean, every radio still shows its choice (the search radio, kept
    outside the page's declared controls, showed none: its widget is redrawn with new labels)."""
    visit = open_app()
    page = visit.page
    before = controls(page)
    box = page.locator(".st-key-lang input[role=combobox]")
    box.click()
    box.fill("한국")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=번역하고 살펴보기")
    after = controls(page)
    assert after["lang"] == "한국어"
    radios = [key for key, value in before.items() if key in after and isinstance(value, str) and value]
    assert radios and all(after[key] for key in radios), {key: after[key] for key in radios}
    visit.assert_quiet()


GRID_TICK_JS = """([chart, tick]) => {
    const plot = document.querySelectorAll('.js-plotly-plot')[chart];
    const label = [...plot.querySelectorAll('.xtick text, .ytick text')].find(t => t.textContent === tick);
    label.scrollIntoView({block: 'center', inline: 'center'});
    const box = label.getBoundingClientRect();
    return [box.x + box.width / 2, box.y + box.height / 2];
}"""


def test_clicking_a_tile_of_the_layers_by_heads_grid_opens_that_head(open_app: Callable[..., Visit]):
    """Model view: a click on the tile of layer 3, head 4 (off its centre) opens that head below, names it in the
    URL and outlines it; after another head is picked, a click on the first tile opens it again. The grid used to
    be a picture only (plotly reports no clicks on a heatmap)."""
    visit = open_app(path="/?view=Model+view&grid_kind=encoder&grid_layer=1&grid_head=1", ready=HEATMAP)
    page = visit.page
    robot = robot_visitor()

    def click_tile(layer: int, head: int) -> None:
        x, _ = page.evaluate(GRID_TICK_JS, [0, f"H{head}"])  # (scrolling up and down leaves x as it is)
        _, y = page.evaluate(GRID_TICK_JS, [0, f"L{layer}"])
        page.mouse.click(x + 12, y - 15)  # inside the tile, not on its centre
        page.wait_for_url(
            lambda url: (
                parse_qs(urlsplit(url).query).get("grid_layer") == [str(layer)]
                and parse_qs(urlsplit(url).query).get("grid_head") == [str(head)]
            )
        )
        robot.settle(page)

    click_tile(3, 4)
    shown = controls(page)
    assert (shown["grid_layer__en"], shown["grid_head__en"]) == ("3", "4")
    title = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[1].querySelector('.gtitle').textContent")
    assert "layer 3, head 4" in title
    outlines = page.evaluate(
        "() => document.querySelectorAll('.js-plotly-plot')[0].querySelectorAll('.shapelayer path').length"
    )
    assert outlines == 1
    opener = page.locator(".st-key-grid_head__en button[aria-haspopup=listbox]")
    opener.scroll_into_view_if_needed()  # a list opened while the page still scrolls closes again
    opener.click()
    page.get_by_role("option", name="2", exact=True).click()
    robot.settle(page)
    click_tile(3, 4)
    assert (controls(page)["grid_layer__en"], controls(page)["grid_head__en"]) == ("3", "4")
    visit.assert_quiet()


def translate_then_open(page: Page, sentence: str, tab: str) -> None:
    """Type a sentence into the main page's box, translate it, and open one of the page's tabs."""
    page.locator(".st-key-text textarea").fill(sentence)
    page.get_by_role("button", name="Translate", exact=True).click()
    robot_visitor().settle(page)
    open_tab(page, tab)
    robot_visitor().settle(page)


def test_the_sentence_follows_the_visitor_from_page_to_page(open_app: Callable[..., Visit]):
    """A long sentence translated, a tab opened, another page from the sidebar: the sentence comes along (What if
    used to open on the default sentence); one typed there comes back to the other pages in turn."""
    visit = open_app()
    page = visit.page
    first = "The old man who lives near the river sold his small boat to a young fisherman last summer."
    translate_then_open(page, first, "Alignment")
    go_to(page, "What if")
    assert controls(page)["wi_text"] == first
    second = "My sister reads a book in the garden."
    box = page.locator(".st-key-wi_text input")
    box.fill(second)
    box.press("Enter")
    robot_visitor().settle(page)
    go_to(page, "Attention, step by step")
    assert controls(page)["steps_text"] == second
    go_to(page, "Translate and explore")
    assert controls(page)["text"] == second
    assert problems(page) == []
    visit.assert_quiet()


def test_the_word_pair_tab_answers_which_heads_link_two_words(open_app: Callable[..., Visit]):
    """A researcher's question on their own sentence, in the browser: which heads link "it" to "animal"? The ranking
    is drawn, the strongest head below it with its atlas card, and the choice survives a reload."""
    visit = open_app()
    page = visit.page
    robot = robot_visitor()
    translate_then_open(page, "The animal didn't cross the street because it was too tired.", "Word pair")
    for key, word in (("pair_first__en", "it"), ("pair_second__en", "animal")):
        page.locator(f".st-key-{key} button[aria-haspopup=listbox]").click()
        page.get_by_role("option", name=re.compile(rf"^sentence, word \d+: {word}$")).click()
        robot.settle(page)
    title = page.locator(".st-key-pair .gtitle").text_content()
    assert title == "Heads linking “it” and “animal”", title
    assert page.locator(".st-key-pair .bars path").count() == 12  # the twelve strongest of 6 × 8 encoder heads
    assert page.locator(".st-key-pair_head_atlas button").count() == 1
    query = parse_qs(urlsplit(page.url).query)
    page.reload()
    robot.settle(page)
    assert parse_qs(urlsplit(page.url).query)["pair_first"] == query["pair_first"]
    assert page.locator(".st-key-pair .gtitle").text_content() == title
    assert problems(page) == []
    visit.assert_quiet()


def test_side_by_side_with_a_model_of_another_shape_shows_both_in_chromium(
    browser: Browser, checkpoint: Path, tmp_path: Path
):
    """A two-layer model beside the shipped six-layer one: both translations and both maps, and a layer picker that
    offers only the layers both have (it used to end at "The second checkpoint has no such layer or head.")."""
    small = smaller_model(checkpoint, tmp_path / "small", layers=2, heads=4)
    environment = {**os.environ, "TRANSFORMER_MODELS": str(small)}
    with serving(served_name(checkpoint), tmp_path / "server.log", environment=environment) as (origin, _):
        blocked: list[str] = []
        context = offline_context(browser, origin, blocked)
        try:
            page = context.new_page()
            page.goto(f"{origin}/what_if?v=2&wi_tab=compare&wi_mode=checkpoints&wi_other={small}&wi_compare_layer=5")
            robot_visitor().settle(page, FIRST_RENDER_MS)
            assert problems(page) == []
            text = page.locator("[data-testid=stMain]").inner_text()
            assert "no such layer or head" not in text and "differ in shape" in text
            assert page.locator(HEATMAP).count() >= 2  # a map on each side
            page.locator(".st-key-wi_compare_layer button[aria-haspopup=listbox]").click()
            assert page.get_by_role("option").all_inner_texts() == ["1", "2"]
        finally:
            context.close()
    assert not blocked


def test_paper_figures_say_in_the_browser_where_the_model_falls_short(open_app: Callable[..., Visit]):
    """On Paper figures at the paper's layer: where the model has fewer than the paper's 3 heads there, the page says
    so with the layer where it does it most, and the button opens that layer."""
    visit = open_app(path="/paper_figures", ready=".js-plotly-plot")
    page = visit.page
    robot_visitor().settle(page)
    notes = page.locator("[data-testid=stAlert]").filter(has_text="Short of the paper")
    shown = page.locator("[data-testid=stMetric]").filter(has_text="Heads of layer").first.inner_text()
    count = int(re.search(r"(\d+) of \d+", shown).group(1))
    assert (notes.count() == 1) == (count < 3), shown
    jump = page.locator(".st-key-fig_go_to_best button")
    if jump.count():
        layer = re.search(r"(\d+)", jump.inner_text()).group(1)
        jump.click()
        robot_visitor().settle(page)
        assert parse_qs(urlsplit(page.url).query)["fig_layer"] == [layer]
    assert problems(page) == []
    visit.assert_quiet("paper_figures")
