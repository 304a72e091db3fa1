"""The trainer: ``python -m transformer.train`` (also installed as ``transformer-train``).

§5 of the paper: Adam (β1 = 0.9, β2 = 0.98, ε = 1e-9) with lrate = scale · d_model^-0.5 · min(step^-0.5,
step · warmup^-1.5), label smoothing 0.1, dropout 0.1, token-count batches of similar-length sentences. On top of that:
gradient accumulation (large effective batches on a small machine), gradient clipping, periodic validation (loss and
sacreBLEU on a dev subset, with sample translations), atomic checkpoints every N minutes or steps keeping the last K,
exact resumption (``--resume``: step, optimizer, schedule, random state and data order), a checkpoint on Ctrl-C or
SIGTERM, never-rotated snapshots at chosen steps (to watch heads develop), a JSONL metrics log, and data-parallel
training under ``torchrun`` (gloo on CPU, nccl on GPUs).

Example (the shipped model's recipe is in docs/trainer.md)::

    python -m transformer.train --out runs/en-de-small --preset small --save-every-minutes 10
    python -m transformer.train --out runs/en-de-small --resume
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import queue
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from transformer import checkpoint as ckpt
from transformer.analysis.figures import LAW_SENTENCE, MAKING_SENTENCE
from transformer.analysis.health import format_health, health_sample, model_health
from transformer.config import ModelConfig, preset
from transformer.data import (
    DATA_ROOT,
    Batch,
    BatchSampler,
    CorpusSpec,
    Example,
    collate,
    encode_pairs,
    read_corpus,
    read_parallel,
)
from transformer.decode import GREEDY, translate
from transformer.model import Transformer
from transformer.schedule import learning_rate
from transformer.tokenizer import PAD_ID, Tokenizer, train_tokenizer

DEFAULT_TRAIN = [
    f"{DATA_ROOT / 'train' / 'news'}:3",
    f"{DATA_ROOT / 'train' / 'multi30k'}:2",
    str(DATA_ROOT / "train" / "tatoeba"),
]
DEFAULT_DEV = DATA_ROOT / "dev" / "newstest2013"
SAMPLE_SENTENCES = [
    "I would like a cup of coffee.",
    "The children are playing in the park.",
    MAKING_SENTENCE,  # the paper's two figure sentences
    LAW_SENTENCE,
]
# Arguments that describe the run itself; the others (length, logging, saving) may change when resuming.
RUN_DEFINING = {
    "preset", "train", "dev", "src_lang", "tgt_lang", "spm", "vocab_size", "max_tokens", "batch_tokens", "accumulate",
    "lr_scale", "warmup", "cooldown", "label_smoothing", "clip_norm", "dropout", "attention_dropout", "seed",
    "init_from", "branch_init_gain",
}  # fmt: skip


EARLIER_DEFAULTS = {"branch_init_gain": 1.0}  # what runs that predate an argument did, where the default changed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer.train",
        description="Train the encoder–decoder Transformer on parallel text.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    run = parser.add_argument_group("run")
    run.add_argument("--out", type=Path, required=True, help="run folder: checkpoints, snapshots, metrics.jsonl")
    run.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    run.add_argument(
        "--max-steps",
        type=int,
        default=100_000,
        help="stop at this optimizer step (a run started with --init-from counts on from its checkpoint's step)",
    )
    run.add_argument("--max-hours", type=float, default=None, help="stop after this many hours of this invocation")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    run.add_argument("--threads", type=int, default=None, help="CPU threads per process (default: cores / processes)")
    run.add_argument(
        "--amp",
        choices=["none", "bf16"],
        default="none",
        help="bfloat16 autocast: GPUs, and CPUs with AVX512-BF16 or AMX (measure: the gain depends on the batches)",
    )
    data = parser.add_argument_group("data")
    data.add_argument("--train", nargs="+", default=DEFAULT_TRAIN, help="corpus prefixes PREFIX[:UPSAMPLE]")
    data.add_argument("--dev", type=Path, default=DEFAULT_DEV, help="dev corpus prefix (PREFIX.en, PREFIX.de)")
    data.add_argument("--src-lang", default="en")
    data.add_argument("--tgt-lang", default="de")
    data.add_argument("--spm", type=Path, default=None, help="use this SentencePiece model instead of training one")
    data.add_argument("--vocab-size", type=int, default=8000, help="pieces of the joint vocabulary trained here")
    data.add_argument("--max-tokens", type=int, default=128, help="drop training pairs with a longer side")
    data.add_argument("--batch-tokens", type=int, default=4096, help="padded tokens per side per batch")
    data.add_argument("--accumulate", type=int, default=1, help="batches per optimizer step")
    model = parser.add_argument_group("model and optimisation")
    model.add_argument("--preset", default="small", help="tiny, small, base or big")
    model.add_argument(
        "--init-from", type=Path, default=None, help="start from this checkpoint's weights and vocabulary (fine-tune)"
    )
    model.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    model.add_argument("--attention-dropout", type=float, default=None, help="override the preset's")
    model.add_argument("--lr-scale", type=float, default=1.0, help="multiplies the paper's learning-rate schedule")
    model.add_argument("--warmup", type=int, default=4000, help="warm-up steps of the schedule")
    model.add_argument(
        "--cooldown",
        type=int,
        default=0,
        help="lower the learning rate linearly to zero over the last N steps before --max-steps (0: the paper's "
        "schedule throughout)",
    )
    model.add_argument(
        "--branch-init-gain",
        type=float,
        default=0.5,
        help="scale the initial attention value/output and feed-forward weights (1: plain Xavier, with which the "
        "encoder collapses; 0.5 keeps its positions apart, see docs/training.md)",
    )
    model.add_argument("--label-smoothing", type=float, default=0.1)
    model.add_argument("--clip-norm", type=float, default=1.0, help="gradient norm clip (0 turns it off)")
    model.add_argument("--seed", type=int, default=1)
    save = parser.add_argument_group("checkpoints, validation and logging")
    save.add_argument("--save-every-minutes", type=float, default=10.0)
    save.add_argument("--save-every-steps", type=int, default=0, help="also save every N steps (0: off)")
    save.add_argument("--keep-last", type=int, default=5, help="rotating checkpoints kept (for averaging)")
    save.add_argument("--snapshot-steps", type=str, default="", help="comma-separated steps kept forever, fp16")
    save.add_argument("--eval-every", type=int, default=1000, help="validate every N steps (0: only at the end)")
    save.add_argument("--dev-loss-sentences", type=int, default=1000)
    save.add_argument("--dev-bleu-sentences", type=int, default=200)
    save.add_argument(
        "--no-health",
        dest="health",
        action="store_false",
        help="skip the health measures (position cosines, attention entropies, alignment) at validation",
    )
    save.add_argument("--log-every", type=int, default=50, help="steps between metric log lines")
    save.add_argument("--progress", choices=["auto", "bar", "lines"], default="auto")
    return parser


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, set[str]]:
    """Parsed arguments and the names of those given explicitly on the command line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    explicit = build_parser()
    for action in explicit._actions:
        action.default = argparse.SUPPRESS
        action.required = False
    given = set(vars(explicit.parse_args(argv)))
    return args, given


