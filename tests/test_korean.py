"""Korean everywhere: every page and every tab opened with ``lang=ko`` in Chromium shows no English sentence.

For each page (and each tab of the pages that have tabs) the test reads what a visitor sees at 1280 × 800: the
text of the main block and the sidebar, and the charts' titles, axis titles, annotations and legends. What
legitimately stays Latin is left out first: the typed sentence, its translations and token pieces (the model's data,
not the interface: inputs, code and monospace text, the translation line), formulas, and names (BLEU, bertviz,
newstest2013, …). What remains may hold (a) no English message of the catalogue (``en.json``) whose Korean differs,
(b) no run of ordinary lowercase English words and (c) no other Latin word ("English 문장", "float32 search").
And no chart title may run out of its chart at that width.

Checks without the browser ride along: every catalogue message renders its Markdown (``**bold**`` before a Korean
particle after a code span stayed literal asterisks); the Korean model card reports the recorded scores; language
names, decoding options and samples, which the library writes in English, reach the pages in Korean.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable

import pytest
import sentencepiece as spm
from markdown_it import MarkdownIt

from tests.conftest import needs_browser
from tests.test_browser import checkpoint, open_app, robot_visitor  # noqa: F401 (fixtures)
from transformer.analysis.figures import FIGURES
from transformer.analysis.input_check import COMMON_WORDS, looks_like, not_source_reasons
from transformer.features.i18n import LANGUAGES, catalogue
from transformer.formats.checkpoint import DEFAULT_CHECKPOINT_NAME, META_FILE, REPOSITORY_CHECKPOINTS, read_json

PAGES = [
    *(f"/?view={view}" for view in ("Heads", "Model+view", "Token+focus", "Alignment", "Attribution", "Logit+lens")),
    "/?view=bertviz",
    *(f"/step_by_step?steps_tab={tab}" for tab in ("steps", "scaling", "multihead", "decoding")),
    "/paper_figures",
    "/head_discovery",
    "/head_atlas",
    *(f"/what_if?wi_tab={tab}" for tab in ("ablate", "importance", "rollout", "beam", "forced", "compare")),
    "/lessons",
    "/step_by_step?lesson=paper_tour&lesson_step=4&steps_tab=scaling&steps_dk=512",  # under the lesson's bar
    "/positional_encoding",
    "/toy_model",
    "/why_self_attention",
    "/model_and_training",
]
VIEWPORT = {"width": 1280, "height": 800}

# What a visitor reads, in pieces: every visible text node of the main block and the sidebar (and the text of
# collapsed expanders and of tables, drawn on a canvas over a hidden copy), and the charts' own words. Apart from
# them: the model's data (form fields, code and monospace text such as token pieces, the translation line) and
# keyboard keys (a button's shortcut: PageDown), which may stay Latin; and what is not prose at all (formulas,
# icons, JSON viewers, frames: bertviz draws tokens) or is kept in English on purpose, in a container keyed
# "english_…" (the full model card).
SHOWN_JS = r"""() => {
    const data = 'code, pre, kbd, .translation';
    const ignored = '.katex, iframe, svg, [data-testid="stTooltipContent"], [data-testid="stJson"], '
        + '[data-testid="stIconMaterial"], [class*="st-key-english_"]';
    const unseenButRead = 'details, [data-testid="stDataFrame"]';
    const roots = [...document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebar"]')];
    const texts = [];
    const skipped = [];
    for (const root of roots) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const element = node.parentElement;
            const text = node.textContent.trim();
            if (!text || !element) continue;
            const font = getComputedStyle(element).fontFamily.toLowerCase();
            if (element.closest(ignored) || font.includes('material')) continue;
            if (element.closest(data) || font.includes('mono')) { skipped.push(text); continue; }
            if (!element.checkVisibility() && !element.closest(unseenButRead)) continue;
            texts.push(text);
        }
    }
    for (const field of document.querySelectorAll('textarea, input')) if (field.value) skipped.push(field.value);
    const chart = '.gtitle, .g-gtitle-subtitle, [class*="g-x"][class$="title"], [class*="g-y"][class$="title"], '
        + '.annotation-text, .legendtext, .cbtitle';
    const titles = [...document.querySelectorAll(`[data-testid="stMain"] .js-plotly-plot :is(${chart})`)]
        .map(element => element.textContent.trim()).filter(Boolean);
    return {texts, titles, skipped};
}"""
# Every chart drawn (plotly fills its svg after the script's run is over).
CHARTS_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .every(chart => chart.querySelector('.main-svg'))"""

