"""Which explanation predicts what the model does? The deletion test (comprehensiveness, DeYoung et al. 2020,
"ERASER: A Benchmark to Evaluate Rationalized NLP Models").

For one output token, an explanation ranks the source tokens. The k it ranks highest are deleted from the source,
the translation is teacher-forced again up to that token, and the drop in the token's log-probability is compared
with the drop when k source tokens chosen at random are deleted. An explanation that names what the model used
makes the token much less likely when those tokens go; one that does not is no better than chance.

Explanations (each a score per source token, ``</s>`` never deleted):

- a cross-attention head, a layer's average, every layer's average: the row that predicts the token;
- ``rollout``: attention rollout through the encoder, the decoder and the cross-attention back to the source
  (:func:`transformer.analysis.rollout.cross_rollout`);
- ``saliency``, ``input_x_gradient``, ``integrated_gradients``: :mod:`transformer.analysis.attribution` (absolute
  values).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer.analysis import attribution as at
from transformer.analysis import intervals
from transformer.analysis.attention import AttentionMaps, teacher_forced
from transformer.analysis.rollout import cross_rollout
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.data import pad
from transformer.paper.tokenizer import BOS_ID, PAD_ID

RANDOM_DRAWS = 5  # random deletions averaged per token
FAITHFULNESS_FILE = "faithfulness.json"  # beside a checkpoint: `python benchmarks/faithfulness.py --save`


@dataclass(frozen=True)
class Explanation:
    name: str
    rank: Callable[[LoadedCheckpoint, AttentionMaps, list[int], list[int], int], np.ndarray]


def attention_explanation(name: str, layer: int | None, head: int | None) -> Explanation:
    def scores(_loaded, maps: AttentionMaps, _source, _output, position: int) -> np.ndarray:
        weights = maps.cross if layer is None else maps.cross[layer : layer + 1]
        weights = weights.mean(axis=(0, 1)) if head is None else weights[:, head].mean(axis=0)
        return weights[position]

    return Explanation(name, scores)


def _rollout(_loaded, maps: AttentionMaps, _source, _output, position: int) -> np.ndarray:
    return cross_rollout(maps.encoder, maps.decoder, maps.cross)["source"][position]


def gradient_explanation(method: str) -> Explanation:
    def scores(loaded: LoadedCheckpoint, _maps, source: list[int], output: list[int], position: int) -> np.ndarray:
        return np.abs(at.attribute(loaded.model, source, output, position, method).source)

    return Explanation(method, scores)


def explanations(layers: int, extra_heads: Sequence[tuple[int, int]] = ()) -> list[Explanation]:
    """Every layer's average, the average of all, the given heads (0-based), rollout and the three gradients."""
    found = [attention_explanation("attention, every layer", None, None)]
    found += [attention_explanation(f"attention, layer {layer + 1}", layer, None) for layer in range(layers)]
    found += [
        attention_explanation(f"attention, layer {layer + 1} head {head + 1}", layer, head)
        for layer, head in extra_heads
    ]
    found.append(Explanation("rollout", _rollout))
    found += [gradient_explanation(method) for method in at.METHODS]
    return found


def token_log_probabilities(
    loaded: LoadedCheckpoint, sources: Sequence[Sequence[int]], output: Sequence[int], position: int
) -> np.ndarray:
    """log p(output[position] | source, output[:position]) for each source (each ending with </s>)."""
    model = loaded.model
    device = next(model.parameters()).device
    source = pad([list(ids) for ids in sources], PAD_ID).to(device)
    prefix = torch.tensor([[BOS_ID, *output[:position]]], device=device).expand(source.shape[0], -1)
    with torch.no_grad():
        memory, _ = model.encode(source)
        hidden, _, _ = model.decode(prefix, memory, model.source_mask(source))
        log_p = torch.log_softmax(model.project(hidden[:, -1]).float(), dim=-1)
    return log_p[:, output[position]].cpu().numpy()


def without(source: Sequence[int], positions: Sequence[int]) -> list[int]:
    gone = set(positions)
    return [token for i, token in enumerate(source) if i not in gone]


@dataclass
class Deletion:
    explanation: str
    k: int
    drop: float  # mean drop in the token's log-probability when the explanation's top k go
    random_drop: float  # the same for k random source tokens
    tokens: int  # output tokens measured
    sentences: int = 0
    # 95% bootstrap intervals over sentences (their tokens resampled together): the drop, and the gain over random
    # deletions at the same positions (paired)
    drop_interval: tuple[float, float] = (float("nan"), float("nan"))
    gain_interval: tuple[float, float] = (float("nan"), float("nan"))

    @property
    def gain(self) -> float:
        return self.drop - self.random_drop


def deletion_test(
    loaded: LoadedCheckpoint,
    pairs: Sequence[tuple[list[int], list[int]]],
    explained: Sequence[Explanation],
    ks: Sequence[int] = (1, 3),
    tokens_per_pair: int = 4,
    seed: int = 1,
) -> list[Deletion]:
    """The deletion test over ``pairs`` of (source ids ending with </s>, output ids), at up to ``tokens_per_pair``
    output positions of each (spread over the output), for each explanation and each k."""
    rng = random.Random(seed)
    drops: dict[tuple[str, int], list[tuple[int, float]]] = {}  # (sentence, drop) per measured token
    random_drops: dict[int, list[tuple[int, float]]] = {k: [] for k in ks}
    for sentence, (source, output) in enumerate(pairs):
        maps, _ = teacher_forced(loaded.model, loaded.tokenizer, source, output)
        deletable = list(range(len(source) - 1))  # never </s>
        positions = sorted({round(i * (len(output) - 1) / max(tokens_per_pair - 1, 1)) for i in range(tokens_per_pair)})
        for position in positions if output else []:
            base = token_log_probabilities(loaded, [source], output, position)[0]
            for k in ks:
                if k >= len(deletable):
                    continue
                draws = [without(source, rng.sample(deletable, k)) for _ in range(RANDOM_DRAWS)]
                drop = float(base - token_log_probabilities(loaded, draws, output, position).mean())
                random_drops[k].append((sentence, drop))
            for explanation in explained:
                scores = np.asarray(explanation.rank(loaded, maps, source, output, position))[: len(deletable)]
                order = [int(i) for i in np.argsort(-scores, kind="stable")]
                for k in ks:
                    if k >= len(deletable):
                        continue
                    after = token_log_probabilities(loaded, [without(source, order[:k])], output, position)[0]
                    drops.setdefault((explanation.name, k), []).append((sentence, float(base - after)))
    results = []
    for (name, k), values in drops.items():
        chance = random_drops[k]
        per_sentence = np.zeros((len(pairs), 3))  # the explanation's drops, the random ones, tokens
        for (sentence, drop), (same, random_drop) in zip(values, chance, strict=True):
            assert sentence == same  # measured at the same tokens
            per_sentence[sentence] += (drop, random_drop, 1)
        per_sentence = per_sentence[per_sentence[:, 2] > 0]
        drop = intervals.ratio(per_sentence[:, 0], per_sentence[:, 2])
        gain = intervals.paired_ratio(per_sentence[:, 0], per_sentence[:, 1], per_sentence[:, 2])
        results.append(
            Deletion(
                name,
                k,
                float(np.mean([v for _, v in values])),
                float(np.mean([v for _, v in chance])),
                len(values),
                len(per_sentence),
                (drop.low, drop.high),
                (gain.low, gain.high),
            )
        )
    return results
