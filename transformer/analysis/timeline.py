"""Heads over training: the paper figures' attention and the encoder head scores at each snapshot of a run.

The trainer keeps never-rotated fp16 snapshots at chosen steps (``--snapshot-steps``); a full snapshot of the
``small`` model is 26 MB, too much to ship several. A timeline keeps only what the figures page shows for each
snapshot: the encoder self-attention of the two paper sentences ([L, H, S, S], fp16), the figure numbers and the
encoder head score tables over the shipped pronoun sentences, each with its 95% interval over them (a timeline
recorded before intervals were kept has none: its points show the scores alone). It is one ``timeline.safetensors``
of a few MB that sits in the checkpoint folder:

    python -m transformer timeline RUN/snapshots/step-* checkpoints/en-de-small \\
        --out checkpoints/en-de-small/timeline.safetensors
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save

from transformer.analysis.figures import FIGURES, SentenceAttention, figure_metrics, sentence_attention
from transformer.analysis.heads import pronoun_sentence_scores
from transformer.analysis.score_tables import ScoreInterval, score_interval
from transformer.formats.checkpoint import CheckpointError, LoadedCheckpoint, write_atomically

TIMELINE_FILE = "timeline.safetensors"
FIGURE_SENTENCES = (3, 4)  # Figure 5 uses Figure 4's sentence
INTERVAL_PARTS = ("low", "high", "near_best")  # a score's interval as stored: [L, H] each


@dataclass
class TimelinePoint:
    step: int
    train_hours: float | None
    label: str
    attention: dict[int, SentenceAttention]  # figure number → attention (Figure 5 shares Figure 4's)
    metrics: dict
    scores: dict[str, np.ndarray]
    # key → its 95% intervals over the pronoun sentences; {} for points recorded without
    intervals: dict[str, ScoreInterval] = field(default_factory=dict)


def measure(loaded: LoadedCheckpoint, label: str) -> TimelinePoint:
    attention = {number: sentence_attention(loaded, FIGURES[number]) for number in FIGURE_SENTENCES}
    attention[5] = attention[4]
    counts = pronoun_sentence_scores(loaded)
    found = {key: score_interval(key, each) for key, each in counts.items()}
    meta = loaded.meta or {}
    hours = meta.get("train_hours")
    return TimelinePoint(
        step=int(meta.get("step", 0)),
        train_hours=None if hours is None else float(hours),
        label=label,
        attention=attention,
        metrics=figure_metrics(attention),
        scores={key: each.value() for key, each in counts.items()},
        intervals={key: interval for key, interval in found.items() if interval is not None},
    )


def save_timeline(points: Sequence[TimelinePoint], path: Path, extra: dict[str, str] | None = None) -> None:
    """Write ``points`` (and ``extra`` text metadata) to one safetensors file."""
    points = sorted(points, key=lambda point: point.step)
    tensors: dict[str, torch.Tensor] = {}
    index = []
    for number, point in enumerate(points):
        for figure in FIGURE_SENTENCES:
            tensors[f"{number}.figure_{figure}"] = torch.from_numpy(point.attention[figure].weights).half()
        for name, values in point.scores.items():
            tensors[f"{number}.score.{name}"] = torch.from_numpy(np.asarray(values, dtype=np.float32))
        for name, interval in point.intervals.items():
            for part in INTERVAL_PARTS:
                values = np.asarray(getattr(interval, part), dtype=np.float32)
                tensors[f"{number}.{part}.{name}"] = torch.from_numpy(values)
        items = {name: interval.items for name, interval in point.intervals.items()}
        index.append(
            {
                "step": point.step,
                "train_hours": point.train_hours,
                "label": point.label,
                "metrics": point.metrics,
                "interval_items": items,
            }
        )
    tokens = {str(figure): points[0].attention[figure].tokens for figure in FIGURE_SENTENCES}
    metadata = {**(extra or {}), "points": json.dumps(index), "tokens": json.dumps(tokens)}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, save(tensors, metadata=metadata))  # never half a file, even if a reader looks meanwhile


def load_timeline(path: str | Path) -> list[TimelinePoint]:
    """The timeline's points in step order; [] when there is none; CheckpointError when the file is unreadable."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        tensors = load_file(str(path))
        index = json.loads(metadata["points"])
        tokens = {int(k): v for k, v in json.loads(metadata["tokens"]).items()}
    except Exception as error:  # safetensors raises several types for damaged files
        raise CheckpointError(f"{path}: not a readable timeline ({error})") from error
    points = []
    for number, entry in enumerate(index):
        attention = {
            figure: SentenceAttention(tokens[figure], tensors[f"{number}.figure_{figure}"].float().numpy())
            for figure in FIGURE_SENTENCES
        }
        attention[5] = attention[4]
        prefix = f"{number}.score."
        scores = {key[len(prefix) :]: value.numpy() for key, value in tensors.items() if key.startswith(prefix)}
        intervals = {  # none in a timeline recorded before them
            name: ScoreInterval(
                tensors[f"{number}.low.{name}"].numpy(),
                tensors[f"{number}.high.{name}"].numpy(),
                tensors[f"{number}.near_best.{name}"].numpy() > 0.5,
                items,
            )
            for name, items in entry.get("interval_items", {}).items()
        }
        points.append(
            TimelinePoint(
                entry["step"], entry["train_hours"], entry["label"], attention, entry["metrics"], scores, intervals
            )
        )
    return points