def sequence_losses(logits: Tensor, target: Tensor, label_smoothing: float) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed loss (§5.4) and summed negative log-likelihood over non-padding target tokens.

    logits (..., V) and target (...) of any matching leading shape: (B, T) or the flat (N,) of kept positions."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
    keep = target != PAD_ID
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    smooth = -log_probs.mean(dim=-1)  # (B, T): cross-entropy with the uniform distribution
    loss = (1.0 - label_smoothing) * nll + label_smoothing * smooth  # equals F.cross_entropy(label_smoothing=…)
    return loss[keep].sum(), nll[keep].sum()


def training_losses(model: nn.Module, batch: Batch, label_smoothing: float) -> tuple[Tensor, Tensor]:
    """:func:`sequence_losses` of a batch, with logits computed for its non-padding target positions only."""
    keep = batch.target_output != PAD_ID
    logits = model(batch.source, batch.target_input, outputs=keep).logits  # (N, V)
    return sequence_losses(logits, batch.target_output[keep], label_smoothing)


class Distributed:
    """Process-group facts; a single process when not started by torchrun."""

    def __init__(self, device: torch.device) -> None:
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.enabled = self.world_size > 1
        if self.enabled and not dist.is_initialized():
            backend = "nccl" if device.type == "cuda" else "gloo"
            dist.init_process_group(backend, timeout=datetime.timedelta(hours=1))

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def sum(self, value: float, device: torch.device) -> float:
        if not self.enabled:
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return float(tensor.item())

    def any(self, flag: bool, device: torch.device) -> bool:
        return self.sum(float(flag), device) > 0

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


