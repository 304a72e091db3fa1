"""The training losses, and what a validation measures: dev loss and perplexity, greedy sacreBLEU on a dev subset,
sample translations (two everyday sentences and the paper's two figure sentences) and the model's health."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from transformer.analysis.figures import LAW_SENTENCE, MAKING_SENTENCE
from transformer.analysis.health import format_health, model_health
from transformer.cli.training.runtime import autocast
from transformer.paper.data import Batch, collate, encode_pairs
from transformer.paper.loss import label_smoothed_losses
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import PAD_ID, Tokenizer
from transformer.search.decode import GREEDY, translate

SAMPLE_SENTENCES = [
    "I would like a cup of coffee.",
    "The children are playing in the park.",
    MAKING_SENTENCE,  # the paper's two figure sentences
    LAW_SENTENCE,
]


def sequence_losses(logits: Tensor, target: Tensor, label_smoothing: float) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed loss (§5.4) and summed negative log-likelihood over non-padding target tokens.

    logits (..., V) and target (...) of any matching leading shape: (B, T) or the flat (N,) of kept positions."""
    loss, nll = label_smoothed_losses(logits, target, label_smoothing)  # equals F.cross_entropy(label_smoothing=…)
    keep = target != PAD_ID
    return loss[keep].sum(), nll[keep].sum()


def training_losses(model: nn.Module, batch: Batch, label_smoothing: float) -> tuple[Tensor, Tensor]:
    """:func:`sequence_losses` of a batch, computed without the logits of padding positions or whole (N, V)
    logits (:func:`transformer.paper.loss.projected_label_smoothed_loss`); the NLL carries no gradient."""
    output = model(batch.source, batch.target_input, target_output=batch.target_output, label_smoothing=label_smoothing)
    return output.loss, output.nll


@torch.no_grad()
def validate(
    model: Transformer,
    tokenizer: Tokenizer,
    dev_pairs: Sequence[tuple[str, str]],
    loss_sentences: int,
    bleu_sentences: int,
    label_smoothing: float,
    amp: str = "none",
    health_sample: Any = None,
) -> dict[str, Any]:
    """Dev loss over the first ``loss_sentences`` pairs and greedy sacreBLEU over the first ``bleu_sentences``, with
    the sample translations and (given a health sample) the health measures."""
    model.eval()
    device = next(model.parameters()).device
    examples = encode_pairs(dev_pairs[:loss_sentences], tokenizer, max_tokens=model.config.max_positions - 1)
    loss_sum = nll_sum = 0.0
    tokens = 0
    for start in range(0, len(examples), 64):
        batch = collate(examples[start : start + 64]).to(device)
        with autocast(device, amp):
            logits = model(batch.source, batch.target_input).logits
        loss, nll = sequence_losses(logits, batch.target_output, label_smoothing)
        loss_sum, nll_sum, tokens = loss_sum + float(loss), nll_sum + float(nll), tokens + batch.num_target_tokens
    bleu_pairs = dev_pairs[:bleu_sentences]
    hypotheses = translate(model, tokenizer, [s for s, _ in bleu_pairs], GREEDY)
    import sacrebleu  # imported here: it is slow to import and the app never validates

    bleu = sacrebleu.corpus_bleu(hypotheses, [[t for _, t in bleu_pairs]]).score if bleu_pairs else None
    samples = translate(model, tokenizer, SAMPLE_SENTENCES, GREEDY)
    health = model_health(model, tokenizer, health_sample) if health_sample else {}
    return {
        **health,
        "dev_loss": loss_sum / max(tokens, 1),
        "dev_nll": nll_sum / max(tokens, 1),
        "dev_ppl": math.exp(min(nll_sum / max(tokens, 1), 50)),
        "dev_bleu": bleu,
        "dev_bleu_sentences": len(bleu_pairs),
        "samples": dict(zip(SAMPLE_SENTENCES, samples, strict=True)),
    }


def report(step: int, result: dict[str, Any], seconds: float) -> str:
    """A validation's result as the lines the trainer prints."""
    bleu = "not measured" if result["dev_bleu"] is None else f"{result['dev_bleu']:.2f}"
    lines = [
        f"step {step}: dev loss {result['dev_loss']:.3f}, ppl {result['dev_ppl']:.1f}, greedy BLEU {bleu} on "
        f"{result['dev_bleu_sentences']} sentences ({seconds:.0f}s)"
    ]
    if "encoder_position_cosine" in result:
        lines.append(format_health(result))
    lines += [f"  {source}\n  → {output}" for source, output in result["samples"].items()]
    return "\n".join(lines)
