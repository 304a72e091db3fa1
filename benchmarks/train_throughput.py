"""Training throughput of the trainer's code path and batching against their earlier forms and ``torch.nn.Transformer``.

Code paths: three train (forward, label-smoothed loss, backward, Adam step) the same ``small`` model shape on the
same batches — real ones cut by the trainer's sampler from the long run's data mix in its earlier order (random
token ids with sentence-like lengths where the corpora are missing, or with ``--random``). ``current`` is the
trainer's path, ``baseline`` the path before fused projections, the block-wise projection and loss (logits of
non-padding targets only, never all at once), the cheaper dropout mask and fused Adam, ``reference``
torch.nn.Transformer.

Batching: the current path then trains on one pool's worth of sentences (``--pool`` batches) cut with the same
``--batch-tokens`` budget in the sampler's order (pools sorted by the longer side) and in its earlier one (sorted by
the source), the same sentences both times; the padding share and real tokens per batch are counted over a whole
epoch of each. Prints tokens per second (source + target, padding excluded), the achieved GFLOP/s against a large
matrix product's measured in the same run, and the ratios: code path, batching, and both (their product).

    python benchmarks/train_throughput.py [--steps 20] [--pool 30] [--batch-tokens 4096] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

import torch
from torch import nn

from transformer.cli.training.runtime import adam
from transformer.cli.training.validation import sequence_losses, training_losses
from transformer.formats.checkpoint import DEFAULT_CHECKPOINT_NAME, REPOSITORY_CHECKPOINTS, TOKENIZER_FILE
from transformer.paper.config import ModelConfig, preset
from transformer.paper.data import (
    DATA_ROOT,
    Batch,
    BatchSampler,
    CorpusSpec,
    Example,
    collate,
    encode_pairs,
    read_corpus,
)
from transformer.paper.dropout import Dropout
from transformer.paper.model import MultiHeadAttention, Transformer
from transformer.paper.positional import sinusoidal_positional_encoding
from transformer.paper.tokenizer import Tokenizer

T = DATA_ROOT / "train"
# Every training corpus, the in-domain ones weighted up: the long run's mix (4,000 pairs of each per weight unit).
DEFAULT_MIX = [
    f"{T / name}"
    for name in (
        "tatoeba",
        "tatoeba_extra:2",
        "multi30k:3",
        "news:2",
        "news_2021_2023",
        "wiki_postedit",
        "chat",
        "pud",
        "wmt_sample",
        "synthetic_bt",
        "synthetic_fwd",
    )
]


class ReferenceTransformer(nn.Module):
    """torch.nn.Transformer with the same embedding sharing, scaling and positional encoding as ours."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_id)
        self.register_buffer("pe", sinusoidal_positional_encoding(config.max_positions, config.d_model), False)
        self.dropout = nn.Dropout(config.dropout)
        self.transformer = nn.Transformer(
            d_model=config.d_model,
            nhead=config.num_heads,
            num_encoder_layers=config.encoder_layers,
            num_decoder_layers=config.decoder_layers,
            dim_feedforward=config.d_ff,
            dropout=config.dropout,
            batch_first=True,
        )

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.embedding(ids) * math.sqrt(self.config.d_model) + self.pe[: ids.size(1)])

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(target.size(1), dtype=torch.bool)
        hidden = self.transformer(
            self.embed(source),
            self.embed(target),
            tgt_mask=causal,
            src_key_padding_mask=source == 0,
            tgt_key_padding_mask=target == 0,
            memory_key_padding_mask=source == 0,
        )
        return hidden @ self.embedding.weight.T