class StopRequest:
    """Turns SIGINT / SIGTERM into a flag the training loop checks after each step."""

    def __init__(self) -> None:
        self.requested = False
        self.previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self.handle)

    def handle(self, signum: int, frame: Any) -> None:
        if self.requested:  # a second Ctrl-C leaves at once
            raise KeyboardInterrupt
        self.requested = True
        print(f"\n{signal.Signals(signum).name}: saving a checkpoint after this step…", file=sys.stderr, flush=True)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


class MetricsLog:
    """Append-only JSONL file of training and validation records."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path = path
        self.enabled = enabled

    def truncate_after(self, step: int) -> None:
        """Forget records past ``step`` (written after the checkpoint a resumed run starts from)."""
        if not self.enabled or not self.path.is_file():
            return
        ckpt.write_atomically(self.path, ckpt.log_up_to(self.path, step))

    def write(self, record: dict[str, Any]) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def optimizer_tensors(optimizer: torch.optim.Optimizer, names: list[str]) -> tuple[dict[str, Tensor], dict]:
    """Split Adam's state into named tensors (for safetensors) and JSON-able hyper-parameters."""
    state = optimizer.state_dict()
    tensors = {}
    for index, values in state["state"].items():
        for key, value in values.items():
            tensors[f"optimizer/{names[index]}/{key}"] = value.detach().cpu().contiguous()
    return tensors, {"param_groups": state["param_groups"]}


def load_optimizer(
    optimizer: torch.optim.Optimizer, names: list[str], tensors: dict[str, Tensor], groups: dict
) -> None:
    state: dict[int, dict[str, Tensor]] = {}
    for index, name in enumerate(names):
        prefix = f"optimizer/{name}/"
        values = {key[len(prefix) :]: value for key, value in tensors.items() if key.startswith(prefix)}
        if values:
            state[index] = values
    optimizer.load_state_dict({"state": state, "param_groups": groups["param_groups"]})


