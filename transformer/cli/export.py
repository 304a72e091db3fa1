"""Export a checkpoint for another engine (:mod:`transformer.formats.ctranslate2`) or as a Hugging Face model
(:mod:`transformer.formats.hub`).

    python -m transformer export ctranslate2 --checkpoint checkpoints/en-de-small --out DIR [--force]
    python -m transformer export huggingface --checkpoint checkpoints/en-de-small --out DIR [--force]
    python -m transformer export web --out explorer.html [--language ko] [--force]

A CTranslate2 folder then translates with CTranslate2 alone: ``ctranslate2.Translator(DIR)`` over the pieces of
``DIR/spm.model``, each source ending with ``</s>`` as in this project's search. A Hugging Face folder is a
``MarianMTModel`` with its Marian tokenizer: ``MarianMTModel.from_pretrained(DIR, local_files_only=True)``. A web
export is one HTML file that translates and draws every head in a browser, opened from disk with nothing installed
(:mod:`transformer.features.web`; building it needs Node.js's npm once, to fetch the pinned JavaScript).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis.alignment_choice import default_method
from transformer.cli import command_parser, fail, load_or_report
from transformer.features.i18n import LANGUAGES
from transformer.features.web import WebExportError, export_web
from transformer.formats.ctranslate2 import ExportError, export_ctranslate2
from transformer.formats.hub.export import export_marian
from transformer.formats.hub.families import HubError


def parser() -> argparse.ArgumentParser:
    result = command_parser("export", __doc__)
    result.add_argument(
        "engine", choices=["ctranslate2", "huggingface", "web"], help="the engine or format to export for"
    )
    result.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    result.add_argument("--out", type=Path, required=True, help="folder to write the converted model to (web: a file)")
    result.add_argument(
        "--language", choices=sorted(LANGUAGES), default="en", help="web: the language the page opens in (both inside)"
    )
    result.add_argument("--force", action="store_true", help="replace the files of a non-empty --out folder")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    loaded = load_or_report(arguments.checkpoint)
    if loaded is None:
        return 1
    try:
        if arguments.engine == "web":
            alignment = default_method(loaded).name
            out = export_web(loaded, arguments.out, arguments.language, alignment, force=arguments.force)
            size = out.stat().st_size / 1e6
            print(f"wrote {out}: the explorer of {loaded.path.name}, {size:.1f} MB; open it in a browser")
            return 0
        if arguments.engine == "huggingface":
            out = export_marian(loaded, arguments.out, force=arguments.force)
        else:
            out = export_ctranslate2(loaded, arguments.out, force=arguments.force)
    except (ExportError, HubError, WebExportError, OSError) as error:
        return fail(error)
    size = sum(path.stat().st_size for path in out.iterdir()) / 1e6
    what = "Hugging Face MarianMTModel" if arguments.engine == "huggingface" else "CTranslate2 model"
    print(f"wrote {out}: float32 {what} of {loaded.path.name}, {size:.1f} MB")
    return 0
