"""The trainer: ``python -m transformer train`` (also installed as ``transformer-train``).

§5 of the paper: Adam (β1 = 0.9, β2 = 0.98, ε = 1e-9) with lrate = scale · d_model^-0.5 · min(step^-0.5,
step · warmup^-1.5), label smoothing 0.1, dropout 0.1, token-count batches of similar-length sentences. On top of that:
gradient accumulation (large effective batches on a small machine), gradient clipping, periodic validation (loss and
sacreBLEU on a dev subset, with sample translations), atomic checkpoints every N minutes or steps keeping the last K,
exact resumption (``--resume``: step, optimizer, schedule, random state and data order), a checkpoint on Ctrl-C or
SIGTERM, never-rotated snapshots at chosen steps (to watch heads develop), a JSONL metrics log, and data-parallel
training under ``torchrun`` (gloo on CPU, nccl on GPUs).

This module is the training loop; its parts live in :mod:`transformer.cli.training` (configuration, checkpoint state,
validation, runtime).

Example (the shipped model's recipe is in its MODEL_CARD.md)::

    python -m transformer train --out runs/en-de-small --preset small --save-every-minutes 10
    python -m transformer train --out runs/en-de-small --resume
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from transformer.analysis.health import health_sample
from transformer.cli.training import state
from transformer.cli.training.options import TrainingConfig, parse
from transformer.cli.training.runtime import (
    Distributed,
    LogWindow,
    MetricsLog,
    StopRequest,
    adam,
    autocast,
    prefetch,
    progress_bar,
    resolve_device,
)
from transformer.cli.training.validation import report, training_losses, validate
from transformer.formats import checkpoint as ckpt
from transformer.formats import runs
from transformer.paper.config import ModelConfig, preset
from transformer.paper.data import (
    Batch,
    BatchSampler,
    CorpusSpec,
    Example,
    case_augmented,
    encode_pairs,
    read_corpus,
    read_pairs,
)
from transformer.paper.model import Transformer
from transformer.paper.schedule import learning_rate
from transformer.paper.tokenizer import Tokenizer, train_tokenizer


class Trainer:
    def __init__(self, options: TrainingConfig, given: set[str]) -> None:
        self.options = options
        self.device = resolve_device(options.device)
        self.dist = Distributed(self.device)
        if self.device.type == "cuda":
            self.device = torch.device("cuda", self.dist.local_rank)
            torch.cuda.set_device(self.device)
        threads = options.threads or max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        torch.set_num_threads(threads)
        self.run = options.out
        self.checkpoints = self.run / "checkpoints"
        self.log = MetricsLog(self.run / ckpt.METRICS_FILE, self.dist.main)
        resume_from = self.prepare_run(given)
        options = self.options  # a resumed run's own settings

        self.tokenizer = self.load_tokenizer(resume_from)
        overrides: dict[str, Any] = {
            "vocab_size": self.tokenizer.vocab_size,
            "source_language": options.source_language,
            "target_language": options.target_language,
        }
        if options.dropout is not None:
            overrides["dropout"] = options.dropout
        if options.attention_dropout is not None:
            overrides["attention_dropout"] = options.attention_dropout
        self.config: ModelConfig = preset(options.preset, **overrides)
        torch.manual_seed(options.seed)
        self.model = Transformer(self.config)
        if options.branch_init_gain != 1.0:
            torch.manual_seed(options.seed)
            self.model.reset_parameters(branch_gain=options.branch_init_gain)
        self.model = self.model.to(self.device)
        self.parameter_names = [name for name, _ in self.model.named_parameters()]
        self.optimizer = adam(self.model.parameters(), fused=True)
        self.progress = state.Progress()
        if resume_from is not None:
            self.progress = state.load_state(resume_from, self.model, self.optimizer, self.parameter_names, self.device)
            self.say(
                f"resumed {resume_from} at step {self.progress.step} (epoch {self.progress.epoch}, batch "
                f"{self.progress.position})"
            )
        elif options.init_from is not None:
            self.start_from(options.init_from)
        self.log.truncate_after(self.progress.step)
        self.wrapped: nn.Module = self.model
        if self.dist.enabled:
            self.wrapped = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None
            )
        self.examples = self.load_examples()
        self.sampler = BatchSampler(
            self.examples,
            options.batch_tokens,
            options.seed,
            rank=self.dist.rank,
            world_size=self.dist.world_size,
            sort_by=options.batch_order,
        )
        dev = options.dev
        self.dev_pairs = read_pairs(dev, (options.source_language, options.target_language)) if dev else []
        self.health_sample = (
            health_sample(languages=(options.source_language, options.target_language)) if options.health else None
        )
        self.snapshot_steps = {int(s) for s in options.snapshot_steps.split(",") if s.strip()}

    # ----------------------------------------------------------------------------------------------- set-up
    def prepare_run(self, given: set[str]) -> Path | None:
        """Check --out against --resume; with --resume, restore the run's own settings (see
        :meth:`~transformer.cli.training.options.TrainingConfig.restored`) and return the checkpoint to resume."""
        if self.options.resume and self.dist.main:
            for folder in (self.checkpoints, self.run / "snapshots"):
                for leftover in ckpt.remove_stale_temporaries(folder):
                    print(
                        f"removed {leftover.name}, a checkpoint left half-written when a run was killed",
                        file=sys.stderr,
                    )
        found = state.newest_state(self.run)
        if not self.options.resume:
            if found:
                raise SystemExit(
                    f"error: {self.run} already holds checkpoints; pass --resume to continue it or choose another --out"
                )
            if self.dist.main:
                self.run.mkdir(parents=True, exist_ok=True)
                ckpt.write_json(self.run / "args.json", self.options.to_json())
            return None
        if not found:
            raise SystemExit(f"error: --resume given but {self.checkpoints} holds no checkpoint")
        checkpoint, trainer = found
        self.options = self.options.restored(trainer["args"], given)
        return checkpoint

    def load_tokenizer(self, resume_from: Path | None) -> Tokenizer:
        options = self.options
        path = self.run / ckpt.TOKENIZER_FILE
        if resume_from is not None:
            return Tokenizer.load(resume_from / ckpt.TOKENIZER_FILE)
        if options.init_from is not None:
            tokenizer = Tokenizer.load(options.init_from / ckpt.TOKENIZER_FILE)
        elif options.spm is not None:
            tokenizer = Tokenizer.load(options.spm)
        elif self.dist.main:
            sentences = []
            for spec in map(CorpusSpec.parse, options.train):
                for source, target in read_corpus(spec, options.source_language, options.target_language):
                    sentences += [source, target]
            self.say(f"training a {options.vocab_size}-piece SentencePiece model on {len(sentences):,} sentences")
            tokenizer = train_tokenizer(sentences, options.vocab_size, seed=options.seed)
        if self.dist.main:
            tokenizer.save(path)
        self.dist.barrier()
        return Tokenizer.load(path)

    def load_examples(self) -> list[Example]:
        examples: list[Example] = []
        for spec in map(CorpusSpec.parse, self.options.train):
            pairs = read_corpus(spec, self.options.source_language, self.options.target_language)
            if self.options.case_augment:  # case_augmented refuses a fraction outside 0–1
                copies = case_augmented(
                    pairs, self.options.case_augment, seed=f"{self.options.seed}:{spec.prefix.name}"
                )
                self.say(f"{spec.prefix.name}: {len(copies):,} copies with capitalised source words")
                pairs = [*pairs, *copies]
            encoded = encode_pairs(pairs, self.tokenizer, max_tokens=self.options.max_tokens)
            self.say(f"{spec.prefix.name}: {len(encoded):,} of {len(pairs):,} pairs kept, ×{spec.upsample}")
            examples.extend(encoded * spec.upsample)
        return examples

    def start_from(self, path: Path) -> None:
        """Fine-tune: another checkpoint's weights (see :func:`~transformer.cli.training.state.load_initial_weights`);
        its training log (if it has one) opens this run's log, so the curves and the model's history stay whole."""
        self.progress = state.load_initial_weights(path, self.model, self.config, self.options.preset)
        parent_log = runs.training_log(path)
        if self.log.enabled and parent_log is not None and not self.log.path.exists():
            ckpt.write_atomically(self.log.path, runs.log_up_to(parent_log, self.progress.step))
        # Dev scores after this record may come from another dev set than those before it.
        dev = Path(self.options.dev).name if self.options.dev else None
        hours = self.progress.train_seconds / 3600
        self.log.write({"kind": "init", **self.progress.parent, "dev": dev, "train_hours": hours})
        self.say(f"initialised from {path} (step {self.progress.step:,}, {self.progress.tokens_seen:,} tokens)")

    # ----------------------------------------------------------------------------------------------- saving
    def meta(self) -> dict[str, Any]:
        progress = self.progress
        return {
            "step": progress.step,
            "epoch": progress.epoch,
            "tokens_seen": progress.tokens_seen,
            "train_hours": round(progress.train_seconds / 3600, 4),
            "cpu_hours": round(progress.cpu_seconds / 3600, 4),
            "processes": self.dist.world_size,
            "device": str(self.device.type),
            "data": self.options.train,
            **({"fine_tuned_from": progress.parent} if progress.parent else {}),
            "saved_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }

    def save(self) -> bool:
        """Write the run's checkpoint; False, with a message, when it cannot be written (a full disk): the previous
        checkpoint stays as it was, and training goes on to try again at the next save."""
        if not self.dist.main:
            return True
        try:
            state.save_state(
                self.run,
                self.model,
                self.config,
                self.tokenizer,
                self.meta(),
                self.optimizer,
                self.parameter_names,
                self.progress,
                self.options,
                self.device,
            )
        except OSError as error:
            kept = runs.run_checkpoints(self.run)
            previous = f"the previous one, {kept[-1].name}, is intact" if kept else "there is no earlier one"
            print(
                f"warning: could not save the checkpoint of step {self.progress.step} ({error.strerror or error}); "
                f"{previous}",
                file=sys.stderr,
            )
            return False
        return True

    def snapshot(self) -> None:
        if self.dist.main:
            weights = ckpt.state_dict_for_saving(self.model, torch.float16)
            path = self.run / "snapshots" / f"step-{self.progress.step:07d}"
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

        stream = made(self.progress.epoch, self.progress.position)
        for epoch, index, batch in prefetch(stream, 32) if self.device.type == "cuda" else stream:
            self.progress.epoch, self.progress.position = epoch, index + 1
            yield batch

    def train_step(self, micro_batches: list[Batch]) -> dict[str, float]:
        options, progress = self.options, self.progress
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
            with context, autocast(self.device, options.amp):
                loss, nll = training_losses(self.wrapped, batch, options.label_smoothing)
            (loss * scale).backward()
            loss_sum += float(loss.detach())
            nll_sum += float(nll.detach())
        grad_norm = nn.utils.clip_grad_norm_(
            self.model.parameters(), options.clip_norm if options.clip_norm > 0 else float("inf")
        )
        lr = learning_rate(
            progress.step + 1 - progress.schedule_start,
            self.config.d_model,
            options.warmup,
            options.lr_scale,
            cooldown=options.cooldown,
            last_step=options.max_steps - progress.schedule_start,
        )
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        progress.step += 1
        tokens = self.dist.sum(sum(b.num_tokens for b in micro_batches), self.device)
        progress.tokens_seen += int(tokens)
        return {
            "loss": self.dist.sum(loss_sum, self.device) / global_target_tokens,
            "nll": self.dist.sum(nll_sum, self.device) / global_target_tokens,
            "lr": lr,
            "grad_norm": float(grad_norm),
            "tokens": tokens,
        }

    def say(self, message: str) -> None:
        if self.dist.main:
            print(message, flush=True)

    def run_validation(self, started: float) -> None:
        if self.dist.main and self.dev_pairs:
            began = time.time()
            options = self.options
            result = validate(
                self.model,
                self.tokenizer,
                self.dev_pairs,
                options.dev_loss_sentences,
                options.dev_bleu_sentences,
                options.label_smoothing,
                options.amp,
                self.health_sample,
            )
            hours = self.progress.train_seconds / 3600
            self.log.write(
                {
                    "kind": "dev",
                    "step": self.progress.step,
                    "train_hours": hours,
                    "wall_seconds": time.time() - started,
                    **result,
                }
            )
            self.say(report(self.progress.step, result, time.time() - began))
        self.dist.barrier()

    def train(self) -> int:
        options, progress = self.options, self.progress
        stop = StopRequest()
        started = time.time()
        last_save = time.time()
        deadline = started + options.max_hours * 3600 if options.max_hours else math.inf
        self.say(
            f"{self.config.encoder_layers}+{self.config.decoder_layers} layers, d_model {self.config.d_model}, "
            f"{self.model.num_parameters():,} parameters, {len(self.examples):,} training pairs, "
            f"{self.dist.world_size} process(es) on {self.device}"
        )
        bar = progress_bar(options.progress, options.max_steps, progress.step, self.dist.main)
        stream = self.batches()
        window = LogWindow()
        interrupted, last_save_ok = False, True
        try:
            while progress.step < options.max_steps:
                step_start, cpu_start = time.time(), time.process_time()
                micro_batches = [next(stream) for _ in range(options.accumulate)]
                stats = self.train_step(micro_batches)
                progress.train_seconds += time.time() - step_start
                progress.cpu_seconds += time.process_time() - cpu_start
                window.steps.append(stats)
                if bar is not None:
                    bar.update(1)
                if progress.step % options.log_every == 0 or progress.step == options.max_steps:
                    self.log_training(window.record(progress, time.time() - started), bar)
                    window = LogWindow()
                if progress.step in self.snapshot_steps:
                    self.snapshot()
                if options.eval_every and progress.step % options.eval_every == 0:
                    self.run_validation(started)
                wants_stop = self.dist.any(stop.requested or time.time() > deadline, self.device)
                save_due = (time.time() - last_save) / 60 >= options.save_every_minutes or (
                    options.save_every_steps and progress.step % options.save_every_steps == 0
                )
                if wants_stop or self.dist.any(bool(save_due), self.device):
                    last_save_ok = self.save()
                    last_save = time.time()
                if wants_stop:
                    interrupted = stop.requested
                    break
        finally:
            stop.restore()
            if bar is not None:
                bar.close()
        return self.finish(interrupted, last_save_ok, started)

    def log_training(self, record: dict[str, Any], bar) -> None:
        """Write a training record to the log and show its summary (on the progress bar when there is one)."""
        self.log.write(record)
        summary = f"loss {record['loss']:.3f} lr {record['lr']:.2e} {record['tokens_per_second']:,.0f} tok/s"
        if bar is not None:
            bar.set_postfix_str(summary)
        else:
            self.say(f"step {record['step']} epoch {record['epoch']} {summary}")

    def finish(self, interrupted: bool, last_save_ok: bool, started: float) -> int:
        """After the loop: a finished run is validated and saved at its last step; 1 if that step has no checkpoint."""
        options, progress = self.options, self.progress
        saved = last_save_ok  # an interrupted run was saved as it stopped
        if not interrupted:
            if not options.eval_every or progress.step % options.eval_every:
                self.run_validation(started)
            kept = runs.run_checkpoints(self.run)
            saved = (kept and kept[-1].name == f"step-{progress.step:07d}") or self.save()
        if not saved:
            self.say(
                f"stopped at step {progress.step}, but its checkpoint could not be written: free some space and "
                "continue with --resume from the last checkpoint"
            )
            self.dist.close()
            return 1
        self.say(
            f"{'interrupted' if interrupted else 'stopped'} at step {progress.step}; checkpoint in {self.checkpoints}"
            + ("; continue with --resume" if progress.step < options.max_steps else "")
        )
        self.dist.close()
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    options, given = parse(argv)
    try:
        return Trainer(options, given).train()
    except (ckpt.CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
