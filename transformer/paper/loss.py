"""The training loss (§5.4): label-smoothed cross-entropy with ε_ls, and a CPU form of it that never holds the whole
(tokens × vocabulary) logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def label_smoothed_losses(logits: Tensor, target: Tensor, label_smoothing: float) -> tuple[Tensor, Tensor]:
    """Per-position label-smoothed loss (§5.4, ε_ls) and negative log-likelihood: logits (…, V), target (…) →
    two (…) tensors. The loss is (1 − ε)·NLL + ε·(cross-entropy with the uniform distribution over V), as in
    ``F.cross_entropy(label_smoothing=ε)``."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    smooth = -log_probs.mean(dim=-1)
    return (1.0 - label_smoothing) * nll + label_smoothing * smooth, nll


def projected_label_smoothed_loss(
    hidden: Tensor, weight: Tensor, target: Tensor, label_smoothing: float, block_rows: int | None = None
) -> tuple[Tensor, Tensor]:
    """Summed :func:`label_smoothed_losses` of the logits ``hidden`` (N, D) · ``weight`` (V, D)ᵀ for ``target`` (N,).

    On the CPU without autocast the projection and the loss run in blocks of rows and the gradients are formed on
    the way (:class:`_ProjectedLoss`), so the (N, V) logits, the largest tensors of a training step, are never held
    whole (``block_rows`` rows at a time; default: about 8 MB of logits); the summed NLL is then a value without
    gradient. Elsewhere: the plain product and loss."""
    if hidden.device.type != "cpu" or torch.is_autocast_enabled("cpu") or hidden.dtype != torch.float32:
        loss, nll = label_smoothed_losses(F.linear(hidden, weight), target, label_smoothing)
        return loss.sum(), nll.sum()
    rows = block_rows or max(1, 2**21 // weight.size(0))
    return _ProjectedLoss.apply(hidden, weight, target, label_smoothing, rows, torch.is_grad_enabled())


class _ProjectedLoss(torch.autograd.Function):
    """Σ label-smoothed loss and Σ NLL of hidden · weightᵀ, gradients computed block by block in the forward pass:
    d loss / d logits = softmax − (1 − ε)·one-hot − ε/V, then d hidden = that · weight and d weight += thatᵀ · hidden.
    The backward pass scales them by the loss's gradient (a scalar). Without grad mode only the sums are formed."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, smoothing: float, rows: int, grad_mode: bool):
        count, vocab = hidden.size(0), weight.size(0)
        need_hidden, need_weight = grad_mode and ctx.needs_input_grad[0], grad_mode and ctx.needs_input_grad[1]
        grad_hidden = torch.empty_like(hidden) if need_hidden else None
        grad_weight = torch.zeros_like(weight) if need_weight else None
        loss = hidden.new_zeros(())
        nll = hidden.new_zeros(())
        buffer = hidden.new_empty(min(rows, count), vocab)
        for start in range(0, count, rows):
            block, block_target = hidden[start : start + rows], target[start : start + rows]
            logits = torch.mm(block, weight.t(), out=buffer[: block.size(0)])
            log_z = torch.logsumexp(logits, dim=-1)
            block_nll = log_z - logits.gather(1, block_target[:, None]).squeeze(1)
            loss += ((1.0 - smoothing) * block_nll + smoothing * (log_z - logits.mean(dim=-1))).sum()
            nll += block_nll.sum()
            if not (need_hidden or need_weight):
                continue
            grad = logits.sub_(log_z[:, None]).exp_().sub_(smoothing / vocab)  # softmax − ε/V, in place
            grad[torch.arange(block.size(0)), block_target] -= 1.0 - smoothing
            if need_hidden:
                torch.mm(grad, weight, out=grad_hidden[start : start + rows])
            if need_weight:
                grad_weight.addmm_(grad.t(), block)
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss: Tensor, _grad_nll: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        return (
            None if grad_hidden is None else grad_hidden * grad_loss,
            None if grad_weight is None else grad_weight * grad_loss,
            None,
            None,
            None,
            None,
        )
