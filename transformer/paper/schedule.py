"""The learning-rate schedule of §5.3 (with an optional linear cool-down), shared by the trainer and its plots."""

from __future__ import annotations

from dataclasses import dataclass


def learning_rate(
    step: int, d_model: int, warmup: int, scale: float = 1.0, cooldown: int = 0, last_step: int = 0
) -> float:
    """§5.3: lrate = d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5), times ``scale``.

    With ``cooldown`` > 0 the rate is also multiplied by a factor that falls linearly from 1 to 1/cooldown over the
    ``cooldown`` steps ending at ``last_step`` (an annealing not in the paper, for a run of known length)."""
    step = max(step, 1)
    rate = scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
    if cooldown > 0:
        rate *= min(1.0, max(last_step - step + 1, 0) / cooldown)
    return rate


@dataclass(frozen=True)
class Schedule:
    """One run's schedule as a value (its arguments to :func:`learning_rate`), for the plots and checks that draw or
    test it. Steps count from the schedule's own start: a fine-tuned checkpoint's schedule begins again at 1."""

    d_model: int
    warmup: int
    scale: float = 1.0
    cooldown: int = 0
    last_step: int = 0  # where the cool-down ends (0: no cool-down)

    def rate(self, step: int) -> float:
        return learning_rate(step, self.d_model, self.warmup, self.scale, self.cooldown, self.last_step)

    @property
    def peak(self) -> float:
        """The rate at the end of the warm-up, without the cool-down (the curve's corner)."""
        return learning_rate(self.warmup, self.d_model, self.warmup, self.scale)

    @property
    def corners(self) -> list[int]:
        """The steps where the curve bends: the warm-up's end, the cool-down's first and last step."""
        return [self.warmup] + ([self.last_step - self.cooldown + 1, self.last_step] if self.cooldown > 0 else [])
