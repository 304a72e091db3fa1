"""bertviz's head view and model view as one self-contained HTML page that works offline and shows any token as text.

bertviz loads its libraries from a CDN through require.js and pastes its parameters into a script as raw JSON, so a
token such as ``</script>`` ends that script early and the page runs whatever follows. Here the same two views are
assembled with every script inline — d3 v5 (shipped by mpld3), jQuery (XStatic-jQuery) and bertviz's own
``head_view.js`` / ``model_view.js``, all read from the installed packages — and the attention and tokens travel as a
JSON data block whose ``<``, ``>`` and ``&`` are escaped; bertviz's JavaScript writes tokens with d3's ``.text()``, so
they reach the page as text only. A Content-Security-Policy forbids every fetch, so the page behaves the same inside
Streamlit (``st.iframe(page, height=frame_height(...))``) and as a downloaded file opened with no network.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import orjson

from transformer.analysis.attention import KIND_TITLES, KINDS, AttentionMaps
from transformer.paper.tokenizer import clean

VIEWS = ("head", "model")
VIEW_TITLES = {"head": "Head view", "model": "Model view"}
# The names bertviz itself gives the three kinds of an encoder-decoder model.
BERTVIZ_NAMES = {"encoder": "Encoder", "decoder": "Decoder", "cross": "Cross"}
ROOT_ID = "bertviz"
PARAMS_ID = "bertviz-params"
# Attention is drawn as line opacity, which has 256 levels; 4 decimals keeps a 6-layer model view to a few MB.
DECIMALS = 4

# Nothing may be fetched: scripts and styles are inline and the views need no images, fonts or connections. Inline
# scripts are allowed as a class rather than pinned by hash because Streamlit appends its own size-reporting script
# when it sizes a frame to its content.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)
PAGE_STYLE = (
    "body{margin:8px;background:#fff;color:#000;color-scheme:light;"
    "font-family:'Helvetica Neue',Helvetica,Arial,sans-serif}"
)

# bertviz asks require.js for d3 and jQuery by name; both are already on the page, loaded before this shim.
REQUIRE_SHIM = """window.requirejs = function (names, callback) {
  var modules = {d3: window.d3, jquery: window.jQuery};
  callback.apply(null, names.map(function (name) { return modules[name]; }));
};"""
REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.DOTALL)
PARAMS_MARKER = "const params = PYTHON_PARAMS;"
JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}

# bertviz's layout in pixels (head_view.js: BOXHEIGHT, TEXT_TOP; model_view.js: the thumbnail, axis and detail sizes),
# needed because a frame embedded with components.html cannot learn the drawing's height from the page.
HEAD_TOKEN_HEIGHT = 22.5
HEAD_TEXT_TOP = 30
MODEL_AXIS_HEIGHT = 38
MODEL_THUMBNAIL_PADDING = 5
MODEL_DETAIL_TOKEN_HEIGHT = 18
MODEL_DETAIL_EXTRA_HEIGHT = 55
CONTROLS_HEIGHT = 26  # the drop-down row: 19 px in Chromium, more in other browsers
PAGE_EXTRA_HEIGHT = 28  # body margins and the gap under an inline SVG, with a little room


def head_view_html(
    maps: AttentionMaps, kind: str | None = None, layer: int | None = None, heads: list[int] | None = None
) -> str:
    """bertviz's head view as a standalone HTML document: every head of one layer as coloured lines between tokens.

    ``kind`` None offers encoder, decoder and cross attention in a drop-down; a kind shows only that one. ``layer`` is
    the layer shown first (default 0) and ``heads`` the heads selected first (default all).
    """
    kinds = _kinds(kind)
    layers = list(range(maps.num_layers))
    if layer is not None:
        _indices([layer], maps.num_layers, "layer")
    params = {
        "attention": _attention_data(maps, kinds, layers, list(range(maps.num_heads))),
        "default_filter": "0",
        "root_div_id": ROOT_ID,
        "layer": layer,
        "heads": None if heads is None else _indices(heads, maps.num_heads, "head"),
        "include_layers": layers,
    }
    controls = 'Layer: <select id="layer"></select> ' + _filter_select(kinds)
    return _document(f"{VIEW_TITLES['head']}: {_kinds_title(kinds)}", controls, params, "head")


def model_view_html(
    maps: AttentionMaps,
    kind: str | None = None,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
) -> str:
    """bertviz's model view as a standalone HTML document: a thumbnail per layer and head; click one to enlarge it.

    ``kind`` None offers encoder, decoder and cross attention in a drop-down; a kind shows only that one. ``layers``
    and ``heads`` restrict the grid (default all), which keeps the page small for long sentences.
    """
    kinds = _kinds(kind)
    layers = list(range(maps.num_layers)) if layers is None else _indices(layers, maps.num_layers, "layer")
    heads = list(range(maps.num_heads)) if heads is None else _indices(heads, maps.num_heads, "head")
    params = {
        "attention": _attention_data(maps, kinds, layers, heads),
        "default_filter": "0",
        "display_mode": "light",
        "root_div_id": ROOT_ID,
        "include_layers": layers,
        "include_heads": heads,
        "total_heads": maps.num_heads,
    }
    return _document(f"{VIEW_TITLES['model']}: {_kinds_title(kinds)}", _filter_select(kinds), params, "model")


def frame_height(
    maps: AttentionMaps, view: str = "head", kind: str | None = None, layers: Sequence[int] | None = None
) -> int:
    """Pixels a frame needs to show a view without vertical scrolling, for the longest kind its drop-down offers."""
    kinds = _kinds(kind)
    tokens = max(len(side) for each in kinds for side in maps.tokens(each))
    if view == "head":
        drawing = tokens * HEAD_TOKEN_HEIGHT + HEAD_TEXT_TOP
        controls = CONTROLS_HEIGHT
    elif view == "model":
        layer_count = maps.num_layers if layers is None else len(layers)
        # As in model_view.js: thumbnails shrink with the model's head count; an enlarged head may be taller.
        thumbnail = tokens * 7 * 12 / maps.num_heads + 2 * MODEL_THUMBNAIL_PADDING
        detail = tokens * MODEL_DETAIL_TOKEN_HEIGHT + MODEL_DETAIL_EXTRA_HEIGHT
        drawing = max(layer_count * thumbnail + MODEL_AXIS_HEIGHT, detail)
        controls = CONTROLS_HEIGHT if len(kinds) > 1 else 0
    else:
        raise ValueError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}")
    return math.ceil(drawing) + controls + PAGE_EXTRA_HEIGHT


def standalone_filename(kind: str | None, view: str = "head") -> str:
    """File name for a downloaded view, e.g. ``attention-head-view-cross.html`` (``-all`` for every kind)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}")
    suffix = "all" if kind is None else _kinds(kind)[0]
    return f"attention-{view}-view-{suffix}.html"


