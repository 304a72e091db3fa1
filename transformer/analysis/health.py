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
- ``cross_alignment_best``: the best cross-attention head's dictionary alignment (``alignment_dictionary`` as
  :func:`transformer.analysis.heads.cross_scores` counts it, here over the references): the share of target words
  whose most attended source word (in the row that predicts the word) is a dictionary translation of it;
  ``cross_alignment_best_head`` is that head as [layer, head], both 1-based.

With intervals (95%, bootstrap over the sample's sentences; :mod:`transformer.analysis.intervals`):
``encoder_position_cosine_last_interval`` for the last encoder layer's cosine, and ``cross_alignment_held_out``, the
best head's dictionary alignment chosen on half of the sentences and scored on the other half (the best of many
heads scored on the sentences it was chosen on flatters itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from transformer.analysis import intervals
from transformer.analysis.alignment import AlignmentTally, load_dictionary
from transformer.analysis.attention import entropy_bits
from transformer.analysis.heads import dev_sample
from transformer.paper.config import ATTENTION_KINDS as KINDS
from transformer.paper.data import DEV_PREFIX, has_pairs, pad, read_pairs
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import Tokenizer
from transformer.search.decode import GREEDY, encode_source, max_source_tokens, translate_ids

HEALTH_SENTENCES = 100
HEALTH_KEYS = (
    "encoder_position_cosine",
    *(f"{kind}_entropy_normalised" for kind in KINDS),
    "cross_alignment_best",
    "cross_alignment_best_head",
)


def health_sample(
    count: int = HEALTH_SENTENCES, languages: tuple[str, str] = ("en", "de")
) -> tuple[str, list[tuple[str, str]]]:
    """The fixed sample in the pair ``languages``: a description and (source, reference translation) pairs; no
    references without the data."""
    if has_pairs(DEV_PREFIX, languages):
        pairs = read_pairs(DEV_PREFIX, languages)[:count]
        return f"{DEV_PREFIX.name}, first {len(pairs)} pairs, reference translations", pairs
    description, sentences = dev_sample(count, languages[0])
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
    entropy = entropy_bits(weights.float())  # (B, L, H, Tq)
    counted = (visible > 1)[:, None]  # (B, 1, 1, Tq)
    ratio = torch.where(counted, entropy / visible.clamp(min=2).log2()[:, None], torch.zeros_like(entropy))
    heads = weights.size(2)
    return ratio.sum((0, 2, 3)), counted.sum().float().expand(weights.size(1)) * heads


@torch.no_grad()
def measure(
    model: Transformer,
    tokenizer: Tokenizer,
    sources: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    dictionary: dict[str, set[str]],
) -> dict[str, Any]:
    """Every measure over teacher-forced (source, output) pairs of token ids, 16 pairs per forward pass.

    Source ids end with </s>; outputs have neither <s> nor </s>. Each pass records all three attention kinds, and
    hooks on the encoder layers keep their outputs for the position cosines."""
    config = model.config
    device = next(model.parameters()).device
    layers = {kind: config.layers(kind) for kind in KINDS}
    entropy_sum = {kind: torch.zeros(count) for kind, count in layers.items()}
    entropy_count = {kind: torch.zeros(count) for kind, count in layers.items()}
    cosine_sum, sentences = torch.zeros(config.encoder_layers), 0
    alignment = AlignmentTally.of_shape(config.decoder_layers, config.num_heads)
    last_cosines: list[float] = []  # per sentence, the last encoder layer's (for its interval)
    sentence_hits: list[np.ndarray] = []  # per sentence, each cross head's dictionary hits [L, H]…
    sentence_words: list[int] = []  # …out of its words with a dictionary partner
    states: list[Tensor] = []
    hooks = [layer.register_forward_hook(lambda _m, _i, out: states.append(out[0])) for layer in model.encoder_layers]
    try:
        for start in range(0, len(sources), 16):
            chunk = slice(start, start + 16)
            source = pad(sources[chunk]).to(device)
            target = pad([[config.bos_id, *ids] for ids in outputs[chunk]]).to(device)
            states.clear()
            result = model(source, target, need_weights=True)
            source_keep = source != config.pad_id
            cosines = torch.stack([position_cosine(state, source_keep) for state in states], 1)  # (B, L)
            valid = ~cosines[:, 0].isnan()
            cosine_sum += cosines[valid].sum(0).cpu()
            last_cosines += cosines[valid][:, -1].tolist()
            sentences += int(valid.sum())
            source_mask = model.source_mask(source)
            target_keep = (target != config.pad_id)[:, None, :, None]  # (B, 1, T, 1): padding queries
            masks = {
                "encoder": source_mask & source_keep[:, None, :, None],
                "decoder": model.target_mask(target) & target_keep,
                "cross": source_mask & target_keep,
            }
            weights = {
                "encoder": result.encoder_attention,
                "decoder": result.decoder_attention,
                "cross": result.cross_attention,
            }
            for kind in KINDS:
                total, count = normalised_entropy(weights[kind], masks[kind])
                entropy_sum[kind] += total.cpu()
                entropy_count[kind] += count.cpu()
            cross = result.cross_attention.float().cpu().numpy()
            for row, (source_ids, output_ids) in enumerate(zip(sources[chunk], outputs[chunk], strict=True)):
                sentence_cross = cross[row, :, :, : len(output_ids) + 1, : len(source_ids)]
                hits, words = alignment.add(tokenizer, source_ids, output_ids, sentence_cross, dictionary)
                sentence_hits.append(hits)
                sentence_words.append(words)
    finally:
        for hook in hooks:
            hook.remove()
    measures: dict[str, Any] = {"encoder_position_cosine": (cosine_sum / max(sentences, 1)).tolist()}
    for kind in KINDS:
        measures[f"{kind}_entropy_normalised"] = (entropy_sum[kind] / entropy_count[kind].clamp(min=1)).tolist()
    measures["alignment"] = alignment.dictionary_share() if alignment.dictionary_words else None
    measures["intervals"] = {
        "last_cosines": last_cosines,
        "hits": np.stack(sentence_hits) if sentence_hits else None,
        "words": sentence_words,
    }
    return measures


@torch.no_grad()
def model_health(
    model: Transformer,
    tokenizer: Tokenizer,
    sample: tuple[str, Sequence[tuple[str, str]]] | None = None,
    dictionary: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Every health measure (see the module's docstring), rounded to 4 places, with the sample's description.

    ``sample``: (description, [(English, German reference or "")]) instead of :func:`health_sample`'s."""
    description, pairs = sample if sample is not None else health_sample(languages=model.config.languages)
    was_training = model.training
    model.eval()
    try:
        if all(reference for _, reference in pairs):
            limit = max_source_tokens(model)
            sources = [encode_source(tokenizer, source, limit).ids for source, _ in pairs]
            targets = [tokenizer.encode_target(reference)[: limit - 1] for _, reference in pairs]
        else:
            sources, targets = translate_ids(model, tokenizer, [source for source, _ in pairs], GREEDY, batch_size=16)
        measures = measure(model, tokenizer, sources, targets, load_dictionary() if dictionary is None else dictionary)
    finally:
        model.train(was_training)
    alignment = measures.pop("alignment")
    per_sentence = measures.pop("intervals")
    result: dict[str, Any] = {key: [round(v, 4) for v in values] for key, values in measures.items()}
    result["cross_alignment_best"] = result["cross_alignment_best_head"] = None
    if per_sentence["last_cosines"]:
        result["encoder_position_cosine_last_interval"] = intervals.mean(per_sentence["last_cosines"]).as_dict()
    if alignment is not None:
        layer, head = np.unravel_index(int(alignment.argmax()), alignment.shape)
        result["cross_alignment_best"] = round(float(alignment[layer, head]), 4)
        result["cross_alignment_best_head"] = [int(layer) + 1, int(head) + 1]
        if len(per_sentence["words"]) >= 4:
            held_out, _ = intervals.held_out_best(per_sentence["hits"], per_sentence["words"])
            result["cross_alignment_held_out"] = held_out.as_dict()
    result["health_sample"] = description
    return result


def per_layer(values: Sequence[float]) -> str:
    """Per-layer values as the reports print them: ``0.24 0.65 0.92``."""
    return " ".join(f"{v:.2f}" for v in values)


def format_health(result: dict[str, Any]) -> str:
    """A few lines for a terminal: one per measure, values per layer."""
    lines = [f"encoder position cosine by layer: {per_layer(result['encoder_position_cosine'])}"]
    for kind in KINDS:
        lines.append(f"{kind} attention entropy / uniform by layer: {per_layer(result[f'{kind}_entropy_normalised'])}")
    best = result.get("cross_alignment_best")
    if best is None:
        lines.append("best cross-attention head's dictionary alignment: no dictionary word in the sample")
    else:
        layer, head = result["cross_alignment_best_head"]
        line = f"best cross-attention head's dictionary alignment: {best:.3f} (layer {layer}, head {head})"
        held = result.get("cross_alignment_held_out")
        if held:
            interval = f"{held['value']:.3f} [{held['low']:.3f}, {held['high']:.3f}]"
            line += f"; chosen on half the sample, scored on the other: {interval}"
        lines.append(line)
    return "\n".join(lines)
