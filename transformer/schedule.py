"""The learning-rate schedule of §5.3 (with an optional linear cool-down), shared by the trainer and its plots."""

from __future__ import annotations


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
