"""A Hugging Face model's weights as this project's: their names, the permutation of the width (the half-split sines and
cosines of both families to the paper's interleaved layout, §3.5) and the vocabulary reordered so that ids 0–3 are
the ones the project relies on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer.formats.hub.families import HubError
from transformer.paper.config import ModelConfig
from transformer.paper.tokenizer import BOS_ID


def interleaving(d_model: int) -> torch.Tensor:
    """Index k of the interleaved (paper) layout ← index ``interleaving(D)[k]`` of the half-split layout: even
    dimensions take the first half (sines), odd ones the second (cosines)."""
    k = torch.arange(d_model)
    return torch.where(k % 2 == 0, k // 2, d_model // 2 + k // 2)


def _layer_names(kind: str, index: int) -> dict[str, tuple[str, str]]:
    """This project's name → (the Hugging Face name, how the width enters it) for one layer's tensors."""
    ours, theirs = f"{kind}_layers.{index}", f"model.{kind}.layers.{index}"
    names: dict[str, tuple[str, str]] = {}

    def module(mine: str, hf: str, weight: str, bias: str) -> None:  # a Linear or LayerNorm: weight, then bias
        names[f"{ours}.{mine}.weight"] = (f"{theirs}.{hf}.weight", weight)
        names[f"{ours}.{mine}.bias"] = (f"{theirs}.{hf}.bias", bias)

    attentions = [("self_attention", "self_attn")] + (
        [("cross_attention", "encoder_attn")] if kind == "decoder" else []
    )
    for mine, hf in attentions:
        for projection, hf_projection in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
            module(f"{mine}.{projection}", f"{hf}.{hf_projection}", "columns", "none")
        module(f"{mine}.output", f"{hf}.out_proj", "rows", "rows")
        module(f"{mine}_norm", f"{hf}_layer_norm", "rows", "rows")
    module("feed_forward.inner", "fc1", "columns", "none")
    module("feed_forward.outer", "fc2", "rows", "rows")
    module("feed_forward_norm", "final_layer_norm", "rows", "rows")
    return names


def weight_names(config: ModelConfig) -> dict[str, tuple[str, str]]:
    """Every tensor of the model built from ``config`` → (its Hugging Face name, how the width enters it:
    "columns", "rows" or "none"). The embedding and the output bias, whose rows are the vocabulary, are apart."""
    names: dict[str, tuple[str, str]] = {}
    for index in range(config.encoder_layers):
        names.update(_layer_names("encoder", index))
    for index in range(config.decoder_layers):
        names.update(_layer_names("decoder", index))
    for kind in ("encoder", "decoder"):
        for part in ("weight", "bias"):
            if config.norm_first:
                names[f"{kind}_norm.{part}"] = (f"model.{kind}.layer_norm.{part}", "rows")
            if config.embedding_norm:
                names[f"{kind}_embedding_norm.{part}"] = (f"model.{kind}.layernorm_embedding.{part}", "rows")
    return names


def position_names(config: ModelConfig) -> dict[str, str]:
    """A model's learned positional tables → their Hugging Face names (none for sinusoids, which are computed)."""
    if config.positional != "learned":
        return {}
    return {f"{kind}_positions": f"model.{kind}.embed_positions.weight" for kind in ("encoder", "decoder")}


def permute_width(tensor: torch.Tensor, how: str, order: torch.Tensor) -> torch.Tensor:
    if how == "columns":
        return tensor.index_select(1, order)
    if how == "rows":
        return tensor.index_select(0, order)
    return tensor


def embedding_of(tensors: Mapping[str, torch.Tensor], folder: Path) -> torch.Tensor:
    """The one embedding matrix shared by encoder, decoder and output; refused where the model has several."""
    for name in ("model.shared.weight", "model.encoder.embed_tokens.weight"):
        if name in tensors:
            shared = tensors[name]
            break
    else:
        raise HubError(f"{folder}: the weights hold no token embedding (model.shared.weight)")
    for name in ("model.decoder.embed_tokens.weight", "lm_head.weight"):
        if name in tensors and not torch.equal(tensors[name], shared):
            raise HubError(
                f"{folder}: {name} differs from the encoder's embedding; models with separate source and target "
                "vocabularies or an untied output layer cannot be opened yet"
            )
    return shared


@dataclass(frozen=True)
class Vocabulary:
    """The reordering of a Hugging Face vocabulary: ``order[i]`` is the Hugging Face id of this project's id ``i``
    (one id appears twice where the start token got a row of its own, ``added``)."""

    order: list[int]
    added: int | None  # this project's id of a row added for the start token, or None

    @classmethod
    def of(cls, size: int, pad: int, unk: int, start: int, eos: int) -> Vocabulary:
        if len({pad, unk, eos}) < 3:
            raise HubError(f"the special tokens pad={pad}, unk={unk}, eos={eos} are not three different tokens")
        fixed = [pad, unk, start, eos]
        added = BOS_ID if start in (pad, unk, eos) else None
        rest = [i for i in range(size) if i not in fixed]
        return cls(fixed + rest, added)

    @property
    def size(self) -> int:
        return len(self.order)

    def to_ours(self) -> dict[int, int]:
        """Hugging Face id → this project's id (the start token's original id where it has two)."""
        mapping: dict[int, int] = {}
        for ours, theirs in enumerate(self.order):
            if ours != self.added:
                mapping.setdefault(theirs, ours)
        return mapping
