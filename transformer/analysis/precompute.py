"""What the figure pages measure on a checkpoint, computed once and stored beside it.

*Paper figures* needs the loaded model's attention on the paper's sentences, its figure numbers, its head scores
over the pronoun sentences and its translations of the two sentences; *Head discovery* opens on every head's scores
over the first 50 dev sentences (which means translating them). Measured on first use, that takes tens of seconds;
stored in the checkpoint folder as ``measured.safetensors``, a visit after a server start is as fast as a later one.

The file records a fingerprint of the weights it was measured on and is ignored when they change (a retrained or
replaced model), so it can never show another model's heads; it is measured again, too, when it was written in an
older :data:`FORMAT` (one that lacks a score the pages now show). Write it when exporting a model::

    python -m transformer precompute checkpoints/en-de-small

and the app writes it itself the first time it measures a checkpoint whose folder is writable.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import safe_open

from transformer.analysis.figures import FIGURES
from transformer.analysis.score_tables import HeadScoreTables, head_score_tables
from transformer.analysis.timeline import TimelinePoint, load_timeline, measure, save_timeline
from transformer.formats.checkpoint import LoadedCheckpoint, fingerprint
from transformer.search.decode import translate

PRECOMPUTED_FILE = "measured.safetensors"
SAMPLE = 50  # dev sentences Head discovery opens on
FORMAT = "3"  # 2: head scores of the decoder's self-attention too; 3: every score's interval


@dataclass
class Measured:
    point: TimelinePoint  # Paper figures: the loaded model's attention, figure numbers and scores
    translations: dict[int, str]  # figure number → the model's translation of that figure's sentence
    tables: HeadScoreTables  # Head discovery's, over SAMPLE dev sentences
    sample: int


def paper_translations(loaded: LoadedCheckpoint) -> dict[int, str]:
    ours = translate(loaded.model, loaded.tokenizer, [FIGURES[3].sentence, FIGURES[4].sentence])
    return {3: ours[0], 4: ours[1], 5: ours[1]}


def measure_all(loaded: LoadedCheckpoint, sample: int = SAMPLE) -> Measured:
    return Measured(
        point=measure(loaded, "loaded model"),
        translations=paper_translations(loaded),
        tables=head_score_tables(loaded, sample=sample),
        sample=sample,
    )


def write(loaded: LoadedCheckpoint, measured: Measured, path: Path | None = None) -> Path:
    path = path or loaded.store / PRECOMPUTED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {
        "fingerprint": fingerprint(loaded.path),
        "format": FORMAT,
        "translations": json.dumps({str(k): v for k, v in measured.translations.items()}, ensure_ascii=False),
        "tables": json.dumps(measured.tables.as_dict(), ensure_ascii=False),
        "sample": str(measured.sample),
    }
    save_timeline([measured.point], path, extra)
    return path


def read(loaded: LoadedCheckpoint) -> Measured | None:
    """The stored measurements of exactly these weights; None when missing, unreadable, of other weights or in an
    older format."""
    path = loaded.store / PRECOMPUTED_FILE
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        if metadata.get("format") != FORMAT or metadata.get("fingerprint") != fingerprint(loaded.path):
            return None
        (point,) = load_timeline(path)
        translations = {int(k): v for k, v in json.loads(metadata["translations"]).items()}
        tables = HeadScoreTables.from_dict(json.loads(metadata["tables"]))
        return Measured(point, translations, tables, int(metadata["sample"]))
    except Exception:  # safetensors raises several types for damaged files; any of them means "measure again"
        return None


def measured(loaded: LoadedCheckpoint) -> Measured:
    """The stored measurements when they are this model's; otherwise measured now and stored when the folder is
    writable (a read-only folder only costs the next visit the same wait)."""
    found = read(loaded)
    if found is not None:
        return found
    result = measure_all(loaded)
    with contextlib.suppress(OSError):
        write(loaded, result)
    return result


def default_head(tables: HeadScoreTables) -> tuple[str, int, int]:
    """The view a first visit opens on, from a checkpoint's head scores: (kind, layer, head), 0-based.

    The cross-attention head that aligns best with dictionary translations when one does (share ≥ 0.3: it links
    output words to the source words they translate, the clearest picture there is); otherwise the sharpest
    encoder head (lowest entropy), whose structure is at least visible."""
    alignment = tables.score("cross", "alignment_dictionary")
    if alignment is not None and alignment.size and np.isfinite(alignment).any() and np.nanmax(alignment) >= 0.3:
        layer, head = np.unravel_index(np.nanargmax(alignment), alignment.shape)
        return "cross", int(layer), int(head)
    entropy = tables.scores["encoder"]["entropy"]
    layer, head = np.unravel_index(np.nanargmin(entropy), entropy.shape)
    return "encoder", int(layer), int(head)
