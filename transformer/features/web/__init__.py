"""The model in the browser: one HTML file that translates any sentence and draws every head, with nothing installed.

    python -m transformer export web --out explorer.html [--checkpoint DIR] [--language ko]

The file holds everything it runs and opens from ``file://`` with no request (its Content-Security-Policy allows
none):

- the model as two ONNX graphs made by ``torch.onnx.export`` from this project's own modules: the encoder (source ids
  → memory and every encoder head's map) and the decoder (source ids, memory, target ids → the next token's
  log-probabilities and every decoder self- and cross-attention map). Both read one block of weights, each tensor
  stored once (the embedding both graphs use, too), in float16 where that is exact (the shipped checkpoint is
  float16; a Cast in the graph turns it back into the same float32 numbers) and float32 otherwise;
- onnxruntime-web (WebAssembly, one thread) to run them, and sentencepiece compiled to WebAssembly
  (``@sctg/sentencepiece-js``) reading the checkpoint's own ``spm.model``: the JavaScript is pinned in
  ``package.json`` and its lockfile, fetched by ``npm ci`` into a cache folder at export time and bundled by esbuild;
- the page (``explorer.js``, ``search.js``, ``words.js``): the project's greedy and beam search
  (transformer/search/decode.py), the maps of the three attention kinds, the layers × heads grid, the line view and the
  word alignment by the checkpoint's chosen method (transformer/analysis/word_alignment.py), in English and Korean.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from torch import nn

from transformer.features.i18n import LANGUAGES, catalogue
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.model import MultiHeadAttention, Transformer

WEB_FOLDER = Path(__file__).parent
SOURCES = ("explorer.js", "search.js", "words.js")
MAX_CHARACTERS = 2000  # as the app's sentence boxes
MAX_SOURCE_TOKENS = 96  # as the app's maps (pages/common.py): beyond this a map stops being readable
SMALL_TENSOR = 1024
WEIGHTS_FILE = "weights.bin"  # the name both graphs give their external weights
GRAPH_FILES = ("encoder.onnx", "decoder.onnx", WEIGHTS_FILE)
FALLBACK_ALIGNMENT = "mean-both"  # as transformer.analysis.word_alignment for a checkpoint with no measured choice
EXAMPLE = "The law will never be perfect, but its application should be just."


class WebExportError(RuntimeError):
    """The one-file explorer cannot be built here (no npm, no ONNX exporter) or from this model."""


class _Part(nn.Module):
    """One of the exported graphs: a part of ``model``'s pass."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model