def make_batches(count: int, batch_tokens: int, vocab: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        length = int(torch.randint(8, 49, (1,), generator=generator))
        rows = batch_tokens // length
        source = torch.randint(4, vocab, (rows, length), generator=generator)
        target = torch.randint(4, vocab, (rows, length + 1), generator=generator)
        lengths = torch.randint(length // 2, length + 1, (rows,), generator=generator)
        source[torch.arange(length) >= lengths[:, None]] = 0  # ragged ends, as in sorted real batches
        target[torch.arange(length + 1) >= lengths[:, None] + 1] = 0
        batches.append((source, target))
    return batches


def training_flops(config: ModelConfig, source: torch.Tensor, target: torch.Tensor) -> float:
    """Matrix-multiply FLOPs of one training step (forward + backward ≈ 3 × forward) on padded tensors."""
    batch, source_length = source.shape
    target_length = target.size(1) - 1
    d, ff, v = config.d_model, config.d_ff, config.vocab_size
    encoder = config.encoder_layers * (2 * (4 * d * d + 2 * d * ff) + 4 * source_length * d) * source_length
    decoder = (
        config.decoder_layers
        * (2 * (8 * d * d + 2 * d * ff) + 4 * target_length * d + 4 * source_length * d)
        * target_length
    )
    projection = 2 * d * v * target_length
    return 3.0 * batch * (encoder + decoder + projection)


def train_seconds(model: nn.Module, batches, path: str) -> list[float]:
    """Seconds per training step of one code path: ``current`` (the trainer's: fused Q/K/V projections, projection
    and loss block by block over non-padding targets only, dropout masks from fewer random bits, fused Adam),
    ``baseline`` (three projections, logits of every position, nn.Dropout's masks, for-each Adam: the trainer before
    those changes) or ``reference`` (torch.nn.Transformer)."""
    optimizer = adam(model.parameters(), fused=path == "current", lr=1e-4)
    MultiHeadAttention.fused_projections = Dropout.cheap_mask = path == "current"
    model.train()
    times = []
    for source, target in batches:
        started = time.perf_counter()
        if path == "current":
            batch = Batch(source, target[:, :-1], target[:, 1:])
            loss, _ = training_losses(model, batch, 0.1)
        else:
            logits = model(source, target[:, :-1]).logits if path == "baseline" else model(source, target[:, :-1])
            loss, _ = sequence_losses(logits, target[:, 1:], 0.1)
        (loss / (target[:, 1:] != 0).sum()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - started)
    MultiHeadAttention.fused_projections = Dropout.cheap_mask = True
    return times


def mix_examples(seed: int) -> list[Example] | None:
    """The shipped model's data mix (4,000 pairs of each corpus per weight unit), encoded; None without the data."""
    if not (DATA_ROOT / "train" / "tatoeba.en.gz").is_file():
        return None
    tokenizer = Tokenizer.load(REPOSITORY_CHECKPOINTS / DEFAULT_CHECKPOINT_NAME / TOKENIZER_FILE)
    examples = []
    for spec in map(CorpusSpec.parse, DEFAULT_MIX):
        pairs = read_corpus(spec)
        random.Random(seed).shuffle(pairs)
        examples += encode_pairs(pairs[: 4000 * spec.upsample], tokenizer)
    return examples


def as_tensors(batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    return batch.source, torch.cat([batch.target_input, batch.target_output[:, -1:]], dim=1)  # <s> … </s>


def real_batches(examples: list[Example], count: int, batch_tokens: int, seed: int, sort_by: str = "longer"):
    """The first ``count`` batches of an epoch as the trainer's sampler cuts them."""
    sampler = BatchSampler(examples, batch_tokens, seed=seed, sort_by=sort_by)
    return [as_tensors(batch) for _, batch in zip(range(count), (b for _, b in sampler.iterate(0)), strict=False)]


def pool_batches(examples: list[Example], pool: int, batch_tokens: int, seed: int, sort_by: str):
    """Every batch of one sampler pool's worth of examples (about ``pool`` batches): the same sentences for every
    ``sort_by``, so that orders compare on identical tokens."""
    average = sum(e.num_tokens for e in examples) / (2 * len(examples))
    chosen = random.Random(seed).sample(examples, min(len(examples), int(pool * batch_tokens / average)))
    sampler = BatchSampler(chosen, batch_tokens, seed=seed, pool_batches=10 * pool, sort_by=sort_by)
    return [collate([chosen[i] for i in batch]) for batch in sampler.epoch_batches(0)]


def padding(examples: list[Example], batch_tokens: int, seed: int, sort_by: str) -> tuple[float, float]:
    """(padding share, real tokens per batch) of a whole epoch of the sampler."""
    batches = BatchSampler(examples, batch_tokens, seed=seed, sort_by=sort_by).epoch_batches(0)
    real = padded = 0
    for indices in batches:
        source = max(len(examples[i].source) for i in indices)
        target = max(len(examples[i].target) - 1 for i in indices)
        real += sum(len(examples[i].source) + len(examples[i].target) - 1 for i in indices)
        padded += len(indices) * (source + target)
    return 1 - real / padded, real / len(batches)


def matmul_gflops(size: int = 2048, repeats: int = 10) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per code path and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the faster round counts")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--random", action="store_true", help="random token batches even where the corpora exist")
    parser.add_argument("--no-reference", action="store_true", help="skip torch.nn.Transformer")
    parser.add_argument("--pool", type=int, default=30, help="batches of sentences timed in both orders (0: skip)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = preset(args.preset)
    torch.manual_seed(0)
    models = {"current": Transformer(config), "baseline": Transformer(config)}
    models["baseline"].load_state_dict(models["current"].state_dict())
    if not args.no_reference:
        models["reference"] = ReferenceTransformer(config)
    examples = None if args.random else mix_examples(seed=1)
    if examples is None:
        source_of_batches = "random-token batches"
        batches = make_batches(args.steps, args.batch_tokens, config.vocab_size, seed=1)
    else:
        source_of_batches = "real batches of the training mix (the sampler's earlier order)"
        batches = real_batches(examples, args.steps, args.batch_tokens, seed=1, sort_by="source")
    print(f"{args.preset}: {models['current'].num_parameters():,} parameters")
    print(
        f"{torch.get_num_threads()} threads, torch {torch.__version__}, {args.steps} {source_of_batches} of "
        f"≤{args.batch_tokens} tokens per side"
    )
    for path, model in models.items():
        train_seconds(model, batches[:2], path)  # warm-up
    best = dict.fromkeys(models, math.inf)
    for _ in range(args.rounds):
        for path, model in models.items():
            best[path] = min(best[path], sum(train_seconds(model, batches, path)))
    tokens = sum(int((s != 0).sum() + (t[:, 1:] != 0).sum()) for s, t in batches)
    flops = sum(training_flops(config, s, t) for s, t in batches)
    peak = statistics.median(matmul_gflops() for _ in range(3))
    print(f"matrix product (2048², fp32): {peak:.1f} GFLOP/s")
    for name, seconds in best.items():
        achieved = flops / seconds / 1e9
        print(
            f"{name:>9}: {tokens / seconds:,.0f} tokens/s, {achieved:.1f} GFLOP/s ({achieved / peak:.0%} of the matmul)"
        )
    if "reference" in best:
        print(f"ratio current/reference (same batches): {best['reference'] / best['current']:.2f}")
    code_path = best["baseline"] / best["current"]
    print(f"ratio current/baseline, code path (same batches): {code_path:.2f}")
    if examples is None or not args.pool:
        return
    # Batching: the current path over one pool of sentences cut in the sampler's order and in its earlier one.
    seconds = {}
    for order in ("longer", "source"):
        share, per_batch = padding(examples, args.batch_tokens, 1, order)
        pool = pool_batches(examples, args.pool, args.batch_tokens, seed=1, sort_by=order)
        train_seconds(models["current"], [as_tensors(b) for b in pool[:2]], "current")  # warm-up
        seconds[order] = sum(train_seconds(models["current"], [as_tensors(b) for b in pool], "current"))
        print(
            f"pools sorted by the {order} side: {share:.1%} padding and {per_batch:,.0f} real tokens per batch over "
            f"an epoch; one pool's sentences in {len(pool)} batches, {seconds[order]:.1f} s"
        )
    batching = seconds["source"] / seconds["longer"]
    print(f"ratio sorted by the longer side / by the source, same sentences: {batching:.2f}")
    print(f"ratio current/baseline, code path and batching (same budget): {code_path * batching:.2f}")


if __name__ == "__main__":
    main()