def _kinds(kind: str | None) -> tuple[str, ...]:
    if kind is None:
        return KINDS
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(KINDS)}")
    return (kind,)


def _kinds_title(kinds: Sequence[str]) -> str:
    return KIND_TITLES[kinds[0]] if len(kinds) == 1 else "encoder, decoder and cross attention"


def _indices(values: Sequence[int], count: int, what: str) -> list[int]:
    chosen = [int(value) for value in values]
    if not chosen:
        raise ValueError(f"choose at least one {what}")
    outside = [value for value in chosen if not 0 <= value < count]
    if outside:
        raise ValueError(f"{what} {outside[0]} does not exist; the model has {what}s 0 to {count - 1}")
    return chosen


def display_tokens(tokens: Sequence[str]) -> list[str]:
    """Tokens as bertviz labels: SentencePiece's ▁ word marker shown as a space, and text UTF-8 can carry (no lone
    surrogates, no direction controls: :func:`~transformer.paper.tokenizer.clean`)."""
    return [clean(token).replace("▁", " ") for token in tokens]


def _attention_data(
    maps: AttentionMaps, kinds: Sequence[str], layers: list[int], heads: list[int]
) -> list[dict[str, object]]:
    """bertviz's per-kind entries: attention [layers, heads, queries, keys] with query (left) and key (right) tokens."""
    data = []
    for kind in kinds:
        weights = maps.weights(kind)[layers][:, heads]
        queries, keys = maps.tokens(kind)
        if weights.shape[2:] != (len(queries), len(keys)):
            raise ValueError(
                f"{kind} attention is {weights.shape[2]}×{weights.shape[3]} but there are {len(queries)} query and "
                f"{len(keys)} key tokens"
            )
        data.append(
            {
                "name": BERTVIZ_NAMES[kind],
                # Rounded float32, which orjson prints in its shortest form (0.1234): a fifth of the bytes.
                "attn": np.ascontiguousarray(np.round(weights, DECIMALS), dtype=np.float32),
                # bertviz's prettify_tokens: SentencePiece's ▁ word marker becomes a space.
                "left_text": display_tokens(queries),
                "right_text": display_tokens(keys),
            }
        )
    return data