# Every chart's titles with their boxes and the box of the chart's drawing.
TITLE_BOXES_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(plot => {
    const box = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const titles = plot.querySelectorAll('.gtitle, .g-gtitle-subtitle, .annotation-text, .g-xtitle, .g-ytitle');
    return {svg: box(plot.querySelector('svg.main-svg')), titles: [...titles].map(t => [t.textContent, box(t)])};
})"""

HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Latin words end where Latin letters do: a Korean particle may follow at once ("search를").
ENGLISH_RUN = re.compile(r"(?<![A-Za-z0-9_])[a-z]{3,}[ ,]+[a-z]{3,}(?![A-Za-z0-9_])")
LATIN_WORD = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z]{2,}(?![A-Za-z0-9_-])")  # not in a symbol: d_k, en-de-small
# Names, titles, units and symbols that stay as they are in Korean text.
NAMES = [
    "BLEU",
    "chrF",
    "bertviz",
    "plotly",
    "softmax",
    "Transformer",
    "newstest2013",
    "en-de-small",
    "SentencePiece",
    "safetensors",
    "sacreBLEU",
    "WMT",
    "Wᴼ",
    "d_model",
    "d_ff",
    "d_k",
    "d_v",
    "float32",
    "bfloat16",
    "float16",
    "PNG",
    "SVG",
    "CSV",
    "JSON",
    "HTML",
    "NPZ",
    "MB",
    "ms",
    "PE",
    "pos",
    "dim",
    "sin",
    "cos",
    "Adam",
    "Tatoeba",
    "Multi30k",
    "PUD",
    "Europarl",
    "Attention Is All You Need",
    "Vaswani",
    "Jesse Vig",
    "Michel",
    "Abnar",
    "Zuidema",
    "Vamvas",
    "Sennrich",
    "Yin",
    "Neubig",
    "Chen",
    "DeYoung",
    "Clark et al.",
    "Universal Dependencies",
    "Hugging Face",
    "Marian",
    "CPU",
    "GPU",
    "<EOS>",
    "<pad>",
    "log",
    "Concat",
    "Language / 언어",  # the language picker's label speaks both languages on purpose
]


def english_glosses() -> set[str]:
    """The English beside a Korean term (``어텐션 (attention)``): the catalogue's own, kept on purpose."""
    glosses = set()
    for text in catalogue("ko").values():
        glosses |= {gloss.strip() for gloss in re.findall(r"\(([A-Za-z][A-Za-z ,./'’-]*)\)", text)}
    return glosses


def plain(markdown: str) -> str:
    """A message as it reads on the page: no Markdown marks, line breaks as spaces."""
    text = re.sub(r"<br\s*/?>", " ", markdown)
    return re.sub(r"\s+", " ", re.sub(r"\*\*|\*|`|^[-#] ", "", text, flags=re.M)).strip()


def english_segments() -> set[str]:
    """The literal parts of every English message (between its fields) that have two or more words, for messages
    whose Korean differs."""
    english, korean = catalogue("en"), catalogue("ko")
    segments = set()
    for key, text in english.items():
        if korean.get(key) == text:
            continue
        for literal, *_ in string.Formatter().parse(text):
            for part in re.split(r"\n+", literal or ""):
                part = plain(part).strip(" ,.:;()—–-")
                if len(re.findall(r"[A-Za-z]{2,}", part)) >= 2 and not HANGUL.search(part):
                    segments.add(part)
    return segments


def without(text: str, kept: list[str]) -> str:
    """``text`` less every whole-word occurrence of the strings in ``kept``."""
    text = " ".join(text.split())
    for each in kept:
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(' '.join(each.split()))}(?![A-Za-z0-9_])", " ", text)
    return text


