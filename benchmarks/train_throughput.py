"""Training throughput of our ``small`` Transformer against ``torch.nn.Transformer`` of the same shape.

Both models train (forward, label-smoothed loss, backward, Adam step) on the same batches of random token ids whose
lengths spread like real sentence batches. Prints tokens per second (source + target, padding excluded) for each,
the achieved GFLOP/s against a large matrix product's GFLOP/s measured in the same run, and on the last line the
ratio ours / reference.

    python benchmarks/train_throughput.py [--steps 20] [--batch-tokens 4096] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from torch import nn

from transformer.config import ModelConfig, preset
from transformer.model import Transformer, sinusoidal_positional_encoding
from transformer.train import sequence_losses


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
    decoder = config.decoder_layers * (
        2 * (8 * d * d + 2 * d * ff) + 4 * target_length * d + 4 * source_length * d
    ) * target_length  # fmt: skip
    projection = 2 * d * v * target_length
    return 3.0 * batch * (encoder + decoder + projection)


def train_seconds(model: nn.Module, batches, ours: bool) -> list[float]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    times = []
    for source, target in batches:
        started = time.perf_counter()
        logits = model(source, target[:, :-1]).logits if ours else model(source, target[:, :-1])
        loss, _ = sequence_losses(logits, target[:, 1:], 0.1)
        (loss / (target[:, 1:] != 0).sum()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - started)
    return times


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
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the faster round counts")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = preset(args.preset)
    torch.manual_seed(0)
    ours, reference = Transformer(config), ReferenceTransformer(config)
    batches = make_batches(args.steps, args.batch_tokens, config.vocab_size, seed=1)
    tokens = sum(int((s != 0).sum() + (t[:, 1:] != 0).sum()) for s, t in batches)
    flops = sum(training_flops(config, s, t) for s, t in batches)
    reference_parameters = sum(p.numel() for p in reference.parameters())
    print(f"{args.preset}: {ours.num_parameters():,} parameters (reference {reference_parameters:,})")
    print(f"{torch.get_num_threads()} threads, torch {torch.__version__}, {args.steps} batches of ≤{args.batch_tokens} "
          f"tokens per side, {tokens:,} real tokens")  # fmt: skip
    train_seconds(ours, make_batches(2, args.batch_tokens, config.vocab_size, seed=2), ours=True)
    train_seconds(reference, make_batches(2, args.batch_tokens, config.vocab_size, seed=2), ours=False)
    best = {"ours": math.inf, "reference": math.inf}
    for _ in range(args.rounds):
        best["ours"] = min(best["ours"], sum(train_seconds(ours, batches, ours=True)))
        best["reference"] = min(best["reference"], sum(train_seconds(reference, batches, ours=False)))
    peak = statistics.median(matmul_gflops() for _ in range(3))
    print(f"matrix product (2048², fp32): {peak:.1f} GFLOP/s")
    for name, seconds in best.items():
        achieved = flops / seconds / 1e9
        print(
            f"{name:>9}: {tokens / seconds:,.0f} tokens/s, {achieved:.1f} GFLOP/s ({achieved / peak:.0%} of the matmul)"
        )
    print(f"ratio ours/reference: {best['reference'] / best['ours']:.2f}")


if __name__ == "__main__":
    main()
