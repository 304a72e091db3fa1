"""§5.4's residual dropout, with a mask drawn from fewer random bits on the CPU."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Dropout(nn.Dropout):
    """nn.Dropout (§5.4, P_drop) that draws its mask from fewer random bits on the CPU.

    PyTorch's CPU dropout draws one Bernoulli sample per element from its Mersenne Twister, the costliest part of a
    dropout layer; here one 64-bit draw gives the mask of four elements (15 random bits each), so an element is
    dropped with probability round(p·2¹⁵)/2¹⁵ (0.100006 for p = 0.1). Same generator (``torch.manual_seed`` and the
    trainer's saved random state apply), same scaling by 1/(1-p), and nn.Dropout itself on other devices, at p = 0 or
    1 and when ``cheap_mask`` is False.
    """

    cheap_mask = True  # class-wide switch (False: nn.Dropout's per-element Bernoulli sampling)

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and self.cheap_mask and 0.0 < self.p < 1.0 and x.device.type == "cpu"):
            return super().forward(x)
        count = x.numel()
        bits = torch.empty((count + 3) // 4, dtype=torch.int64).random_().view(torch.int16)[:count].view(x.shape)
        # 1 where kept, 0 where dropped, made in x's dtype directly (a boolean mask would be converted at every use)
        mask = torch.ge(bits.bitwise_and_(0x7FFF), round(self.p * 2**15), out=torch.empty_like(x))
        return x * mask.mul_(1.0 / (1.0 - self.p))  # autograd keeps the mask for the backward pass