def german(clause: str) -> bool:
    """A clause of a German translation or reference (data): frequent German words and no English ones."""
    words = {word.lower() for word in re.findall(r"\w+", clause)}
    return (
        looks_like(clause, "de", "en")
        or bool(re.search(r"[äöüßÄÖÜ]", clause))
        or (bool(words & COMMON_WORDS["de"]) and not words & COMMON_WORDS["en"])
    )


SYNTAX_GROUP = catalogue("ko")["atlas.group.syntax"]  # the head atlas's syntax heads, named by their UD relation


@functools.cache
def model_words() -> frozenset[str]:
    """The words the shipped model can write (its vocabulary's word-initial pieces, lowercased) that no English
    message of the app uses: a page shows them as data (translations, beam hypotheses, next-piece candidates), and
    an English word left in the interface would come from the English catalogue."""
    vocabulary = spm.SentencePieceProcessor(
        model_file=str(REPOSITORY_CHECKPOINTS / DEFAULT_CHECKPOINT_NAME / "spm.model")
    )
    pieces = (vocabulary.id_to_piece(i) for i in range(vocabulary.get_piece_size()))
    words = {piece[1:].lower() for piece in pieces if piece.startswith("▁") and piece[1:].isalpha()}
    # The English messages' own words, without the German examples they quote ("→Kinder").
    english = (re.sub(r"→\w+|“[^”]*”", " ", text) for text in catalogue("en").values())
    interface = {word.lower() for text in english for word in re.findall(r"[A-Za-z]+", text)}
    return frozenset(words - interface)


def leftovers(shown: dict) -> list[str]:
    """English that ``shown`` (from SHOWN_JS) still holds once data, names and glosses are taken out: (a) a message
    of the English catalogue, (b) a run of ordinary lowercase words, (c) any other Latin word. Token pieces
    (``▁word``, ``·piece``), the words the model writes (:func:`model_words`), quoted examples and German clauses
    (translations, references) are data as well."""
    data = {text for text in shown["skipped"] if len(text.strip()) >= 3}
    data |= {figure.sentence for figure in FIGURES.values()}
    kept = sorted(data | english_glosses() | set(NAMES), key=len, reverse=True)
    data_words = {word.lower() for text in data for word in re.findall(r"[A-Za-zÀ-ÿ]+", text)} | model_words()
    segments = english_segments()
    found = []
    for text in [*shown["texts"], *shown["titles"]]:
        rest = re.sub(
            r"“[^”]*”|[▁·]\S*|[\w.-]+\.(?:json|jsonl|md|safetensors|model|tsv|npz|csv|png|svg|wa|conllu)(?![A-Za-z])"
            rf"|(?<={SYNTAX_GROUP}: )[a-z]+(?::[a-z]+)?",  # a Universal Dependencies relation ("구문: nsubj"): data
            " ",
            without(text, kept),
        )
        found += [f"message {segment!r} in {text!r}" for segment in segments if segment in rest]
        for clause in re.split(r"[.!?:;·()\[\]\"]|—|–| - ", rest):
            if german(clause):
                continue
            for run in ENGLISH_RUN.finditer(clause):
                if not all(word in data_words for word in re.findall(r"[a-z]+", run.group())):
                    found.append(f"words {run.group()!r} in {text!r}")
            found += [
                f"word {word!r} in {text!r}" for word in LATIN_WORD.findall(clause) if word.lower() not in data_words
            ]
    return sorted(set(found))


