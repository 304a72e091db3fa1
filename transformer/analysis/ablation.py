"""What a head is worth: translations with heads switched off, and each head's importance (Michel et al., 2019,
"Are Sixteen Heads Really Better than One?").

A head is switched off by zeroing its output before the output projection Wᴼ (:meth:`Transformer.head_mask`), in
every pass of the search and of the attention recording. Importance comes two ways:

- **by ablation**: the drop in BLEU and chrF on a sample when that head alone is off (one search of the sample per
  head; the exact measure);
- **by gradient** (Michel et al.'s proxy, one backward pass): ``|∂L/∂ξ_h|`` summed over the sample, where ξ_h is
  the head's gate (1 = on) and L the teacher-forced loss on the references.

:func:`prune_curve` then switches off the k least important heads for growing k and measures BLEU each time: how
many heads the model can lose.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from transformer.analysis import intervals
from transformer.analysis.attention import KINDS, Translation, translate_with_attention
from transformer.formats.checkpoint import LoadedCheckpoint, read_beside, save_beside
from transformer.paper.data import collate, encode_pairs
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import PAD_ID, Tokenizer
from transformer.search.decode import GREEDY, DecodingOptions, translate

Head = tuple[str, int, int]  # attention kind, layer and head, 0-based
IMPORTANCE_FILE = "importance.json"  # beside a checkpoint's weights: `python -m transformer importance --save`


def head_mask(model: Transformer, off: Iterable[Head]) -> dict[str, torch.Tensor]:
    """The [layers, heads] gates of every attention kind with the heads ``off`` set to 0."""
    config = model.config
    mask = {kind: torch.ones(config.layers(kind), config.num_heads) for kind in KINDS}
    for kind, layer, head in off:
        if kind not in mask or not 0 <= layer < config.layers(kind) or not 0 <= head < config.num_heads:
            raise ValueError(f"no head {kind} layer {layer} head {head} (0-based) in this model")
        mask[kind][layer, head] = 0.0
    return mask


def translate_ablated(
    model: Transformer,
    tokenizer: Tokenizer,
    text: str,
    off: Iterable[Head],
    options: DecodingOptions = GREEDY,
    max_tokens: int | None = None,
) -> Translation:
    """:func:`~transformer.analysis.attention.translate_with_attention` with the heads ``off`` switched off."""
    with model.head_mask(head_mask(model, off)):
        return translate_with_attention(model, tokenizer, text, options, max_tokens)


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """The words of two translations as (change, text) segments in reading order: "same", "removed" (only in
    ``before``) and "added" (only in ``after``), from difflib's longest matching blocks over whitespace words."""
    import difflib

    old, new = before.split(), after.split()
    segments: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            segments.append(("same", " ".join(old[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("removed", " ".join(old[i1:i2])))
        if j2 > j1:
            segments.append(("added", " ".join(new[j1:j2])))
    return segments


def parse_heads(text: str) -> list[Head]:
    """Heads written as ``kind:layer:head`` with 1-based layer and head, comma-separated, where ``*`` for the layer
    or head means all of them (``cross:2:4``, ``encoder:5:*``, ``cross:*:*``) → (kind, layer, head), 0-based. The
    layer and head counts are checked by :func:`head_mask`."""
    heads: list[Head] = []
    for part in filter(None, (part.strip() for part in text.split(","))):
        pieces = part.split(":")
        if len(pieces) != 3 or pieces[0] not in KINDS:
            raise ValueError(f"{part!r}: write a head as kind:layer:head, kind one of {', '.join(KINDS)}")
        kind, layer, head = pieces
        heads.append((kind, *(-1 if value == "*" else _one_based(value, part) for value in (layer, head))))
    return heads


def _one_based(value: str, part: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{part!r}: layers and heads count from 1 (or * for all)")
    return int(value) - 1


def expand_heads(model: Transformer, heads: Iterable[Head]) -> list[Head]:
    """Heads with -1 for "every layer" or "every head" spelled out (see :func:`parse_heads`)."""
    config = model.config
    expanded: list[Head] = []
    for kind, layer, head in heads:
        for one_layer in range(config.layers(kind)) if layer == -1 else [layer]:
            for one_head in range(config.num_heads) if head == -1 else [head]:
                if (kind, one_layer, one_head) not in expanded:
                    expanded.append((kind, one_layer, one_head))
    return expanded


def scores(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, float]:
    """Corpus BLEU and chrF (sacreBLEU's defaults)."""
    import sacrebleu  # imported here: slow to import, and only the measurements need it

    return (
        sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
        sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
    )


@dataclass
class Importance:
    """Per kind, [layers, heads] tables: the BLEU and chrF lost when the head alone is off (ablation), and the
    gradient proxy; with the intact model's scores on the same sample."""

    sentences: int
    bleu: float
    chrf: float
    bleu_drop: dict[str, np.ndarray]
    chrf_drop: dict[str, np.ndarray]
    gradient: dict[str, np.ndarray]
    # the 95% paired bootstrap interval of each head's BLEU drop over the sentences ([layers, heads] each)
    bleu_drop_low: dict[str, np.ndarray] = field(default_factory=dict)
    bleu_drop_high: dict[str, np.ndarray] = field(default_factory=dict)

    def ranked(self, by: str = "bleu_drop") -> list[Head]:
        """Every head, least important first."""
        tables = getattr(self, by)
        heads = [(kind, layer, head) for kind in KINDS for layer, head in np.ndindex(tables[kind].shape)]
        return sorted(heads, key=lambda h: (tables[h[0]][h[1], h[2]], h))

    def to_json(self) -> dict:
        return {
            "sentences": self.sentences,
            "bleu": round(self.bleu, 2),
            "chrf": round(self.chrf, 2),
            **{
                name: {kind: np.round(table, 4).tolist() for kind, table in getattr(self, name).items()}
                for name in ("bleu_drop", "chrf_drop", "gradient", "bleu_drop_low", "bleu_drop_high")
                if getattr(self, name)
            },
        }


def gradient_importance(
    model: Transformer, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], batch_size: int = 16
) -> dict[str, np.ndarray]:
    """Michel et al.'s proxy: |∂L/∂ξ_h| summed over the sample, with L the teacher-forced cross-entropy."""
    model.eval()
    gates = {kind: gate.requires_grad_(True) for kind, gate in head_mask(model, ()).items()}
    device = next(model.parameters()).device
    examples = encode_pairs(pairs, tokenizer, max_tokens=model.config.max_positions - 1)
    totals = {kind: np.zeros(tuple(gate.shape)) for kind, gate in gates.items()}
    with model.head_mask(gates):
        for start in range(0, len(examples), batch_size):
            batch = collate(examples[start : start + batch_size]).to(device)
            logits = model(batch.source, batch.target_input).logits
            loss = F.cross_entropy(
                logits.flatten(0, 1).float(), batch.target_output.flatten(), ignore_index=PAD_ID, reduction="sum"
            )
            grads = torch.autograd.grad(loss, list(gates.values()))
            for kind, grad in zip(gates, grads, strict=True):
                totals[kind] += grad.abs().numpy()
    model.zero_grad(set_to_none=True)
    return totals


def head_importance(
    model: Transformer,
    tokenizer: Tokenizer,
    pairs: Sequence[tuple[str, str]],
    options: DecodingOptions = GREEDY,
    ablation: bool = True,
) -> Importance:
    """Every head's importance on ``pairs`` (source, reference): by ablation (unless ``ablation`` is False: one
    search of the sample per head) and by gradient."""
    sources, references = [source for source, _ in pairs], [reference for _, reference in pairs]
    intact = translate(model, tokenizer, sources, options)
    bleu, chrf = scores(intact, references)
    intact_statistics = intervals.bleu_statistics(intact, references)
    gradient = gradient_importance(model, tokenizer, pairs)
    bleu_drop = {kind: np.full(table.shape, np.nan) for kind, table in gradient.items()}
    chrf_drop = {kind: np.full(table.shape, np.nan) for kind, table in gradient.items()}
    low = {kind: np.full(table.shape, np.nan) for kind, table in gradient.items()}
    high = {kind: np.full(table.shape, np.nan) for kind, table in gradient.items()}
    if ablation:
        for kind, table in gradient.items():
            for layer, head in np.ndindex(table.shape):
                with model.head_mask(head_mask(model, [(kind, layer, head)])):
                    hypotheses = translate(model, tokenizer, sources, options)
                head_bleu, head_chrf = scores(hypotheses, references)
                bleu_drop[kind][layer, head] = bleu - head_bleu
                chrf_drop[kind][layer, head] = chrf - head_chrf
                drop = intervals.paired_bleu_difference(intact_statistics, hypotheses, references)
                low[kind][layer, head], high[kind][layer, head] = drop.low, drop.high
    if not ablation:
        low, high = {}, {}
    return Importance(len(pairs), bleu, chrf, bleu_drop, chrf_drop, gradient, low, high)


def prune_curve(
    model: Transformer,
    tokenizer: Tokenizer,
    pairs: Sequence[tuple[str, str]],
    order: Sequence[Head],
    counts: Sequence[int],
    options: DecodingOptions = GREEDY,
) -> list[dict]:
    """BLEU and chrF with the first k heads of ``order`` off, for each k in ``counts``."""
    sources, references = [source for source, _ in pairs], [reference for _, reference in pairs]
    curve = []
    intact = None
    for count in counts:
        with model.head_mask(head_mask(model, order[:count])):
            hypotheses = translate(model, tokenizer, sources, options)
        bleu, chrf = scores(hypotheses, references)
        point = {"heads_off": int(count), "bleu": round(bleu, 2), "chrf": round(chrf, 2)}
        if count == 0:
            intact = intervals.bleu_statistics(hypotheses, references)
        elif intact is not None:  # the BLEU change from every head on, with its paired 95% interval
            change = intervals.paired_bleu_difference(hypotheses, intact, references)
            point["change"] = {key: round(getattr(change, key), 2) for key in ("value", "low", "high")}
        curve.append(point)
    return curve


def measure_importance(
    model: Transformer,
    tokenizer: Tokenizer,
    pairs: Sequence[tuple[str, str]],
    options: DecodingOptions = GREEDY,
    ablation: bool = True,
    report_pairs: Sequence[tuple[str, str]] | None = None,
) -> dict:
    """Every head's importance (:func:`head_importance`), the heads ranked least important first (by BLEU drop, or
    by gradient without ``ablation``), and the :func:`prune_curve` (every 2nd k over the first quarter of the heads,
    then every eighth), as one JSON-ready dict; ``heads_off_within_1_bleu``: :func:`heads_off_within`.

    With ``report_pairs`` (other sentences), the ranking is chosen on ``pairs`` and everything reported is measured
    on ``report_pairs``: each head's drop with its interval, and the pruning curve in the order chosen elsewhere (a
    curve measured on the sentences its order was fitted to flatters itself). The choosing set's drops are kept
    under ``ranking``."""
    chosen = head_importance(model, tokenizer, pairs, options, ablation=ablation)
    order = chosen.ranked("bleu_drop" if ablation else "gradient")
    reported, curve_pairs = chosen, pairs
    if report_pairs is not None and ablation:
        reported, curve_pairs = head_importance(model, tokenizer, report_pairs, options), report_pairs
    total = len(order)
    # Fine steps over the first quarter, where the 1-BLEU mark lies, then coarse ones to the end.
    counts = sorted({0, *range(0, total // 4, max(1, total // 72)), *range(0, total, max(1, total // 8)), total - 1})
    curve = prune_curve(model, tokenizer, curve_pairs, order, counts, options)
    chosen_json = chosen.to_json()
    found = {
        "decoding": options.describe(),
        **reported.to_json(),
        "gradient": chosen_json["gradient"],
        "ranked_by": "bleu_drop" if ablation else "gradient",
        "ranked": [[kind, layer, head] for kind, layer, head in order],
        "prune": curve,
        "heads_off_within_1_bleu": heads_off_within(curve, reported.bleu),
        "heads_off_clear_within_1_bleu": heads_off_within(curve, reported.bleu, clear=True),
    }
    if reported is not chosen:
        found["ranking"] = {key: chosen_json[key] for key in ("sentences", "bleu", "chrf", "bleu_drop")}
    return found


def heads_off_within(curve: Sequence[dict], bleu: float, loss: float = 1.0, clear: bool = False) -> int:
    """The largest k such that switching off the k least important heads, and every smaller count measured, loses
    at most ``loss`` BLEU: "up to k heads" holds for each count up to k, not only for k itself (a larger count can
    measure within 1 again by the noise of a small sample while a smaller one does not). With ``clear``, the whole
    95% interval of each count's change must lie above −``loss``."""
    within = 0
    for point in sorted(curve, key=lambda point: point["heads_off"]):
        change = point.get("change")
        if point["bleu"] < bleu - loss or (clear and change is not None and change["low"] < -loss):
            break
        within = point["heads_off"]
    return within


def save_importance(loaded: LoadedCheckpoint, result: dict) -> Path:
    """Store a `python -m transformer importance` result beside the checkpoint's weights, with their fingerprint."""
    return save_beside(loaded, IMPORTANCE_FILE, result)


def read_importance(loaded: LoadedCheckpoint) -> dict | None:
    """The stored importance of these weights (None when there is none, it is unreadable, or the weights changed)."""
    return read_beside(loaded, IMPORTANCE_FILE)
