"""Model health: does every layer still tell positions apart, and do the heads look at anything in particular?

A Transformer whose encoder has collapsed (every position holding the same vector by the upper layers) still
translates short sentences, so its loss and BLEU say little about it; these measures say it directly. All of them
are computed on a fixed sample, teacher-forced on its reference translations (one batched pass: cheap enough for
every validation, and the same tokens for every checkpoint): the first :data:`HEALTH_SENTENCES` pairs of
newstest2013, the paper's development set. Given English sentences without references, the model's own greedy
translations stand in for the references.

- ``encoder_position_cosine`` (per encoder layer): the mean cosine similarity between the output vectors of two
  different positions of a sentence. Near 1 means collapse: the layer's output no longer depends on the position.
- ``<kind>_entropy_normalised`` (per layer of each attention kind: ``encoder``, ``decoder``, ``cross``): the mean
  entropy of a query's attention divided by the entropy of uniform attention over the keys it may see (queries that
  see a single key are left out). 1 means uniform attention: the head averages instead of selecting.
- ``cross_alignment_best``: the best cross-attention head's dictionary alignment (``alignment_dictionary`` of
  :func:`transformer.heads.cross_scores`): the share of target words whose most attended source word (in the row
  that predicts the word) is a dictionary translation of it; ``cross_alignment_best_head`` is that head as
  [layer, head], both 1-based.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from transformer.checkpoint import LoadedCheckpoint
from transformer.data import DATA_ROOT, pad, read_parallel
from transformer.decode import encode_source, max_source_tokens
from transformer.model import Transformer
from transformer.tokenizer import Tokenizer

HEALTH_SENTENCES = 100
KINDS = ("encoder", "decoder", "cross")
HEALTH_KEYS = (
    "encoder_position_cosine",
    *(f"{kind}_entropy_normalised" for kind in KINDS),
    "cross_alignment_best",
    "cross_alignment_best_head",
)


def health_sample(count: int = HEALTH_SENTENCES) -> tuple[str, list[tuple[str, str]]]:
    """The fixed sample: a description and (English, German reference) pairs; no references without the data."""
    path = DATA_ROOT / "dev" / "newstest2013"
    if Path(f"{path}.en").is_file() and Path(f"{path}.de").is_file():
        pairs = read_parallel(f"{path}.en", f"{path}.de")[:count]
        return f"newstest2013, first {len(pairs)} pairs, reference translations", pairs
    from transformer.heads import dev_sample  # heads imports analysis, which the trainer does not need otherwise

    description, sentences = dev_sample(count)
    return description + ", greedy translations", [(sentence, "") for sentence in sentences]


def position_cosine(states: Tensor, keep: Tensor) -> Tensor:
    """Mean cosine between different kept positions of each sentence. states (B, S, D), keep (B, S) → (B,).

    Sentences with fewer than two kept positions give NaN."""
    unit = torch.nn.functional.normalize(states.float(), dim=-1) * keep[..., None]
    gram = unit @ unit.transpose(1, 2)  # (B, S, S)
    count = keep.sum(1).float()
    pairs = count * (count - 1)
    off_diagonal = gram.sum((1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(1)
    return torch.where(pairs > 0, off_diagonal / pairs.clamp(min=1), torch.full_like(count, float("nan")))


def normalised_entropy(weights: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Summed H(p)/log(n) over the queries that may see n ≥ 2 keys, and how many such queries, per layer.

    weights (B, L, H, Tq, Tk) attention probabilities; mask (B, 1, Tq or 1, Tk) True where a key may be seen, and
    False for every key of a padding query row (so that it is not counted). Returns two (L,) tensors."""
    mask = mask.expand(weights.size(0), 1, weights.size(-2), weights.size(-1))  # (B, 1, Tq, Tk)
    visible = mask.sum(-1).float()  # (B, 1, Tq)
    p = weights.float().clamp(min=1e-12)
    entropy = -(weights.float() * p.log()).sum(-1)  # (B, L, H, Tq)
    counted = (visible > 1)[:, None]  # (B, 1, 1, Tq)
    ratio = torch.where(counted, entropy / visible.clamp(min=2).log()[:, None], torch.zeros_like(entropy))
    heads = weights.size(2)
    return ratio.sum((0, 2, 3)), counted.sum().float().expand(weights.size(1)) * heads


