"""Gradient attributions beside attention: how much each source token and each token already written moved the
model's score of one output token.

Attention says where a head looked; an attribution says what the output depends on. For one output position the
score is the log-probability of the token written there (teacher-forced, so exactly the translation shown), or, in
the contrastive mode, that log-probability minus an alternative's ("why this word and not that one", Yin & Neubig
2022). Its gradient with respect to the input embeddings (the token embeddings · √d_model plus the positional
encoding, as the model adds them) is taken with captum (an optional dependency, ``pip install captum``):

- **saliency**: the gradient's L2 norm per token (Simonyan et al. 2014), how sensitive the score is to it;
- **input × gradient**: the embedding times the gradient, summed over its dimensions (signed);
- **integrated gradients** (Sundararajan et al. 2017): the gradient averaged along a straight path from a baseline
  in which every token embedding is zero (only the positional encoding is left) to the input, times the input's
  difference from the baseline. Per token the dimensions are summed (signed); over all tokens the attributions add
  up to the score's change from the baseline to the input (completeness), which ``delta`` reports the error of.

Scores come per source token (``</s>`` included) and per target-prefix token (``<s>`` and the tokens before the
position); :meth:`Attribution.source_share` is the part of the total absolute attribution that comes from the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID

METHODS = ("saliency", "input_x_gradient", "integrated_gradients")
IG_STEPS = 128  # integration steps: on the shipped model completeness then holds to about 0.5% of the score change


class AttributionUnavailable(RuntimeError):
    """captum is not installed."""


@dataclass
class Attribution:
    method: str
    position: int  # output position (0 = the first output token)
    token: int  # the token written there
    alternative: int | None  # the contrasted token, if any
    score: float  # the explained score: log p(token), minus log p(alternative) when contrastive
    source: np.ndarray  # [source tokens] (</s> included)
    prefix: np.ndarray  # [position + 1]: <s> and the output tokens before the position
    delta: float | None = None  # integrated gradients: attributions' sum minus the score's change from the baseline

    def source_share(self) -> float:
        """Part of the total absolute attribution on the source tokens (the rest is on the prefix)."""
        source, prefix = np.abs(self.source).sum(), np.abs(self.prefix).sum()
        total = source + prefix
        return float(source / total) if total > 0 else 0.0


def captum_attr():
    try:
        from captum import attr
    except ImportError as error:  # an optional dependency
        raise AttributionUnavailable("gradient attributions need captum: pip install captum") from error
    return attr


def _inputs(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int], position: int):
    device = next(model.parameters()).device
    source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
    prefix = torch.tensor([[BOS_ID, *output_ids[:position]]], dtype=torch.long, device=device)
    return source, prefix


def log_probabilities(
    model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int], position: int
) -> torch.Tensor:
    """The model's log-probabilities [V] at an output position (what it could write there)."""
    source, prefix = _inputs(model, source_ids, output_ids, position)
    with torch.no_grad():
        memory, _ = model.encode(source)
        hidden, _, _ = model.decode(prefix, memory, model.source_mask(source))
        return torch.log_softmax(model.project(hidden[0, -1]).float(), dim=-1)


def attribute(
    model: Transformer,
    source_ids: Sequence[int],
    output_ids: Sequence[int],
    position: int,
    method: str = "integrated_gradients",
    alternative: int | None = None,
    steps: int = IG_STEPS,
) -> Attribution:
    """Attribute the score of the token written at ``position`` (0-based, into ``output_ids``) to the source and
    prefix tokens with ``method``; with ``alternative``, the score is the margin over that token."""
    if method not in METHODS:
        raise ValueError(f"unknown attribution method {method!r}; choose one of {', '.join(METHODS)}")
    if not 0 <= position < len(output_ids):
        raise ValueError(f"output position {position} outside 0–{len(output_ids) - 1}")
    attr = captum_attr()
    model.eval()
    source, prefix = _inputs(model, source_ids, output_ids, position)
    token = int(output_ids[position])

    def score(source_embedded: torch.Tensor, prefix_embedded: torch.Tensor) -> torch.Tensor:
        rows = source_embedded.shape[0]
        ids, written = source.expand(rows, -1), prefix.expand(rows, -1)
        memory, _ = model.encode(ids, embedded=source_embedded)
        hidden, _, _ = model.decode(written, memory, model.source_mask(ids), embedded=prefix_embedded)
        log_p = torch.log_softmax(model.project(hidden[:, -1]).float(), dim=-1)
        chosen = log_p[:, token]
        return chosen if alternative is None else chosen - log_p[:, alternative]

    stacks = ((source, "encoder"), (prefix, "decoder"))
    inputs = tuple(model.embed(ids, stack).detach().requires_grad_() for ids, stack in stacks)
    delta = None
    if method == "saliency":
        gradients = attr.Saliency(score).attribute(inputs, abs=False)
        per_token = [g[0].norm(dim=-1) for g in gradients]
    elif method == "input_x_gradient":
        per_token = [a[0].sum(dim=-1) for a in attr.InputXGradient(score).attribute(inputs)]
    else:
        # every token embedding zero: what each stack's positions alone give it
        baselines = tuple(
            model.embedded(torch.zeros_like(x), stack).detach() for x, (_, stack) in zip(inputs, stacks, strict=True)
        )
        integrated = attr.IntegratedGradients(score)
        while True:  # more steps until the attributions add up to the score's change within 2% (or 4× the steps)
            found, error = integrated.attribute(
                inputs, baselines=baselines, n_steps=steps, return_convergence_delta=True
            )
            delta = float(error.abs().max())
            total = float(sum(a.detach().sum() for a in found))
            if delta <= 0.02 * abs(total) + 1e-3 or steps >= 4 * IG_STEPS:
                break
            steps *= 2
        per_token = [a[0].sum(dim=-1) for a in found]
    with torch.no_grad():
        value = float(score(*inputs)[0])
    return Attribution(
        method,
        position,
        token,
        alternative,
        value,
        per_token[0].detach().cpu().numpy(),
        per_token[1].detach().cpu().numpy(),
        delta,
    )