def _filter_select(kinds: Sequence[str]) -> str:
    if len(kinds) == 1:
        return ""
    options = "".join(f'<option value="{i}">{html.escape(KIND_TITLES[kind])}</option>' for i, kind in enumerate(kinds))
    return f'Attention: <select id="filter">{options}</select>'


def _document(title: str, controls: str, params: dict[str, object], view: str) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{PAGE_STYLE}</style>",
            "</head>",
            "<body>",
            f'<div id="{ROOT_ID}"><span style="user-select:none">{controls}</span><div id="vis"></div></div>',
            f'<script type="application/json" id="{PARAMS_ID}">{_script_json(params)}</script>',
            *(_script(source) for source in (*_libraries(), REQUIRE_SHIM, _bertviz_script(view))),
            "</body>",
            "</html>",
        ]
    )


def _script_json(value: object) -> str:
    """JSON that cannot end or comment out its script element: ``<``, ``>`` and ``&`` only occur inside JSON strings,
    where their \\u escapes mean the same characters."""
    # orjson writes NumPy arrays directly, several times faster than json on lists of floats.
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")
    for character, escape in JSON_ESCAPES.items():  # str.replace is far faster than str.translate on megabytes
        text = text.replace(character, escape)
    return text


def _script(source: str) -> str:
    # A script element ends at the first "</script" whatever the JavaScript means there, and "<!--" can hide that end.
    if re.search(r"</script|<!--", source, re.IGNORECASE):
        raise ValueError("a script to inline contains '</script' or '<!--'")
    return f"<script>\n{source}\n</script>"


def _package_file(package: str, *parts: str) -> str:
    """A file shipped inside an installed package, found without importing it (mpld3 would pull in matplotlib)."""
    spec = find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"{package} is not installed; install the project's dependencies")
    return Path(spec.origin).parent.joinpath(*parts).read_text(encoding="utf-8")


@cache
def _libraries() -> tuple[str, str]:
    """d3 v5 (bertviz's callbacks use v5's event signature) and jQuery, in the order bertviz's views need them."""
    return _package_file("mpld3", "js", "d3.v5.min.js"), _package_file("xstatic.pkg.jquery", "data", "jquery.min.js")


# Changes to bertviz's scripts, each (original, replacement): layers and heads numbered from 1 like the rest of the
# app (bertviz counts from 0), and a model view as wide as its frame (bertviz draws it 970 px wide, which hides the
# last head columns in a narrower frame).
PATCHES = {
    "head": (
        (
            'layerEl.append($("<option />").val(layer).text(layer));',
            'layerEl.append($("<option />").val(layer).text(layer + 1));',
        ),
    ),
    "model": (
        ("const DIV_WIDTH = 970;", "const DIV_WIDTH = Math.max(400, Math.min(970, window.innerWidth - 20));"),
        (".text(config.heads[i])", ".text(config.heads[i] + 1)"),
        (".text(config.layers[i])", ".text(config.layers[i] + 1)"),
        (
            ".text('Layer ' + config.layers[layerIndex] + \", Head \" + config.heads[headIndex])",
            ".text('Layer ' + (config.layers[layerIndex] + 1) + \", Head \" + (config.heads[headIndex] + 1))",
        ),
    ),
}


@cache
def _bertviz_script(view: str) -> str:
    """bertviz's view script, its CDN require.config removed, its parameters read from the JSON data block and the
    :data:`PATCHES` applied."""
    source = _package_file("bertviz", f"{view}_view.js")
    source, removed = REQUIRE_CONFIG.subn("", source)
    if removed != 1 or source.count(PARAMS_MARKER) != 1:
        raise RuntimeError(f"bertviz's {view}_view.js is not laid out as expected; check the bertviz version")
    for original, replacement in PATCHES[view]:
        if source.count(original) != 1:
            raise RuntimeError(f"bertviz's {view}_view.js is not laid out as expected ({original!r}): check bertviz")
        source = source.replace(original, replacement)
    return source.replace(
        PARAMS_MARKER, f'const params = JSON.parse(document.getElementById("{PARAMS_ID}").textContent);'
    )
