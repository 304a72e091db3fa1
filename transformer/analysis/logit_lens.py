"""The logit lens for the decoder: each decoder layer's output sent straight through the final projection (the
shared embedding matrix, §3.4), as if it were the last layer, to see at which layer each output token becomes the
model's top prediction.

The paper's model is post-norm: every sub-layer ends with LayerNorm(x + Sublayer(x)), so each layer's output is
already normalised the way the last layer's is, and there is no extra final LayerNorm to apply. A pre-norm model
(M2M100/NLLB) normalises only once, after its last layer: there each layer's output goes through that final
LayerNorm before the projection, as the last layer's does (nostalgebraist's original lens on GPT-2). The
translation is teacher-forced: position t reads ``<s>`` and the tokens before it and is scored on the token the model
wrote there (``</s>`` at the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import BOS_ID, EOS_ID


@dataclass
class LogitLens:
    """``tokens`` [T] the tokens written (ending with ``</s>``); per decoder layer and position: ``probability``
    [L, T] of the written token, ``rank`` [L, T] (0 = the top prediction), ``top`` [L, T] the top prediction."""

    tokens: list[str]
    probability: np.ndarray
    rank: np.ndarray
    top: list[list[str]]

    def settled(self) -> list[int | None]:
        """Per position, the first layer (0-based) from which the written token is the top prediction in every later
        layer; None where even the last layer does not rank it first (cannot happen for a greedy translation)."""
        found: list[int | None] = []
        for column in (self.rank == 0).T:
            layer = len(column)
            while layer > 0 and column[layer - 1]:
                layer -= 1
            found.append(layer if layer < len(column) else None)
        return found


@torch.no_grad()
def logit_lens(loaded: LoadedCheckpoint, source_ids: Sequence[int], output_ids: Sequence[int]) -> LogitLens:
    """The lens over one translation: ``source_ids`` ending with ``</s>``, ``output_ids`` without ``<s>``/``</s>``."""
    model = loaded.model
    device = next(model.parameters()).device
    source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
    target = torch.tensor([[BOS_ID, *output_ids]], dtype=torch.long, device=device)
    written = torch.tensor([*output_ids, EOS_ID], dtype=torch.long, device=device)
    memory, _ = model.encode(source)
    source_mask, self_mask = model.source_mask(source), model.target_mask(target)
    x = model.embed(target, "decoder")
    states = []
    for layer in model.decoder_layers:
        x, _, _ = layer(x, memory, self_mask, source_mask)
        states.append(x[0] if model.decoder_norm is None else model.decoder_norm(x[0]))
    log_probs = torch.log_softmax(model.project(torch.stack(states)).float(), dim=-1)  # [L, T, V]
    chosen = log_probs.gather(-1, written.expand(len(states), -1)[..., None])[..., 0]
    rank = (log_probs > chosen[..., None]).sum(-1)
    top = log_probs.argmax(-1).cpu().numpy()
    pieces = loaded.tokenizer.pieces
    return LogitLens(
        tokens=pieces(written.tolist()),
        probability=chosen.exp().cpu().numpy(),
        rank=rank.cpu().numpy(),
        top=[pieces(row) for row in top],
    )