@needs_browser
@pytest.mark.parametrize("path", PAGES)
def test_every_page_and_tab_speaks_korean(open_app: Callable[..., object], path: str):  # noqa: F811
    query = "&" if "?" in path else "?"
    visit = open_app(VIEWPORT, path=f"{path}{query}lang=ko", ready='[data-testid="stMain"]')
    page = visit.page
    robot = robot_visitor()
    robot.settle(page)
    page.wait_for_function(CHARTS_DRAWN_JS)
    assert page.evaluate(robot.PROBLEMS_JS) == []
    shown = page.evaluate(SHOWN_JS)
    assert any(HANGUL.search(text) for text in shown["texts"]), "no Korean on the page"
    found = leftovers(shown)
    assert not found, "\n".join(found)
    # Korean titles are longer than English ones at the same font: none may run out of its chart at 1280 px.
    cut = [
        text
        for chart in page.evaluate(TITLE_BOXES_JS)
        for text, (left, _, right, _) in chart["titles"]
        if text and (left < chart["svg"][0] - 1 or right > chart["svg"][2] + 1)
    ]
    assert not cut, f"titles cut at the chart's edge: {cut}"
    visit.assert_quiet(page_link=path.split("?")[0].strip("/") or None)


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_every_messages_bold_and_italics_render(language: str):
    """No message shows its Markdown marks: CommonMark leaves ``**`code`**는`` as literal asterisks, since a closing
    ``**`` after punctuation must be followed by a space or punctuation, not a letter."""
    markdown = MarkdownIt("commonmark")
    broken = {}
    for key, text in catalogue(language).items():
        rendered = re.sub(r"<code>.*?</code>", "", markdown.render(text), flags=re.S)
        if "**" in re.sub(r"<[^>]+>", "", rendered):
            broken[key] = text
    assert not broken, broken


def test_the_korean_model_card_reports_the_recorded_scores():
    """The shipped model's Korean card (a summary shown with ``lang=ko``) prints the scores ``meta.json`` records,
    like the English card, and stays a summary."""
    shipped = REPOSITORY_CHECKPOINTS / DEFAULT_CHECKPOINT_NAME
    card = shipped / "MODEL_CARD.ko.md"
    if not card.is_file():
        pytest.skip("no shipped Korean model card")
    text = card.read_text(encoding="utf-8")
    meta = read_json(shipped / META_FILE)
    for key, score in meta["scores"].items():
        if key.endswith(" beam4"):
            assert f"{score['bleu']:.2f} | {score['chrf']:.2f}" in text, f"{key} out of date"
    assert f"{meta['step']:,} 스텝" in text
    assert len(text.splitlines()) <= 60 and HANGUL.search(text)


def test_language_names_decoding_and_samples_come_from_the_catalogue(monkeypatch: pytest.MonkeyPatch):
    """What the library writes in English for its command lines (``DecodingOptions.describe()``, a sample's
    description, a language's name) the pages show in the visitor's language, stored results' texts included."""
    from pages import i18n
    from transformer.paper.config import LANGUAGE_NAMES
    from transformer.search.decode import DEFAULT_DECODING, GREEDY

    assert {code: catalogue("en")[f"language.{code}"] for code in LANGUAGE_NAMES} == LANGUAGE_NAMES
    monkeypatch.setattr(i18n, "language", lambda: "ko")
    assert (i18n.language_label("en"), i18n.language_label("de"), i18n.language_label("xx")) == ("영어", "독일어", "xx")
    assert i18n.decoding_label(DEFAULT_DECODING) == "빔 4, α = 0.6, float32 탐색"
    assert i18n.decoding_label(GREEDY.describe()) == "그리디 디코딩, float32 탐색"  # as importance.json stores it
    assert i18n.decoding_label("beam 5, α = 1.0, bfloat16 search") == "빔 5, α = 1.0, bfloat16 탐색"
    assert i18n.sample_label("newstest2013.en, first 50 pairs") == "newstest2013.en, 처음 50쌍"
    assert i18n.sample_label("newstest2013 (first 100 sentences)") == "newstest2013 (처음 100문장)"
    assert i18n.sample_label("one sentence") == "문장 하나"
    assert i18n.sample_label("something else") == "something else"
    german = "Die Katze schläft auf dem Sofa und ist sehr müde."
    assert not_source_reasons(german, german.split(), "en", "de", "ko") == [
        "독일어처럼 읽힙니다(이 모델은 영어를 독일어로 번역합니다)"
    ]
    monkeypatch.setattr(i18n, "language", lambda: "en")
    for options in (DEFAULT_DECODING, GREEDY):
        assert i18n.decoding_label(options) == options.describe()
    assert i18n.sample_label("newstest2013.en, first 50 pairs") == "newstest2013.en, first 50 pairs"
