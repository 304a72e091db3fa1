"""A model trained live in class: the paper's Transformer, made tiny, learning to copy, reverse or sort a string.

The task is small enough for a ``d_model`` = 64, two-layer :class:`~transformer.paper.model.Transformer` to learn it on
two CPU cores within the page's 90-second budget (``benchmarks/toy_training.py`` measures it), while :func:`train` hands
back a :class:`ToySnapshot` every few steps:
the training loss, the exact-match accuracy of greedy decoding (:func:`transformer.search.decode.greedy_decode`) on a
fixed held-out set, and the attention of every head on one fixed probe example. A class watches the cross-attention
heads snap onto the diagonal (copy) or the anti-diagonal (reverse). :class:`ToySettings` also switches the paper's
ablations: one head instead of eight (§3.2.2), no positional encoding (§3.5: without it the encoder is
permutation-equivariant, so copy and reverse cannot be learned while sort, which depends only on the multiset of
symbols, can) and no 1/√d_k scaling (§3.2.1).

Tokens: the pad/unk/bos/eos ids 0–3 of every :class:`~transformer.paper.config.ModelConfig`, then one id per symbol of
the alphabet. A source is ``x1 … xn </s>``; the decoder reads ``<s> y1 … yn`` and predicts ``y1 … yn </s>``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from transformer.paper.config import ModelConfig
from transformer.paper.model import MultiHeadAttention, Transformer
from transformer.paper.schedule import learning_rate
from transformer.search.decode import greedy_decode

TASKS = ("copy", "reverse", "sort")
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")  # ids 0–3, as every ModelConfig numbers them
FIRST_SYMBOL = len(SPECIAL_TOKENS)
PROBE_SEED_OFFSET = 1_000_003  # the held-out set and the probe are drawn apart from the training batches
HELD_OUT_SEED_OFFSET = 2_000_003
# torch's intra-op threads while training: tiny operations gain little from a second thread, and threads that wait
# for each other at the end of every operation while other processes hold the cores slow a step down many times
# (benchmarks/toy_training.py --threads).
TRAINING_THREADS = 1


@dataclass(frozen=True)
class ToySettings:
    """One live training run: the task, the model's shape, the ablation switches and the budget.

    ``max_steps`` and ``max_seconds`` (wall clock since the start, including whatever the caller does between
    snapshots; None: no time limit) bound the run; it also ends once the held-out exact match reaches
    ``stop_at_accuracy`` (None: never). The optimiser is §5.3's: Adam (β₁ 0.9, β₂ 0.98, ε 10⁻⁹) with ``warmup``
    steps of linear warm-up and inverse-square-root decay, times ``lr_scale``."""

    task: str = "reverse"
    heads: int = 8
    positional_encoding: bool = True
    scaled: bool = True
    seed: int = 0
    max_steps: int = 3000
    max_seconds: float | None = 90.0
    stop_at_accuracy: float | None = 1.0
    alphabet: str = "0123456789"
    min_length: int = 4
    max_length: int = 10
    d_model: int = 64
    d_ff: int = 256
    layers: int = 2  # encoder layers and decoder layers each
    dropout: float = 0.0
    label_smoothing: float = 0.1  # §5.4's ε_ls: it also keeps the climb steady
    batch_size: int = 64
    warmup: int = 200
    lr_scale: float = 0.5
    snapshot_every: int = 25
    held_out_size: int = 200

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose one of {', '.join(TASKS)}")
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError(
                f"lengths must satisfy 1 ≤ min_length ≤ max_length, got {self.min_length}…{self.max_length}"
            )
        if len(set(self.alphabet)) != len(self.alphabet) or len(self.alphabet) < 2:
            raise ValueError("the alphabet needs at least two different symbols, each once")
        if self.max_steps < 1 or self.snapshot_every < 1 or self.batch_size < 1 or self.held_out_size < 1:
            raise ValueError("max_steps, snapshot_every, batch_size and held_out_size must be positive")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError("max_seconds must be positive (or None)")
        self.model_config()  # heads must divide d_model, and so on

    def replace(self, **changes: Any) -> ToySettings:
        return dataclasses.replace(self, **changes)

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            vocab_size=FIRST_SYMBOL + len(self.alphabet),
            d_model=self.d_model,
            num_heads=self.heads,
            d_ff=self.d_ff,
            encoder_layers=self.layers,
            decoder_layers=self.layers,
            dropout=self.dropout,
            max_positions=self.max_length + 2,  # x1 … xn </s> and <s> y1 … yn, n ≤ max_length
        )

    def tokens(self, ids: list[int]) -> list[str]:
        """The symbols (or special tokens) of ``ids``."""
        return [SPECIAL_TOKENS[i] if i < FIRST_SYMBOL else self.alphabet[i - FIRST_SYMBOL] for i in ids]


def target_of(task: str, symbols: list[int]) -> list[int]:
    """What the model must write for the input ``symbols`` (ids): the same, reversed or sorted."""
    if task == "copy":
        return list(symbols)
    if task == "reverse":
        return symbols[::-1]
    if task == "sort":
        return sorted(symbols)
    raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")


def random_inputs(settings: ToySettings, count: int, rng: np.random.Generator) -> list[list[int]]:
    """``count`` inputs of random length in [min_length, max_length] and uniformly drawn symbols (ids)."""
    lengths = rng.integers(settings.min_length, settings.max_length + 1, size=count)
    return [(rng.integers(0, len(settings.alphabet), size=int(n)) + FIRST_SYMBOL).tolist() for n in lengths]


@dataclass
class ToyBatch:
    """Padded tensors for one teacher-forced pass: source (B, S), decoder input and expected output (B, T)."""

    source: Tensor
    target_input: Tensor
    target_output: Tensor
    targets: list[list[int]]  # the expected outputs without </s>


def make_batch(settings: ToySettings, inputs: list[list[int]]) -> ToyBatch:
    config = settings.model_config()
    targets = [target_of(settings.task, symbols) for symbols in inputs]
    source_length = max(map(len, inputs)) + 1
    target_length = max(map(len, targets)) + 1
    source = torch.full((len(inputs), source_length), config.pad_id, dtype=torch.long)
    target_input = torch.full((len(inputs), target_length), config.pad_id, dtype=torch.long)
    target_output = torch.full((len(inputs), target_length), config.pad_id, dtype=torch.long)
    for row, (symbols, target) in enumerate(zip(inputs, targets, strict=True)):
        source[row, : len(symbols) + 1] = torch.tensor([*symbols, config.eos_id])
        target_input[row, : len(target) + 1] = torch.tensor([config.bos_id, *target])
        target_output[row, : len(target) + 1] = torch.tensor([*target, config.eos_id])
    return ToyBatch(source, target_input, target_output, targets)


def held_out_inputs(settings: ToySettings) -> list[list[int]]:
    """The fixed evaluation set: the same for every run of the same task lengths, alphabet and seed."""
    rng = np.random.default_rng(settings.seed + HELD_OUT_SEED_OFFSET)
    return random_inputs(settings, settings.held_out_size, rng)


def probe_input(settings: ToySettings) -> list[int]:
    """The example whose attention is drawn: the longest allowed length, each symbol at most once where the
    alphabet allows (so that every output token has a single place in the input to look at)."""
    rng = np.random.default_rng(settings.seed + PROBE_SEED_OFFSET)
    length = settings.max_length
    distinct = length <= len(settings.alphabet)
    symbols = rng.choice(len(settings.alphabet), size=length, replace=not distinct) + FIRST_SYMBOL
    return symbols.tolist()


def batches(settings: ToySettings, avoid: Collection[tuple[int, ...]] = frozenset()) -> Iterator[ToyBatch]:
    """Endless training batches from the seed, never holding an input of ``avoid`` (the held-out set)."""
    rng = np.random.default_rng(settings.seed)
    while True:
        inputs = [
            symbols for symbols in random_inputs(settings, settings.batch_size, rng) if tuple(symbols) not in avoid
        ]
        if inputs:
            yield make_batch(settings, inputs)


def build_model(settings: ToySettings) -> Transformer:
    """The project's Transformer in the settings' shape, initialised from the seed (without touching the global
    random state), with the ablations applied to this instance only."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = Transformer(settings.model_config())
    if not settings.positional_encoding:
        model.positional_encoding.zero_()  # a buffer of this instance: Embedding·√d_model alone reaches the layers
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.scaled = settings.scaled
    return model