class _Encoder(_Part):
    def forward(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        memory, weights = self.model.encode(source, need_weights=True)
        return memory, weights[0]  # (1, S, D), (L, H, S, S)


class _Decoder(_Part):
    def forward(
        self, source: torch.Tensor, memory: torch.Tensor, target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden, self_weights, cross_weights = self.model.decode(
            target, memory, self.model.source_mask(source), need_weights=True
        )
        log_probs = torch.log_softmax(self.model.project(hidden[:, -1]).float(), dim=-1)
        return log_probs, self_weights.transpose(0, 1), cross_weights.transpose(0, 1)  # (B, V), (L, B, H, T, ·)


@contextmanager
def _separate_projections():
    """Q, K and V as the paper's three matrices while exporting: each graph weight is then a parameter as stored."""
    fused = MultiHeadAttention.fused_projections
    MultiHeadAttention.fused_projections = False
    try:
        yield
    finally:
        MultiHeadAttention.fused_projections = fused


def require_exporter() -> None:
    """The ONNX exporter, or one line naming the extra that brings it (the app's install leaves it out)."""
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise WebExportError(
            "the one-file explorer needs the ONNX exporter, which the app's install leaves out: "
            'pip install -e ".[web]"  (onnx, onnxscript, onnxruntime)'
        ) from None


def _refuse_switched_off_heads(model: Transformer) -> None:
    if any(module.head_gate is not None for module in model.modules() if isinstance(module, MultiHeadAttention)):
        raise WebExportError("heads are switched off on this model; export it with every head on")


def onnx_graphs(model: Transformer) -> tuple:
    """The encoder and decoder of ``model`` as ONNX models (``onnx.ModelProto``) with their weights inside, for any
    batch, source and target length within the model's positions."""
    require_exporter()
    _refuse_switched_off_heads(model)
    model = model.float().eval()
    positions = model.config.max_positions
    batch = torch.export.Dim("batch", min=1, max=64)
    source_length = torch.export.Dim("source", min=1, max=positions)
    target_length = torch.export.Dim("target", min=1, max=positions)
    source = torch.tensor([[5, 6, 7, model.config.eos_id]])
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the exporter's notes on operators this model never uses
    try:
        with (
            _separate_projections(),
            torch.no_grad(),
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            memory = model.encode(source)[0]
            encoder = torch.onnx.export(
                _Encoder(model),
                (source,),
                input_names=["source"],
                output_names=["memory", "encoder_attention"],
                dynamic_shapes={"source": {1: source_length}},
                dynamo=True,
                verbose=False,
            )
            target = torch.tensor([[model.config.bos_id, 8, 9]] * 2)
            decoder = torch.onnx.export(
                _Decoder(model),
                (source.repeat(2, 1), memory.repeat(2, 1, 1), target),
                input_names=["source", "memory", "target"],
                output_names=["log_probs", "self_attention", "cross_attention"],
                dynamic_shapes={
                    "source": {0: batch, 1: source_length},
                    "memory": {0: batch, 1: source_length},
                    "target": {0: batch, 1: target_length},
                },
                dynamo=True,
                verbose=False,
            )
    finally:
        quiet.setLevel(level)
    return encoder.model_proto, decoder.model_proto


def share_weights(graphs: tuple) -> bytes:
    """Move the float initializers of ``graphs`` (of :data:`SMALL_TENSOR` values or more) into one block of bytes
    (returned) that each graph reads as the external data file :data:`WEIGHTS_FILE`: a tensor both graphs hold is
    stored once, and a float32 tensor whose values are all float16 numbers is stored as float16 behind a Cast node
    that gives the graph the same float32 values."""
    from onnx import TensorProto, helper, numpy_helper

    block = bytearray()
    stored: dict[str, tuple[int, int, int]] = {}  # content hash → offset, length, data type
    for graph in (proto.graph for proto in graphs):
        casts = []
        for initializer in list(graph.initializer):
            array = numpy_helper.to_array(initializer)
            name = initializer.name
            if array.dtype != np.float32 or array.size < SMALL_TENSOR:
                continue  # shapes and scalars stay in the graph: onnxruntime reads them while it plans the graph
            if array.dtype == np.float32 and np.array_equal(array.astype(np.float16).astype(np.float32), array):
                array, kept_name = array.astype(np.float16), f"{name}.float16"
                casts.append(helper.make_node("Cast", [kept_name], [name], to=TensorProto.FLOAT))
            else:
                kept_name = name
            raw = np.ascontiguousarray(array).tobytes()
            key = hashlib.sha256(raw + str(array.dtype).encode() + str(array.shape).encode()).hexdigest()
            if key not in stored:
                while len(block) % 64:
                    block.append(0)
                stored[key] = (len(block), len(raw), 0)
                block += raw
            offset, length, _ = stored[key]
            replacement = numpy_helper.from_array(array, kept_name)
            replacement.ClearField("raw_data")
            replacement.data_location = TensorProto.EXTERNAL
            for field, value in (("location", WEIGHTS_FILE), ("offset", str(offset)), ("length", str(length))):
                entry = replacement.external_data.add()
                entry.key, entry.value = field, value
            graph.initializer.remove(initializer)
            graph.initializer.append(replacement)
        for node in reversed(casts):
            graph.node.insert(0, node)
    return bytes(block)


def write_graphs(loaded: LoadedCheckpoint, folder: str | Path, cache: Path | None = None) -> Path:
    """``encoder.onnx``, ``decoder.onnx`` and their shared ``weights.bin`` for ``loaded`` in ``folder`` (what the
    explorer file holds; onnxruntime opens the graphs from there).

    Tracing and exporting take most of an export (about 15 s for the shipped model on 2 cores), so the files are kept
    in the cache folder (``cache``, by default :func:`web_cache`) under :func:`graphs_key`: a model with the same
    weights, configuration and code is exported once, and every later export copies the files."""
    _refuse_switched_off_heads(loaded.model)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kept = (cache or web_cache()) / "graphs" / graphs_key(loaded.model)
    if not _whole(kept):
        _export_graphs(loaded.model, kept)
    for name in GRAPH_FILES:
        shutil.copyfile(kept / name, folder / name)
    return folder


def graphs_key(model: Transformer) -> str:
    """What the exported graphs of ``model`` depend on, as a hash: its configuration, every weight as the export
    reads it (float32), the source of the modules it is made of and of this exporter, and the versions of torch and
    onnxscript."""
    import onnxscript

    digest = hashlib.sha256(f"torch {torch.__version__} onnxscript {onnxscript.__version__}".encode())
    digest.update(repr(model.config).encode())
    sources = {sys.modules[type(module).__module__].__file__ for module in model.modules()} | {__file__}
    for source in sorted(str(path) for path in sources if path):
        digest.update(Path(source).read_bytes())
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().float().contiguous().reshape(-1)
        digest.update(f"{name} {tuple(tensor.shape)}".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]


def _whole(kept: Path) -> bool:
    return all((kept / name).is_file() for name in GRAPH_FILES)


def _export_graphs(model: Transformer, kept: Path) -> None:
    """Export ``model``'s graphs into the cache folder ``kept``: written beside it and renamed into place, so that a
    folder under that name is always whole, whichever of two exports at once finishes first."""
    import tempfile

    import onnx

    kept.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{kept.name}.", dir=kept.parent))
    try:
        graphs = onnx_graphs(model)
        (scratch / WEIGHTS_FILE).write_bytes(share_weights(graphs))
        for name, graph in zip(("encoder", "decoder"), graphs, strict=True):
            onnx.save_model(graph, scratch / f"{name}.onnx")
        if kept.exists() and not _whole(kept):  # a cached folder whose files were partly removed
            shutil.rmtree(kept, ignore_errors=True)
        with contextlib.suppress(OSError):  # another export of the same model finished first: its files are the same
            scratch.rename(kept)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def web_cache() -> Path:
    root = os.environ.get("ATTENTION_EXPLORER_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "attention-explorer") / "web"


def javascript(cache: Path | None = None) -> str:
    """The page's JavaScript with onnxruntime-web and sentencepiece, one ES module: ``npm ci`` of the pinned
    packages into a cache folder keyed by the lockfile (once), then esbuild."""
    npm = shutil.which("npm")
    if npm is None:
        raise WebExportError("npm is not installed; the explorer's JavaScript is fetched with npm ci (Node.js 18+)")
    folder = _packages(cache)
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "node_modules" / ".bin" / "esbuild").exists():
        for name in ("package.json", "package-lock.json"):
            shutil.copy(WEB_FOLDER / name, folder / name)
        _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], folder, "npm ci")
    for name in SOURCES:
        shutil.copy(WEB_FOLDER / name, folder / name)
    (folder / "empty.js").write_text("export default {};\n")
    out = folder / "bundle.js"
    _run(
        [
            str(folder / "node_modules" / ".bin" / "esbuild"),
            "explorer.js",
            "--bundle",
            "--format=esm",
            "--platform=browser",
            "--minify",
            "--legal-comments=none",
            "--charset=ascii",
            # No address to resolve files against: everything is inlined, and a page embedded in a lesson (an
            # about:srcdoc frame) has an opaque origin that onnxruntime's file:// path would resolve against.
            "--define:import.meta.url=undefined",
            "--alias:fs=./empty.js",
            "--alias:module=./empty.js",
            "--log-level=error",
            f"--outfile={out}",
        ],
        folder,
        "esbuild",
    )
    return out.read_text(encoding="utf-8")


def _run(command: list[str], folder: Path, what: str) -> None:
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise WebExportError(f"{what} failed in {folder}: " + " / ".join(detail))


def _packages(cache: Path | None = None) -> Path:
    """The cache folder of the pinned JavaScript packages, keyed by the lockfile."""
    lock = (WEB_FOLDER / "package-lock.json").read_bytes()
    return (cache or web_cache()) / hashlib.sha256(lock).hexdigest()[:16]


def _ort_wasm(cache: Path | None = None) -> bytes:
    return (_packages(cache) / "node_modules" / "onnxruntime-web" / "dist" / "ort-wasm-simd-threaded.wasm").read_bytes()


def _strings() -> dict[str, dict[str, str]]:
    """Every language's texts the page uses: the web.* keys and the names of the attention kinds."""
    return {
        language: {key: value for key, value in catalogue(language).items() if key.startswith(("web.", "kind."))}
        for language in LANGUAGES
    }


def _binary(element_id: str, payload: bytes) -> str:
    return f'<script type="application/octet-stream" id="{element_id}">{base64.b64encode(payload).decode()}</script>'


def explorer_html(
    loaded: LoadedCheckpoint, language: str = "en", alignment: str = FALLBACK_ALIGNMENT, cache: Path | None = None
) -> str:
    """The explorer of ``loaded`` as one HTML document (see the module's docstring). ``alignment``: the word
    alignment method's name (``L2H4-shift-both``: a layer and head, then whether the rows are shifted and both
    directions must agree; the command lines pass the checkpoint's measured choice)."""
    import tempfile

    if language not in LANGUAGES:
        raise WebExportError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}")
    if loaded.hub is not None:
        raise WebExportError(
            "the explorer file runs this project's own checkpoints (their SentencePiece model and the paper's "
            "architecture); a Hugging Face model opens in the app instead"
        )
    require_exporter()  # before the JavaScript is fetched and bundled: say at once what is missing
    script = javascript(cache)
    config = loaded.config
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_graphs(loaded, scratch, cache)
        encoder = (folder / "encoder.onnx").read_bytes()
        decoder = (folder / "decoder.onnx").read_bytes()
        weights = (folder / WEIGHTS_FILE).read_bytes()
    data = {
        "language": language,
        "config": {
            "encoder_layers": config.encoder_layers,
            "decoder_layers": config.decoder_layers,
            "num_heads": config.num_heads,
            "max_positions": config.max_positions,
            "pad_id": config.pad_id,
            "bos_id": config.bos_id,
            "eos_id": config.eos_id,
            "forced_first_id": config.forced_first_id,
        },
        "pieces": loaded.tokenizer.pieces(range(config.vocab_size)),
        "strings": _strings(),
        "alignment_method": alignment,
        "max_characters": MAX_CHARACTERS,
        "max_source_tokens": MAX_SOURCE_TOKENS,
        "example": EXAMPLE,
        "model": loaded.path.name,
    }
    binaries = "\n".join(
        [
            _binary("encoder-onnx", encoder),
            _binary("decoder-onnx", decoder),
            _binary("weights", weights),
            _binary("spm-model", loaded.tokenizer.model_proto),
            _binary("ort-wasm", gzip.compress(_ort_wasm(cache), compresslevel=9, mtime=0)),
        ]
    )
    template = (WEB_FOLDER / "template.html").read_text(encoding="utf-8")
    safe_data = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return (
        template.replace("{{DATA}}", safe_data)
        .replace("{{BINARIES}}", binaries)
        .replace("{{SCRIPT}}", script.replace("</script", "<\\/script"))
    )


EMBED_MARKER = "<\u2060/script"  # how an embedded explorer spells "</script" inside another page's <script>


def embeddable(html: str) -> str:
    """An explorer document as text that can sit inside another page's ``<script type="text/html">`` element: each
    ``</script`` spelled with a word joiner (:data:`EMBED_MARKER`), which the page turns back before using it."""
    if EMBED_MARKER in html:
        raise WebExportError("the explorer's text already holds the marker used to embed it")
    return html.replace("</script", EMBED_MARKER)


def export_web(
    loaded: LoadedCheckpoint,
    out: str | Path,
    language: str = "en",
    alignment: str = FALLBACK_ALIGNMENT,
    force: bool = False,
    cache: Path | None = None,
) -> Path:
    """Write the one-file explorer of ``loaded`` to ``out`` (an .html file); an existing file only with ``force``."""
    out = Path(out)
    if out.exists() and not force:
        raise WebExportError(f"{out} exists (--force replaces it)")
    html = explorer_html(loaded, language, alignment, cache)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(html, encoding="utf-8")
    partial.replace(out)
    return out
