"""The training configuration: one typed dataclass, from which the command line is built.

Each field's metadata holds its command-line help and group, and whether it *defines the run* (the data, model,
optimisation and seed): a resumed run keeps those from its checkpoint, while how long to run and how often to save,
validate or log may change from one invocation to the next.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformer.paper.data import DATA_ROOT, DEV_PREFIX

DEFAULT_TRAIN = [
    f"{DATA_ROOT / 'train' / 'news'}:3",
    f"{DATA_ROOT / 'train' / 'multi30k'}:2",
    str(DATA_ROOT / "train" / "tatoeba"),
]
GROUPS = ("run", "data", "model and optimisation", "checkpoints, validation and logging")
EARLIER_DEFAULTS = {
    "branch_init_gain": 1.0,
    "batch_order": "source",
}  # what runs that predate an argument did, where the default changed
RENAMED = {"source_language": "src_lang", "target_language": "tgt_lang"}  # field → its name in runs saved before


def option(default: Any, help: str | None = None, group: int = 0, defines_run: bool = False, **argparse_options):
    """A field with its command-line help, group (index into :data:`GROUPS`) and whether it defines the run."""
    metadata = {"help": help, "group": group, "defines_run": defines_run, "argparse": argparse_options}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class TrainingConfig:
    # run
    out: Path = option(None, "run folder: checkpoints, snapshots, metrics.jsonl", required=True)
    resume: bool = option(False, "continue the run in --out from its latest checkpoint")
    max_steps: int = option(
        100_000, "stop at this optimizer step (a run started with --init-from counts on from its checkpoint's step)"
    )
    max_hours: float | None = option(None, "stop after this many hours of this invocation")
    device: str = option("auto", "auto, cpu, cuda or cuda:N")
    threads: int | None = option(None, "CPU threads per process (default: cores / processes)")
    amp: str = option(
        "none",
        "bfloat16 autocast: GPUs, and CPUs with AVX512-BF16 or AMX (measure: the gain depends on the batches)",
        choices=["none", "bf16"],
    )
    # data
    train: list[str] = option(DEFAULT_TRAIN, "corpus prefixes PREFIX[:UPSAMPLE]", 1, True)
    dev: Path | None = option(DEV_PREFIX, "dev corpus prefix (PREFIX.<source>, PREFIX.<target>)", 1, True)
    source_language: str = option("en", "ISO 639-1 code of the language translated from (the corpora's .en)", 1, True)
    target_language: str = option("de", "ISO 639-1 code of the language translated into (the corpora's .de)", 1, True)
    spm: Path | None = option(None, "use this SentencePiece model instead of training one", 1, True)
    vocab_size: int = option(8000, "pieces of the joint vocabulary trained here", 1, True)
    max_tokens: int = option(128, "drop training pairs with a longer side", 1, True)
    batch_tokens: int = option(4096, "padded tokens per side per batch", 1, True)
    accumulate: int = option(1, "batches per optimizer step", 1, True)
    batch_order: str = option(
        "longer",
        "sort key of the length-sorted pools batches are cut from: the longer side (less padding) or the source "
        "(the earlier order)",
        1,
        True,
        choices=("longer", "source"),
    )
    case_augment: float = option(
        0.0,
        "add copies of this fraction of the pairs with source words capitalised ('The Law' reads as 'the law')",
        1,
        True,
    )
    # model and optimisation
    preset: str = option("small", "tiny, small, base or big", 2, True)
    init_from: Path | None = option(None, "start from this checkpoint's weights and vocabulary (fine-tune)", 2, True)
    dropout: float | None = option(None, "override the preset's dropout", 2, True)
    attention_dropout: float | None = option(None, "override the preset's", 2, True)
    lr_scale: float = option(1.0, "multiplies the paper's learning-rate schedule", 2, True)
    warmup: int = option(4000, "warm-up steps of the schedule", 2, True)
    cooldown: int = option(
        0,
        "lower the learning rate linearly to zero over the last N steps before --max-steps (0: the paper's schedule "
        "throughout)",
        2,
        True,
    )
    branch_init_gain: float = option(
        0.5,
        "scale the initial attention value/output and feed-forward weights (1: plain Xavier, with which the encoder "
        "collapses; 0.5 keeps its positions apart, see docs/training.md)",
        2,
        True,
    )
    label_smoothing: float = option(0.1, None, 2, True)
    clip_norm: float = option(1.0, "gradient norm clip (0 turns it off)", 2, True)
    seed: int = option(1, None, 2, True)
    # checkpoints, validation and logging
    save_every_minutes: float = option(10.0, None, 3)
    save_every_steps: int = option(0, "also save every N steps (0: off)", 3)
    keep_last: int = option(5, "rotating checkpoints kept (for averaging)", 3)
    snapshot_steps: str = option("", "comma-separated steps kept forever, fp16", 3)
    eval_every: int = option(1000, "validate every N steps (0: only at the end)", 3)
    dev_loss_sentences: int = option(1000, None, 3)
    dev_bleu_sentences: int = option(200, None, 3)
    health: bool = option(
        True, "skip the health measures (position cosines, attention entropies, alignment) at validation", 3
    )
    log_every: int = option(50, "steps between metric log lines", 3)
    progress: str = option("auto", None, 3, choices=["auto", "bar", "lines"])

    def to_json(self) -> dict[str, Any]:
        return serialisable(dataclasses.asdict(self))

    def restored(self, saved: dict[str, Any], given: set[str]) -> TrainingConfig:
        """This invocation's configuration for resuming a run saved with ``saved``: the run-defining fields (and
        ``max_steps`` when the run cools down towards it) come from the run, with a warning where the command line
        asked otherwise; the others keep what the command line gave, else the run's."""
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(self):
            name = spec.name
            if name in ("out", "resume"):
                continue
            default = spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default
            # Runs saved by older versions lack newer fields: they ran with those fields' earlier behaviour.
            value = saved.get(name, saved.get(RENAMED.get(name, ""), EARLIER_DEFAULTS.get(name, serialisable(default))))
            defining = spec.metadata["defines_run"] or (name == "max_steps" and saved.get("cooldown", 0) > 0)
            if name in given and not defining:
                continue
            if name in given and serialisable(getattr(self, name)) != value:
                print(f"warning: --{name.replace('_', '-')} is fixed by the run; using {value!r}", file=sys.stderr)
            values[name] = Path(value) if value is not None and path_field(name) else value
        return dataclasses.replace(self, **values)


