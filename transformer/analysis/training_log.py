"""A model's own training log read against the paper: the learning rate it recorded beside §5.3's formula, and what
§5.4's label smoothing makes of its losses.

The trainer's loss is label-smoothed: the cross-entropy with the target q = (1 − ε)·one-hot + ε·uniform over all V
tokens of the vocabulary (:func:`transformer.paper.loss.label_smoothed_losses`, as
``F.cross_entropy(label_smoothing=ε)``), so q gives the right token 1 − ε + ε/V and every other token ε/V. No model can
bring that loss below the entropy of q (cross-entropy H(q, p) = H(q) + KL(q ‖ p) ≥ H(q)), and the model that reaches
it, p = q, still puts only 1 − ε + ε/V on the right token: its negative log-likelihood, and so its perplexity, stays
above the zero an unsmoothed perfect model reaches. That is the paper's "hurts perplexity, as the model learns to be
more unsure".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from transformer.paper.schedule import Schedule


def smoothed_target(epsilon: float, vocab_size: int) -> tuple[float, float]:
    """The label-smoothed target (§5.4) as the trainer forms it: (q of the right token, q of each other token)."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"label smoothing ε must lie in [0, 1], not {epsilon}")
    if vocab_size < 2:
        raise ValueError(f"a vocabulary needs at least 2 tokens, not {vocab_size}")
    return 1.0 - epsilon + epsilon / vocab_size, epsilon / vocab_size


@dataclass(frozen=True)
class SmoothingFloor:
    """The best any model can do under label smoothing ε over V tokens, in nats per target token."""

    epsilon: float
    vocab_size: int
    loss: float  # the least label-smoothed loss: the entropy of the smoothed target
    nll: float  # the negative log-likelihood of the model that reaches it (p = q)

    @property
    def perplexity(self) -> float:
        """exp(NLL) of that model: 1 without smoothing, above 1 with it."""
        return math.exp(self.nll)


def smoothing_floor(epsilon: float, vocab_size: int) -> SmoothingFloor:
    """The entropy of the smoothed target, H(q) = −q₁·ln q₁ − (V − 1)·q₀·ln q₀ (the label-smoothed loss's floor),
    and −ln q₁, the NLL of the model p = q that reaches it (q₁: the right token's share, q₀: each other token's)."""
    right, other = smoothed_target(epsilon, vocab_size)

    def share_of_entropy(p: float) -> float:  # p · ln(1/p), 0 for p = 0
        return p * math.log(1 / p) if p > 0 else 0.0

    entropy = share_of_entropy(right) + (vocab_size - 1) * share_of_entropy(other)
    return SmoothingFloor(epsilon=epsilon, vocab_size=vocab_size, loss=entropy, nll=math.log(1 / right))


def restarts(records: list[dict]) -> list[int]:
    """The steps at which the log's run continued from a checkpoint (``kind: init`` records): each continuation
    started its learning-rate schedule again."""
    return sorted(r["step"] for r in records if r.get("kind") == "init" and isinstance(r.get("step"), int))


def recorded_rates(records: list[dict]) -> tuple[list[int], list[float]]:
    """The training records' steps and the learning rate each recorded (the rate of its last step), by step."""
    rows = sorted(
        (r for r in records if r.get("kind") == "train" and isinstance(r.get("lr"), (int, float))),
        key=lambda r: r["step"],
    )
    return [r["step"] for r in rows], [float(r["lr"]) for r in rows]


@dataclass(frozen=True)
class ScheduleCheck:
    """The recorded learning rate of one schedule's span of the log next to §5.3's formula for the same steps."""

    steps: tuple[int, ...]  # the log's steps (since its first run began)
    recorded: tuple[float, ...]
    formula: tuple[float, ...]

    @property
    def largest_relative_gap(self) -> float:
        """max |recorded − formula| / formula over the span (NaN for an empty span)."""
        gaps = [abs(r - f) / f for r, f in zip(self.recorded, self.formula, strict=True) if f > 0]
        return max(gaps) if gaps else math.nan


def schedule_check(records: list[dict], schedule: Schedule, start: int = 0) -> ScheduleCheck:
    """The training records from step ``start`` on (up to the next restart) with §5.3's rate for each: the trainer
    sets the rate of step s to ``schedule.rate(s − start)``, ``start`` being where the checkpoint's own schedule
    began (0, or the step it was fine-tuned from)."""
    later = [step for step in restarts(records) if step > start]
    end = later[0] if later else math.inf
    steps, rates = recorded_rates(records)
    span = [(step, rate) for step, rate in zip(steps, rates, strict=True) if start < step <= end]
    return ScheduleCheck(
        steps=tuple(step for step, _ in span),
        recorded=tuple(rate for _, rate in span),
        formula=tuple(schedule.rate(step - start) for step, _ in span),
    )