@torch.no_grad()
def attention_health(model: Transformer, sources: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]]) -> dict:
    """Position cosines and normalised entropies over teacher-forced (source, output) pairs of token ids."""
    config = model.config
    device = next(model.parameters()).device
    cosine_sum = torch.zeros(config.encoder_layers)
    sentences = 0
    entropy_sum = {kind: torch.zeros(n) for kind, n in zip(KINDS, (config.encoder_layers, config.decoder_layers,
                                                                    config.decoder_layers), strict=True)}  # fmt: skip
    entropy_count = {kind: torch.zeros_like(total) for kind, total in entropy_sum.items()}
    for start in range(0, len(sources), 16):
        source = pad(sources[start : start + 16]).to(device)
        target = pad([[config.bos_id, *ids] for ids in outputs[start : start + 16]]).to(device)
        source_keep = source != config.pad_id
        source_mask = model.source_mask(source)
        x = model.embed(source)
        encoder_weights = []
        for index, layer in enumerate(model.encoder_layers):
            x, weights = layer(x, source_mask, need_weights=True)
            encoder_weights.append(weights)
            cosine = position_cosine(x, source_keep)
            valid = ~cosine.isnan()
            cosine_sum[index] += cosine[valid].sum().cpu()
        sentences += int(valid.sum())
        _, decoder_weights, cross_weights = model.decode(target, x, source_mask, need_weights=True)
        target_keep = (target != config.pad_id)[:, None, :, None]  # (B, 1, T, 1): padding queries
        masks = {
            "encoder": source_mask & source_keep[:, None, :, None],
            "decoder": model.target_mask(target) & target_keep,
            "cross": source_mask & target_keep,
        }
        stacked = {"encoder": torch.stack(encoder_weights, 1), "decoder": decoder_weights, "cross": cross_weights}
        for kind in KINDS:
            total, count = normalised_entropy(stacked[kind], masks[kind])
            entropy_sum[kind] += total.cpu()
            entropy_count[kind] += count.cpu()
    result: dict[str, Any] = {"encoder_position_cosine": (cosine_sum / max(sentences, 1)).tolist()}
    for kind in KINDS:
        result[f"{kind}_entropy_normalised"] = (entropy_sum[kind] / entropy_count[kind].clamp(min=1)).tolist()
    return result


@torch.no_grad()
def model_health(
    model: Transformer,
    tokenizer: Tokenizer,
    sample: tuple[str, Sequence[tuple[str, str]]] | None = None,
    dictionary: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Every health measure (see the module's docstring), rounded to 4 places, with the sample's description.

    ``sample``: (description, [(English, German reference or "")]) instead of :func:`health_sample`'s."""
    from transformer.heads import cross_scores, greedy_outputs

    description, pairs = sample if sample is not None else health_sample()
    sentences = [source for source, _ in pairs]
    was_training = model.training
    model.eval()
    try:
        if all(reference for _, reference in pairs):
            limit = max_source_tokens(model)
            sources = [encode_source(tokenizer, source, limit).ids for source, _ in pairs]
            targets = [tokenizer.encode(reference)[: limit - 1] for _, reference in pairs]
        else:
            sources, targets = greedy_outputs(model, tokenizer, sentences)
        result = attention_health(model, sources, targets)
        loaded = LoadedCheckpoint(path=Path(), model=model, tokenizer=tokenizer, config=model.config)
        scores = cross_scores(loaded, sentences, dictionary, (sources, targets))
        alignment = np.nan_to_num(scores["alignment_dictionary"], nan=-1.0)
    finally:
        model.train(was_training)
    layer, head = np.unravel_index(int(alignment.argmax()), alignment.shape)
    best = float(alignment[layer, head])
    result = {key: [round(v, 4) for v in values] for key, values in result.items()}
    result["cross_alignment_best"] = round(best, 4) if best >= 0 else None
    result["cross_alignment_best_head"] = [int(layer) + 1, int(head) + 1] if best >= 0 else None
    result["health_sample"] = description
    return result


def format_health(result: dict[str, Any]) -> str:
    """A few lines for a terminal: one per measure, values per layer."""

    def numbers(values: Sequence[float]) -> str:
        return " ".join(f"{v:.2f}" for v in values)

    lines = [f"encoder position cosine by layer: {numbers(result['encoder_position_cosine'])}"]
    for kind in KINDS:
        lines.append(f"{kind} attention entropy / uniform by layer: {numbers(result[f'{kind}_entropy_normalised'])}")
    best = result.get("cross_alignment_best")
    if best is None:
        lines.append("best cross-attention head's dictionary alignment: no dictionary word in the sample")
    else:
        layer, head = result["cross_alignment_best_head"]
        lines.append(f"best cross-attention head's dictionary alignment: {best:.3f} (layer {layer}, head {head})")
    return "\n".join(lines)