def path_field(name: str) -> bool:
    hint = typing.get_type_hints(TrainingConfig)[name]
    return hint is Path or (isinstance(hint, types.UnionType) and Path in typing.get_args(hint))


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m transformer train``, one option per :class:`TrainingConfig` field."""
    parser = argparse.ArgumentParser(
        prog="python -m transformer train",
        description="Train the encoder–decoder Transformer on parallel text.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    groups = [parser.add_argument_group(title) for title in GROUPS]
    hints = typing.get_type_hints(TrainingConfig)
    for spec in dataclasses.fields(TrainingConfig):
        meta = spec.metadata
        default = spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default
        kwargs: dict[str, Any] = {"help": meta["help"], **meta["argparse"]}
        flag = "--" + spec.name.replace("_", "-")
        if hints[spec.name] is bool:
            if default:  # a switch that turns something off
                flag, kwargs["dest"], kwargs["action"] = f"--no-{flag[2:]}", spec.name, "store_false"
            else:
                kwargs["action"] = "store_true"
        else:
            kind = hints[spec.name]
            if isinstance(kind, types.UnionType):  # X | None
                kind = next(part for part in typing.get_args(kind) if part is not type(None))
            if typing.get_origin(kind) is list:
                kwargs["nargs"], kind = "+", typing.get_args(kind)[0]
            kwargs["type"], kwargs["default"] = kind, default
        groups[meta["group"]].add_argument(flag, **kwargs)
    return parser


def parse(argv: Sequence[str] | None) -> tuple[TrainingConfig, set[str]]:
    """The configuration from the command line, and the names of the options given explicitly."""
    config = TrainingConfig(**vars(build_parser().parse_args(argv)))
    explicit = build_parser()
    for action in explicit._actions:
        action.default = argparse.SUPPRESS
        action.required = False
    return config, set(vars(explicit.parse_args(argv)))


def serialisable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: serialisable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [serialisable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