@dataclass
class ToySnapshot:
    """One moment of a run, in the spirit of :class:`transformer.analysis.timeline.TimelinePoint` (step, label,
    attention, metrics): ``attention`` holds the probe's ``"cross"`` [L, H, T, S] and ``"encoder"`` [L, H, S, S]
    maps; ``metrics`` the mean training loss per token since the previous snapshot (``loss``, from the first step
    on), the held-out exact match and token accuracy (fractions) and the learning rate."""

    step: int
    seconds: float
    label: str
    attention: dict[str, np.ndarray]
    metrics: dict[str, float]


@dataclass
class ToyRun:
    """A run's settings, the probe's tokens (source ``x1 … xn </s>``; the output tokens each decoder position
    predicts, ``y1 … yn </s>``) and its snapshots so far. ``finished``: it ended by its own budget or its target
    accuracy, not by being interrupted."""

    settings: ToySettings
    source_tokens: list[str]
    output_tokens: list[str]
    snapshots: list[ToySnapshot] = field(default_factory=list)
    finished: bool = False

    @property
    def last(self) -> ToySnapshot | None:
        return self.snapshots[-1] if self.snapshots else None


def new_run(settings: ToySettings) -> ToyRun:
    probe = probe_input(settings)
    return ToyRun(
        settings,
        settings.tokens([*probe, settings.model_config().eos_id]),
        settings.tokens([*target_of(settings.task, probe), settings.model_config().eos_id]),
    )


