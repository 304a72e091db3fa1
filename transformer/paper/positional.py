"""Positional encoding (§3.5): the sinusoids PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(pos /
10000^(2i/d_model)), interleaved as the paper writes them, and the table a model adds to its embeddings, including
the first position and offset of models that descend from the paper's."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer.paper.config import ModelConfig


def sinusoidal_positional_encoding(num_positions: int, d_model: int) -> Tensor:
    """§3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (D/2,)
    return _interleaved_sinusoids(
        torch.arange(num_positions, dtype=torch.float64), 1.0 / torch.pow(10000.0, two_i / d_model)
    )


def positional_table(config: ModelConfig) -> Tensor:
    """The model's positional encodings (max_positions, D), sines at even and cosines at odd dimensions.

    "paper" is §3.5's table. "tensor2tensor" is the table of fairseq and of Hugging Face's M2M100/NLLB: frequencies
    10000^(-i/(D/2-1)), with the rows starting at ``position_offset`` (M2M100 numbers the first token 2). Models
    that store sines and cosines in two halves are opened with their width permuted into this order
    (:mod:`transformer.formats.hub`), so one layout serves every model."""
    positions = torch.arange(config.max_positions, dtype=torch.float64) + config.position_offset
    if config.positional == "paper":
        two_i = torch.arange(0, config.d_model, 2, dtype=torch.float64)
        return _interleaved_sinusoids(positions, 1.0 / torch.pow(10000.0, two_i / config.d_model))
    half = config.d_model // 2
    # fairseq computes these frequencies and angles in float32; so does this table, to match it bit for bit
    frequencies = torch.exp(torch.arange(half).float() * -(math.log(10000) / (half - 1)))
    angle = positions.float().unsqueeze(1) * frequencies.unsqueeze(0)
    encoding = torch.empty(config.max_positions, config.d_model)
    encoding[:, 0::2], encoding[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return encoding


def _interleaved_sinusoids(positions: Tensor, frequencies: Tensor) -> Tensor:
    angle = positions.unsqueeze(1) * frequencies  # (P, D/2)
    encoding = torch.empty(len(positions), 2 * len(frequencies), dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angle)
    encoding[:, 1::2] = torch.cos(angle)
    return encoding.float()