class Trainer:
    def __init__(self, args: argparse.Namespace, given: set[str]) -> None:
        self.args = args
        self.device = resolve_device(args.device)
        self.dist = Distributed(self.device)
        if self.device.type == "cuda":
            self.device = torch.device("cuda", self.dist.local_rank)
            torch.cuda.set_device(self.device)
        threads = args.threads or max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        torch.set_num_threads(threads)
        self.run = args.out
        self.checkpoints = self.run / "checkpoints"
        self.log = MetricsLog(self.run / ckpt.METRICS_FILE, self.dist.main)
        resume_from = self.prepare_run(given)

        self.tokenizer = self.load_tokenizer(resume_from)
        overrides: dict[str, Any] = {
            "vocab_size": self.tokenizer.vocab_size,
            "source_language": args.src_lang,
            "target_language": args.tgt_lang,
        }
        if args.dropout is not None:
            overrides["dropout"] = args.dropout
        if args.attention_dropout is not None:
            overrides["attention_dropout"] = args.attention_dropout
        self.config: ModelConfig = preset(args.preset, **overrides)
        torch.manual_seed(args.seed)
        self.model = Transformer(self.config)
        if args.branch_init_gain != 1.0:
            torch.manual_seed(args.seed)
            self.model.reset_parameters(branch_gain=args.branch_init_gain)
        self.model = self.model.to(self.device)
        self.parameter_names = [name for name, _ in self.model.named_parameters()]
        self.optimizer = adam(self.model.parameters(), fused=True)
        self.step = 0
        self.epoch = 0
        self.position = 0
        self.tokens_seen = 0
        self.train_seconds = 0.0
        self.cpu_seconds = 0.0  # CPU time of this process (all its threads); unlike wall time, not inflated by pauses
        self.parent: dict[str, Any] | None = None  # the checkpoint a fine-tuning run started from
        if resume_from is not None:
            self.load_state(resume_from)
        elif args.init_from is not None:
            self.load_initial_weights(args.init_from)
        self.log.truncate_after(self.step)
        self.wrapped: nn.Module = self.model
        if self.dist.enabled:
            self.wrapped = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None
            )
        self.examples = self.load_examples()
        self.sampler = BatchSampler(
            self.examples, args.batch_tokens, args.seed, rank=self.dist.rank, world_size=self.dist.world_size
        )
        self.dev_pairs = read_parallel(f"{args.dev}.{args.src_lang}", f"{args.dev}.{args.tgt_lang}") if args.dev else []
        self.health_sample = health_sample() if args.health else None
        self.snapshot_steps = {int(s) for s in args.snapshot_steps.split(",") if s.strip()}

    # ----------------------------------------------------------------------------------------------- set-up
    def prepare_run(self, given: set[str]) -> Path | None:
        """Check --out against --resume; with --resume, restore the run's own arguments."""
        latest = ckpt.run_checkpoints(self.run)
        if not self.args.resume:
            if latest:
                raise SystemExit(
                    f"error: {self.run} already holds checkpoints; pass --resume to continue it or choose another --out"
                )
            if self.dist.main:
                self.run.mkdir(parents=True, exist_ok=True)
                ckpt.write_json(self.run / "args.json", serialisable(vars(self.args)))
            return None
        if not latest:
            raise SystemExit(f"error: --resume given but {self.checkpoints} holds no checkpoint")
        for candidate in reversed(latest):  # the newest readable one
            try:
                trainer = ckpt.read_json(candidate / ckpt.TRAINER_FILE)
                break
            except ckpt.CheckpointError as error:
                print(f"warning: skipping {candidate}: {error}", file=sys.stderr)
        else:
            raise SystemExit(f"error: no readable checkpoint in {self.checkpoints}")
        saved = trainer["args"]
        defaults = vars(build_parser().parse_args(["--out", str(self.run)]))
        for name, default in defaults.items():
            if name in ("out", "resume"):
                continue
            # Runs saved by older versions lack newer arguments: they ran with those arguments' earlier behaviour.
            value = saved.get(name, EARLIER_DEFAULTS.get(name, default))
            defining = name in RUN_DEFINING or (name == "max_steps" and saved.get("cooldown", 0) > 0)
            if name in given and not defining:
                continue  # how long to run, how often to save or log: the command line may change these
            if name in given and serialisable(getattr(self.args, name)) != value:
                print(f"warning: --{name.replace('_', '-')} is fixed by the run; using {value!r}", file=sys.stderr)
            if name in ("dev", "spm", "init_from") and value is not None:
                value = Path(value)
            setattr(self.args, name, value)
        return candidate

    def load_tokenizer(self, resume_from: Path | None) -> Tokenizer:
        path = self.run / ckpt.TOKENIZER_FILE
        if resume_from is not None:
            return Tokenizer.load(resume_from / ckpt.TOKENIZER_FILE)
        if self.args.init_from is not None:
            tokenizer = Tokenizer.load(self.args.init_from / ckpt.TOKENIZER_FILE)
        elif self.args.spm is not None:
            tokenizer = Tokenizer.load(self.args.spm)
        elif self.dist.main:
            sentences = []
            for spec in map(CorpusSpec.parse, self.args.train):
                for source, target in read_corpus(spec, self.args.src_lang, self.args.tgt_lang):
                    sentences += [source, target]
            self.say(f"training a {self.args.vocab_size}-piece SentencePiece model on {len(sentences):,} sentences")
            tokenizer = train_tokenizer(sentences, self.args.vocab_size, seed=self.args.seed)
        if self.dist.main:
            tokenizer.save(path)
        self.dist.barrier()
        return Tokenizer.load(path)

    def load_examples(self) -> list[Example]:
        examples: list[Example] = []
        for spec in map(CorpusSpec.parse, self.args.train):
            pairs = read_corpus(spec, self.args.src_lang, self.args.tgt_lang)
            encoded = encode_pairs(pairs, self.tokenizer, max_tokens=self.args.max_tokens)
            self.say(f"{spec.prefix.name}: {len(encoded):,} of {len(pairs):,} pairs kept, ×{spec.upsample}")
            examples.extend(encoded * spec.upsample)
        return examples

    def load_initial_weights(self, path: Path) -> None:
        """Weights of another checkpoint of the same shape; optimizer, schedule (with its warm-up) and data order
        start afresh. Steps, tokens and hours count on from the checkpoint's own, and its training log (if it has
        one) opens this run's log, so the curves and the model's history stay whole."""
        # Dropout rates are training choices, not shape: a fine-tune may change them (--dropout, --attention-dropout).
        loaded = dataclasses.replace(
            ckpt.load_config(path), dropout=self.config.dropout, attention_dropout=self.config.attention_dropout
        )
        if loaded != self.config:
            raise ckpt.CheckpointError(f"{path / ckpt.CONFIG_FILE}: does not match --preset {self.args.preset}")
        weights = ckpt.read_tensors(path / ckpt.MODEL_FILE)
        ckpt.check_weights(path, weights, self.model)
        self.model.load_state_dict({name: tensor.float() for name, tensor in weights.items()})
        meta = ckpt.read_json(path / ckpt.META_FILE) if (path / ckpt.META_FILE).is_file() else {}
        self.step = int(meta.get("step", 0))
        self.tokens_seen = int(meta.get("tokens_seen", 0))
        self.train_seconds = float(meta.get("train_hours", 0.0)) * 3600
        self.cpu_seconds = float(meta.get("cpu_hours", 0.0)) * 3600
        self.parent = {"checkpoint": str(path), "step": self.step, "data": meta.get("data")}
        parent_log = ckpt.training_log(path)
        if self.log.enabled and parent_log is not None and not self.log.path.exists():
            ckpt.write_atomically(self.log.path, ckpt.log_up_to(parent_log, self.step))
        # Dev scores after this record may come from another dev set than those before it.
        dev = Path(self.args.dev).name if self.args.dev else None
        self.log.write({"kind": "init", **self.parent, "dev": dev, "train_hours": self.train_seconds / 3600})
        self.say(f"initialised from {path} (step {self.step:,}, {self.tokens_seen:,} tokens)")

    def load_state(self, path: Path) -> None:
        weights = ckpt.read_tensors(path / ckpt.MODEL_FILE)
        ckpt.check_weights(path, weights, self.model)
        self.model.load_state_dict(weights)
        tensors = ckpt.read_tensors(path / ckpt.STATE_FILE)
        trainer = ckpt.read_json(path / ckpt.TRAINER_FILE)
        load_optimizer(self.optimizer, self.parameter_names, tensors, trainer["optimizer"])
        torch.set_rng_state(tensors["rng/torch"])
        if self.device.type == "cuda" and "rng/cuda" in tensors:
            torch.cuda.set_rng_state(tensors["rng/cuda"])
        progress = trainer["progress"]
        self.step, self.epoch, self.position = progress["step"], progress["epoch"], progress["position"]
        self.tokens_seen, self.train_seconds = progress["tokens_seen"], progress["train_seconds"]
        self.cpu_seconds = progress.get("cpu_seconds", 0.0)
        self.parent = progress.get("parent")
        self.say(f"resumed {path} at step {self.step} (epoch {self.epoch}, batch {self.position})")

    @property
    def schedule_start(self) -> int:
        """The step the learning-rate schedule (and its warm-up) starts from: a fine-tuning run's first."""
        return self.parent["step"] if self.parent else 0

    # ----------------------------------------------------------------------------------------------- saving
    def meta(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "tokens_seen": self.tokens_seen,
            "train_hours": round(self.train_seconds / 3600, 4),
            "cpu_hours": round(self.cpu_seconds / 3600, 4),
            "processes": self.dist.world_size,
            "device": str(self.device.type),
            "data": self.args.train,
            **({"fine_tuned_from": self.parent} if self.parent else {}),
            "saved_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }

    def save(self) -> None:
        if not self.dist.main:
            return
        tensors, groups = optimizer_tensors(self.optimizer, self.parameter_names)
        tensors["rng/torch"] = torch.get_rng_state()
        if self.device.type == "cuda":
            tensors["rng/cuda"] = torch.cuda.get_rng_state(self.device)
        trainer = {
            "args": serialisable(vars(self.args)),
            "optimizer": groups,
            "progress": {
                "step": self.step,
                "epoch": self.epoch,
                "position": self.position,
                "tokens_seen": self.tokens_seen,
                "train_seconds": self.train_seconds,
                "cpu_seconds": self.cpu_seconds,
                "parent": self.parent,
            },
        }
        path = self.checkpoints / f"step-{self.step:07d}"
        ckpt.save_checkpoint(
            path, ckpt.state_dict_for_saving(self.model), self.config, self.tokenizer, self.meta(), tensors, trainer
        )
        for old in ckpt.run_checkpoints(self.run)[: -self.args.keep_last]:
            shutil.rmtree(old, ignore_errors=True)

    def snapshot(self) -> None:
        if self.dist.main:
            weights = ckpt.state_dict_for_saving(self.model, torch.float16)
            path = self.run / "snapshots" / f"step-{self.step:07d}"
            ckpt.save_checkpoint(path, weights, self.config, self.tokenizer, self.meta())
            self.say(f"snapshot {path}")

    # ----------------------------------------------------------------------------------------------- training
    def batches(self) -> Iterator[Batch]:
        """Endless stream of this process's batches, advancing epoch and position as each is taken.

        On a GPU the batches are made by a background thread, in pinned memory, a few steps ahead of the training."""

        def made(epoch: int, position: int) -> Iterator[tuple[int, int, Batch]]:
            while True:
                for index, batch in self.sampler.iterate(epoch, position):
                    yield epoch, index, batch.pin_memory() if self.device.type == "cuda" else batch
                epoch, position = epoch + 1, 0

        stream = made(self.epoch, self.position)
        for epoch, index, batch in prefetch(stream, 32) if self.device.type == "cuda" else stream:
            self.epoch, self.position = epoch, index + 1
            yield batch

    def train_step(self, micro_batches: list[Batch]) -> dict[str, float]:
        args = self.args
        self.wrapped.train()
        local_target_tokens = sum(b.num_target_tokens for b in micro_batches)
        global_target_tokens = self.dist.sum(local_target_tokens, self.device)
        # DDP averages gradients over processes, so scaling by world_size makes this the global per-token mean.
        scale = self.dist.world_size / global_target_tokens
        loss_sum = nll_sum = 0.0
        for index, batch in enumerate(micro_batches):
            batch = batch.to(self.device)
            sync = index == len(micro_batches) - 1 or not self.dist.enabled
            context = contextlib.nullcontext() if sync else self.wrapped.no_sync()
            with context, autocast(self.device, args.amp):
                loss, nll = training_losses(self.wrapped, batch, args.label_smoothing)
            (loss * scale).backward()
            loss_sum += float(loss.detach())
            nll_sum += float(nll.detach())
        grad_norm = nn.utils.clip_grad_norm_(
            self.model.parameters(), args.clip_norm if args.clip_norm > 0 else float("inf")
        )
        lr = learning_rate(
            self.step + 1 - self.schedule_start,
            self.config.d_model,
            args.warmup,
            args.lr_scale,
            cooldown=args.cooldown,
            last_step=args.max_steps - self.schedule_start,
        )
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        tokens = self.dist.sum(sum(b.num_tokens for b in micro_batches), self.device)
        self.tokens_seen += int(tokens)
        return {
            "loss": self.dist.sum(loss_sum, self.device) / global_target_tokens,
            "nll": self.dist.sum(nll_sum, self.device) / global_target_tokens,
            "lr": lr,
            "grad_norm": float(grad_norm),
            "tokens": tokens,
        }

    @torch.no_grad()
    def validate(self) -> dict[str, Any]:
        """Dev loss over ``dev_loss_sentences`` and greedy sacreBLEU over ``dev_bleu_sentences``, with samples."""
        model = self.model
        model.eval()
        args = self.args
        pairs = self.dev_pairs[: args.dev_loss_sentences]
        examples = encode_pairs(pairs, self.tokenizer, max_tokens=model.config.max_positions - 1)
        loss_sum = nll_sum = 0.0
        tokens = 0
        for start in range(0, len(examples), 64):
            batch = collate(examples[start : start + 64]).to(self.device)
            with autocast(self.device, args.amp):
                logits = model(batch.source, batch.target_input).logits
            loss, nll = sequence_losses(logits, batch.target_output, args.label_smoothing)
            loss_sum, nll_sum, tokens = loss_sum + float(loss), nll_sum + float(nll), tokens + batch.num_target_tokens
        bleu_pairs = self.dev_pairs[: args.dev_bleu_sentences]
        hypotheses = translate(model, self.tokenizer, [s for s, _ in bleu_pairs], GREEDY)
        import sacrebleu  # imported here: it is slow to import and the app never validates

        bleu = sacrebleu.corpus_bleu(hypotheses, [[t for _, t in bleu_pairs]]).score if bleu_pairs else None
        samples = translate(model, self.tokenizer, SAMPLE_SENTENCES, GREEDY)
        health = model_health(model, self.tokenizer, self.health_sample) if self.health_sample else {}
        return {
            **health,
            "dev_loss": loss_sum / max(tokens, 1),
            "dev_nll": nll_sum / max(tokens, 1),
            "dev_ppl": math.exp(min(nll_sum / max(tokens, 1), 50)),
            "dev_bleu": bleu,
            "dev_bleu_sentences": len(bleu_pairs),
            "samples": dict(zip(SAMPLE_SENTENCES, samples, strict=True)),
        }

    def say(self, message: str) -> None:
        if self.dist.main:
            print(message, flush=True)

    def run_validation(self, started: float) -> None:
        if self.dist.main and self.dev_pairs:
            began = time.time()
            result = self.validate()
            self.log.write({"kind": "dev", "step": self.step, "train_hours": self.train_seconds / 3600,
                            "wall_seconds": time.time() - started, **result})  # fmt: skip
            self.say(
                f"step {self.step}: dev loss {result['dev_loss']:.3f}, ppl {result['dev_ppl']:.1f}, "
                f"greedy BLEU {result['dev_bleu']:.2f} on {result['dev_bleu_sentences']} sentences "
                f"({time.time() - began:.0f}s)"
            )
            if "encoder_position_cosine" in result:
                self.say(format_health(result))
            for source, output in result["samples"].items():
                self.say(f"  {source}\n  → {output}")
        self.dist.barrier()

    def train(self) -> int:
        args = self.args
        stop = StopRequest()
        started = time.time()
        last_save = time.time()
        deadline = started + args.max_hours * 3600 if args.max_hours else math.inf
        self.say(
            f"{self.config.encoder_layers}+{self.config.decoder_layers} layers, d_model {self.config.d_model}, "
            f"{self.model.num_parameters():,} parameters, {len(self.examples):,} training pairs, "
            f"{self.dist.world_size} process(es) on {self.device}"
        )
        bar = progress_bar(args, self.step, self.dist.main)
        stream = self.batches()
        window_tokens, window_start, window = 0.0, time.time(), []
        interrupted = False
        try:
            while self.step < args.max_steps:
                step_start, cpu_start = time.time(), time.process_time()
                micro_batches = [next(stream) for _ in range(args.accumulate)]
                stats = self.train_step(micro_batches)
                self.train_seconds += time.time() - step_start
                self.cpu_seconds += time.process_time() - cpu_start
                window_tokens += stats["tokens"]
                window.append(stats)
                if bar is not None:
                    bar.update(1)
                if self.step % args.log_every == 0 or self.step == args.max_steps:
                    elapsed = time.time() - window_start
                    record = {
                        "kind": "train",
                        "step": self.step,
                        "epoch": self.epoch,
                        "loss": sum(s["loss"] for s in window) / len(window),
                        "nll": sum(s["nll"] for s in window) / len(window),
                        "lr": stats["lr"],
                        "grad_norm": sum(s["grad_norm"] for s in window) / len(window),
                        "tokens_per_second": window_tokens / max(elapsed, 1e-9),
                        "tokens_seen": self.tokens_seen,
                        "train_hours": self.train_seconds / 3600,
                        "cpu_hours": self.cpu_seconds / 3600,
                        "wall_seconds": time.time() - started,
                    }
                    self.log.write(record)
                    summary = (
                        f"loss {record['loss']:.3f} lr {record['lr']:.2e} {record['tokens_per_second']:,.0f} tok/s"
                    )
                    if bar is not None:
                        bar.set_postfix_str(summary)
                    else:
                        self.say(f"step {self.step} epoch {self.epoch} {summary}")
                    window_tokens, window_start, window = 0.0, time.time(), []
                if self.step in self.snapshot_steps:
                    self.snapshot()
                if args.eval_every and self.step % args.eval_every == 0:
                    self.run_validation(started)
                wants_stop = self.dist.any(stop.requested or time.time() > deadline, self.device)
                save_due = (time.time() - last_save) / 60 >= args.save_every_minutes or (
                    args.save_every_steps and self.step % args.save_every_steps == 0
                )
                if wants_stop or self.dist.any(bool(save_due), self.device):
                    self.save()
                    last_save = time.time()
                if wants_stop:
                    interrupted = stop.requested
                    break
        finally:
            stop.restore()
            if bar is not None:
                bar.close()
        if not interrupted:
            if not args.eval_every or self.step % args.eval_every:
                self.run_validation(started)
            if not ckpt.run_checkpoints(self.run) or ckpt.run_checkpoints(self.run)[-1].name != f"step-{self.step:07d}":
                self.save()
        self.say(
            f"{'interrupted' if interrupted else 'stopped'} at step {self.step}; checkpoint in {self.checkpoints}"
            + ("; continue with --resume" if self.step < args.max_steps else "")
        )
        self.dist.close()
        return 0


def adam(parameters, fused: bool, lr: float = 0.0) -> torch.optim.Adam:
    """Adam with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9 (§5.3); ``fused``: the single-kernel update (same maths,
    fewer passes over the weights) where this torch supports it on the parameters' device, else the default one."""
    parameters = list(parameters)
    if fused:
        try:
            return torch.optim.Adam(parameters, lr=lr, betas=(0.9, 0.98), eps=1e-9, fused=True)
        except RuntimeError:  # e.g. torch < 2.4 on a CPU
            pass
    return torch.optim.Adam(parameters, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def prefetch(items: Iterator[Any], depth: int) -> Iterator[Any]:
    """Items of ``items`` made by a daemon thread up to ``depth`` ahead of the consumer."""
    slots: queue.Queue = queue.Queue(maxsize=depth)

    def fill() -> None:
        try:
            for item in items:
                slots.put((True, item))
        except BaseException as error:  # handed to the consumer, which raises it
            slots.put((False, error))

    threading.Thread(target=fill, daemon=True, name="batches").start()
    while True:
        ok, item = slots.get()
        if not ok:
            raise item
        yield item


def autocast(device: torch.device, amp: str) -> contextlib.AbstractContextManager:
    if amp == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def progress_bar(args: argparse.Namespace, initial: int, main: bool):
    show = args.progress == "bar" or (args.progress == "auto" and sys.stderr.isatty())
    if not (main and show):
        return None
    from tqdm import tqdm

    return tqdm(total=args.max_steps, initial=initial, unit="step", dynamic_ncols=True)


def serialisable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: serialisable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [serialisable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args, given = parse_args(argv)
    try:
        return Trainer(args, given).train()
    except (ckpt.CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