@torch.no_grad()
def evaluate(model: Transformer, settings: ToySettings, held_out: ToyBatch) -> dict[str, float]:
    """Greedy decoding of the held-out inputs: the fraction written exactly right, and of the expected symbols the
    fraction written in the right place (an output too short counts its missing symbols wrong)."""
    was_training = model.training
    model.eval()
    outputs = greedy_decode(model, held_out.source, max_extra_tokens=1)
    model.train(was_training)
    exact = sum(output == target for output, target in zip(outputs, held_out.targets, strict=True))
    right = sum(
        sum(a == b for a, b in zip(output, target, strict=False))
        for output, target in zip(outputs, held_out.targets, strict=True)
    )
    total = sum(map(len, held_out.targets))
    return {"exact_match": exact / len(outputs), "token_accuracy": right / total}


@torch.no_grad()
def probe_attention(model: Transformer, probe: ToyBatch) -> dict[str, np.ndarray]:
    """One teacher-forced pass over the probe (with its correct output): [L, H, T, S] cross-attention and
    [L, H, S, S] encoder self-attention of its single example."""
    was_training = model.training
    model.eval()
    output = model(probe.source, probe.target_input, need_weights=True)
    model.train(was_training)
    return {"cross": output.cross_attention[0].numpy(), "encoder": output.encoder_attention[0].numpy()}


def train(settings: ToySettings, should_stop: Callable[[], bool] | None = None) -> Iterator[ToySnapshot]:
    """Train a fresh model, yielding a snapshot before the first step, every ``snapshot_every`` steps and at the
    end. The run ends at ``max_steps``, after ``max_seconds``, once the held-out exact match reaches
    ``stop_at_accuracy``, or when ``should_stop()`` says so (checked after every step)."""
    model = build_model(settings)
    model.train()
    config = model.config
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    held_inputs = held_out_inputs(settings)
    held_out = make_batch(settings, held_inputs)
    probe = make_batch(settings, [probe_input(settings)])
    stream = batches(settings, avoid={tuple(symbols) for symbols in held_inputs})
    start = time.perf_counter()
    loss_sum, token_count = 0.0, 0

    def snapshot(step: int, rate: float) -> ToySnapshot:
        nonlocal loss_sum, token_count
        metrics = evaluate(model, settings, held_out)
        if token_count:  # none before the first step
            metrics["loss"] = loss_sum / token_count
        metrics["learning_rate"] = rate
        loss_sum, token_count = 0.0, 0
        seconds = time.perf_counter() - start
        return ToySnapshot(step, seconds, f"{step} · {seconds:.1f} s", probe_attention(model, probe), metrics)

    last = snapshot(0, 0.0)
    yield last
    for step in range(1, settings.max_steps + 1):
        rate = learning_rate(step, config.d_model, settings.warmup, settings.lr_scale)
        for group in optimizer.param_groups:
            group["lr"] = rate
        batch = next(stream)
        tokens = int((batch.target_output != config.pad_id).sum())
        output = model(
            batch.source,
            batch.target_input,
            target_output=batch.target_output,
            label_smoothing=settings.label_smoothing,
        )
        optimizer.zero_grad(set_to_none=True)
        (output.loss / tokens).backward()
        optimizer.step()
        loss_sum += float(output.loss.detach())
        token_count += tokens
        out_of_time = settings.max_seconds is not None and time.perf_counter() - start >= settings.max_seconds
        stopped = should_stop is not None and should_stop()
        if step % settings.snapshot_every == 0 or step == settings.max_steps or out_of_time or stopped:
            last = snapshot(step, rate)
            yield last
            target = settings.stop_at_accuracy
            if out_of_time or stopped or (target is not None and last.metrics["exact_match"] >= target):
                return


@contextlib.contextmanager
def torch_threads(count: int | None = TRAINING_THREADS) -> Iterator[None]:
    """torch's intra-op threads for the block, then the previous setting again (None: leave it). In PyTorch's
    OpenMP build the setting is the calling thread's: a page's script thread leaves other sessions' as they are."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def run_to_end(settings: ToySettings, threads: int | None = TRAINING_THREADS) -> ToyRun:
    """A whole run at once (scripts and tests), with ``threads`` intra-op threads."""
    run = new_run(settings)
    with torch_threads(threads):
        run.snapshots.extend(train(settings))
    run.finished = True
    return run
