"""Greedy and beam-search decoding with cached keys and values (§6.1).

Beam search follows the paper's settings by default: beam size 4, length penalty α = 0.6 (Wu et al. 2016:
lp(Y) = ((5 + |Y|) / 6)^α, scores are log P(Y|X) / lp(Y)), maximum output length = input length + 50, ending early
when possible: a sentence's search ends once no live hypothesis can beat its best finished one (tensor2tensor's
rule), and beam size 1 is exactly greedy decoding.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from transformer.paper.config import ModelConfig
from transformer.paper.data import pad
from transformer.paper.model import MultiHeadAttention, Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID, Tokenizer
from transformer.search.fast import StepDecoder, encode

EXTRA_OUTPUT_TOKENS = 50  # §6.1: maximum output length = input length + 50
PRECISIONS = ("float32", "bfloat16")


@dataclass(frozen=True)
class DecodingOptions:
    """How to search for a translation: one object from the app's sidebar and the command lines to the search.

    ``beam_size`` 1 is greedy decoding; ``alpha`` is the length penalty of §7 (GNMT's ((5 + |Y|) / 6)^α);
    ``max_extra_tokens`` bounds an output at input length + that many tokens (§6.1: 50); ``precision`` "bfloat16"
    searches with a bfloat16 copy of the weights (:func:`search_model`)."""

    beam_size: int = 4
    alpha: float = 0.6
    max_extra_tokens: int = EXTRA_OUTPUT_TOKENS
    precision: str = "float32"

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError("beam_size must be at least 1")
        if not self.alpha >= 0:
            raise ValueError("alpha must be a non-negative number")
        if self.max_extra_tokens < 1:
            raise ValueError("max_extra_tokens must be at least 1")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}")

    @property
    def greedy(self) -> bool:
        return self.beam_size == 1

    def describe(self) -> str:
        """ "greedy" or "beam 4, α = 0.6", and the precision: "… , float32 search"."""
        search = "greedy" if self.greedy else f"beam {self.beam_size}, α = {self.alpha}"
        return f"{search}, {self.precision} search"


DEFAULT_DECODING = DecodingOptions()  # the paper's: beam 4, α = 0.6, input + 50 tokens
GREEDY = DecodingOptions(beam_size=1)


def default_precision() -> str:
    """float32 on every device: the search then finds the model's own translation (the one CTranslate2 float32
    finds too, benchmarks/search_speed.py). On a 2-core AVX512-BF16 CPU a bfloat16 search took about 20% less time
    (44 against 57 ms a sentence, beam 4) but changed 2 of 60 everyday translations; it stays a choice."""
    return "float32"


_SEARCH_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def search_model(model: Transformer, precision: str) -> Transformer:
    """The model to search with: ``model`` itself for float32, else a bfloat16 copy.

    The copy is made once per model and made again after the model's weights change (each parameter's version
    counter moves on every in-place update, e.g. an optimizer step).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision == "float32":
        return model
    versions = tuple(parameter._version for parameter in model.parameters())
    cached = _SEARCH_COPIES.get(model)
    if cached is None or cached[0] != versions:
        reduced = copy.deepcopy(model).to(torch.bfloat16).eval()
        _SEARCH_COPIES[model] = cached = (versions, reduced)
    # Heads switched off on the model (Transformer.head_mask) are off in its copy too, and only while they are.
    for original, reduced in zip(model.modules(), cached[1].modules(), strict=True):
        if isinstance(original, MultiHeadAttention):
            reduced.head_gate = original.head_gate
    return cached[1]


@dataclass
class BeamNode:
    """One hypothesis of a beam search: the token it adds to its parent, its log-probability log P(y₁…y_step | x)
    and its length-normalised score (log-probability / lp(step)). ``status``: "kept" (among the beams carried to
    the next step), "finished" (ended with </s> among the best), "pruned" (a candidate the search dropped) or
    "root" (the <s> every hypothesis starts from)."""

    id: int
    parent: int | None
    step: int
    token: int
    log_prob: float
    score: float
    status: str


@dataclass
class BeamRecorder:
    """Records the search tree of every sentence of a :func:`beam_search` call: at each step, every candidate the
    search weighed (the best 2·beam continuations of the live hypotheses), kept, finished or pruned.

    ``nodes[sentence]`` lists the nodes in the order they were made (ids are positions in that list; node 0 is the
    root). Only pass one when the tree is wanted: recording reads the candidates back from the device each step."""

    alpha: float = 0.6
    nodes: list[list[BeamNode]] = field(default_factory=list)
    _beams: list[list[int | None]] = field(default_factory=list)  # node id of each live beam, per sentence

    def start(self, batch: int, beams: int) -> None:
        self.nodes = [[BeamNode(0, None, 0, BOS_ID, 0.0, 0.0, "root")] for _ in range(batch)]
        self._beams = [[0] + [None] * (beams - 1) for _ in range(batch)]

    def step(
        self,
        step: int,
        top_scores: Tensor,
        origins: Tensor,
        tokens: Tensor,
        ends: Tensor,
        alive_ranks: Tensor,
        active: list[int],
    ) -> None:
        """One step's candidates (A, 2K) and which ranks stay alive (A, K) of the sentences still searching:
        row ``i`` is sentence ``active[i]``."""
        penalty = float(length_penalty(step, self.alpha))
        beams = alive_ranks.size(1)
        scores, origins, tokens = top_scores.tolist(), origins.tolist(), tokens.tolist()
        ends, alive = ends.tolist(), alive_ranks.tolist()
        for row, sentence in enumerate(active):
            kept = set(alive[row])
            parents = self._beams[sentence]
            next_beams: list[int | None] = [None] * beams
            for rank, (log_prob, origin, token) in enumerate(zip(scores[row], origins[row], tokens[row], strict=True)):
                parent = parents[origin]
                if parent is None or log_prob == float("-inf"):
                    continue
                if ends[row][rank]:
                    status = "finished" if rank < beams else "pruned"
                else:
                    status = "kept" if rank in kept else "pruned"
                node = BeamNode(
                    len(self.nodes[sentence]),
                    parent,
                    step,
                    int(token),
                    float(log_prob),
                    float(log_prob) / penalty,
                    status,
                )
                self.nodes[sentence].append(node)
                if status == "kept":
                    next_beams[alive[row].index(rank)] = node.id
            self._beams[sentence] = next_beams


def length_penalty(length: int | Tensor, alpha: float) -> float | Tensor:
    """GNMT length penalty ((5 + length) / 6)^α; α = 0 turns it off."""
    return ((5 + length) / 6) ** alpha


def output_limits(model: Transformer, source: Tensor, extra: int = EXTRA_OUTPUT_TOKENS) -> Tensor:
    """Per-sentence maximum number of generated tokens (</s> included): source length + ``extra`` (§6.1: 50), within
    the model's reach."""
    source_lengths = (source != model.config.pad_id).sum(dim=1)
    return (source_lengths + extra).clamp(max=model.config.max_positions - 1)


@torch.no_grad()
def greedy_decode(
    model: Transformer, source: Tensor, max_extra_tokens: int = EXTRA_OUTPUT_TOKENS, memory: Tensor | None = None
) -> list[list[int]]:
    """Pick the most probable token at each step. source (B, S) → B token lists without <s>/</s>. ``memory``: the
    encoder's output for ``source`` when it is at hand (:func:`~transformer.search.fast.encode_recording`)."""
    config = model.config
    batch = source.size(0)
    memory = encode(model, source) if memory is None else memory
    decoder = StepDecoder(model, memory, source)
    limits = output_limits(model, source, max_extra_tokens)
    last = torch.full((batch,), config.bos_id, dtype=torch.long, device=source.device)
    outputs: list[list[int]] = [[] for _ in range(batch)]
    live = list(range(batch))  # the sentences still decoding: the tensors hold only their rows (as in beam_search)
    for step in range(1, int(limits.max()) + 1):
        tokens = restrict(decoder.logits(decoder.step(last)), config, step).argmax(dim=-1)  # (A,)
        tokens = torch.where(step >= limits, torch.full_like(tokens, config.eos_id), tokens)
        ended = tokens == config.eos_id
        for sentence, token in zip(live, tokens.tolist(), strict=True):
            if token != config.eos_id:
                outputs[sentence].append(token)
        if bool(ended.all()):
            break
        last = tokens
        if bool(ended.any()):  # the finished sentences' rows leave every tensor
            kept = (~ended).nonzero().flatten()
            last, limits = last[kept], limits[kept]
            decoder.keep_sentences(kept)
            decoder.reorder(kept)
            live = [live[row] for row in kept.tolist()]
    return outputs


@torch.no_grad()
def beam_search(
    model: Transformer,
    source: Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    early_stop: bool = True,
    max_extra_tokens: int = EXTRA_OUTPUT_TOKENS,
    recorder: BeamRecorder | None = None,
    memory: Tensor | None = None,
    settle: int = 1,
) -> list[list[int]]:
    """Batched beam search. source (B, S) → for each sentence the best hypothesis, without <s>/</s>.

    A sentence's search ends at its length limit or (with ``early_stop``) as soon as no live hypothesis can still
    beat its best finished one: log-probabilities only fall as a hypothesis grows, so this rule never changes the
    result of searching to the limit, only saves the steps. It is tensor2tensor's rule (the paper's code, with
    ``stop_early``); a search that ends once ``beam_size`` hypotheses have finished can miss a longer one that the
    length penalty ranks higher (1–2% of outputs). One beam is greedy decoding: it ends at the first </s> (as
    tensor2tensor decodes greedily at beam size 1). With ``settle`` = k the search goes on until none of its k best
    finished hypotheses can be displaced (the n-best list of a :class:`BeamRecorder`'s tree; needs ``early_stop``).
    A ``recorder`` keeps the search tree. ``memory``: as for :func:`greedy_decode`.
    """
    if beam_size < 1:
        raise ValueError("beam_size must be at least 1")
    if settle < 1:
        raise ValueError("settle must be at least 1")
    config, device = model.config, source.device
    batch, beams = source.size(0), beam_size
    memory = encode(model, source) if memory is None else memory
    decoder = StepDecoder(model, memory, source, beams)
    limits = output_limits(model, source, max_extra_tokens).tolist()  # per sentence still searching
    sequences = torch.full((batch * beams, 1), config.bos_id, dtype=torch.long, device=device)
    scores = torch.full((batch, beams), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch)]
    batch_offsets = (torch.arange(batch, device=device) * beams).unsqueeze(1)  # (B, 1)
    if recorder is not None:
        recorder.alpha = alpha
        recorder.start(batch, beams)

    # The sentences still searching, by their index in ``source``: the tensors below hold only their rows, so a
    # sentence that has finished costs nothing at the steps after (a batch runs until its longest sentence ends).
    live = list(range(batch))
    for step in range(1, max(limits) + 1):
        at_limit = None
        if step >= min(limits):  # some sentence's hypotheses may only end now
            at_limit = torch.tensor([step >= limit for limit in limits], device=device).repeat_interleave(beams)
        log_probs = restrict(_next_log_probs(decoder, sequences[:, -1], at_limit), config, step)  # (A·K, V)
        vocab = log_probs.size(-1)
        candidates = (scores.view(-1, 1) + log_probs).view(len(live), beams * vocab)
        top_scores, top_indices = candidates.topk(2 * beams, dim=1)  # (A, 2K): at least K of them do not end
        origins = top_indices // vocab
        tokens = top_indices % vocab
        ends = tokens == config.eos_id

        penalty = length_penalty(step, alpha)
        for row, rank in ends[:, :beams].nonzero().tolist():
            score = float(top_scores[row, rank])
            if score == float("-inf"):
                continue
            hypothesis = sequences[row * beams + int(origins[row, rank]), 1:].tolist()
            finished[live[row]].append((score / penalty, hypothesis))
        alive_scores = top_scores.masked_fill(ends, float("-inf"))
        alive_scores, alive_ranks = alive_scores.topk(beams, dim=1)  # (A, K), in order of score
        if recorder is not None:
            recorder.step(step, top_scores, origins, tokens, ends, alive_ranks, live)
        still = _searching_on(
            [finished[sentence] for sentence in live],
            alive_scores[:, 0].tolist(),
            limits,
            step,
            beams,
            alpha,
            early_stop,
            settle,
        )
        if not still:
            break

        rows = origins.gather(1, alive_ranks) + batch_offsets[: len(live)]  # (A, K): the beams each continues
        next_tokens = tokens.gather(1, alive_ranks)
        dropped = len(still) < len(live)
        if dropped:  # the finished sentences' rows leave every tensor
            kept = torch.tensor(still, device=device)
            rows, next_tokens, alive_scores = rows[kept], next_tokens[kept], alive_scores[kept]
            limits = [limits[row] for row in still]
            decoder.keep_sentences(kept)
            live = [live[row] for row in still]
        rows = rows.view(-1)
        scores = alive_scores
        sequences = torch.cat([sequences.index_select(0, rows), next_tokens.view(-1, 1)], dim=1)
        decoder.reorder(rows)

    # A sentence always finishes with a positive limit; [] keeps the answer a list of lists whatever happens.
    return [max(found, key=lambda item: item[0])[1] if found else [] for found in finished]


def restrict(scores: Tensor, config: ModelConfig, step: int) -> Tensor:
    """Scores (A, V) of the next token with the tokens no translation may hold set to -inf, in place: <pad> and <s>
    (Hugging Face's Marian models forbid their padding piece the same way), and at the first step every token but
    the model's forced first one where it has one (the target language of M2M100/NLLB)."""
    scores[:, [config.pad_id, config.bos_id]] = float("-inf")
    if step == 1 and config.forced_first_id >= 0:  # log-probability 0, as Hugging Face forces it
        scores.fill_(float("-inf"))
        scores[:, config.forced_first_id] = 0.0
    return scores


def _next_log_probs(decoder: StepDecoder, last: Tensor, at_limit: Tensor | None) -> Tensor:
    """Log-probabilities of every hypothesis's next token (A·K, V) from its ``last`` one (A·K,); a hypothesis
    ``at_limit`` (its sentence's length limit) may only end."""
    log_probs = torch.log_softmax(decoder.logits(decoder.step(last)).float(), dim=-1)
    if at_limit is not None and bool(at_limit.any()):
        forced = torch.full_like(log_probs[at_limit], float("-inf"))
        forced[:, EOS_ID] = log_probs[at_limit, EOS_ID]
        log_probs[at_limit] = forced
    return log_probs


def _searching_on(
    finished: list[list[tuple[float, list[int]]]],
    best_alive: list[float],
    limits: list[int],
    step: int,
    beams: int,
    alpha: float,
    early_stop: bool,
    settle: int,
) -> list[int]:
    """The rows of the sentences whose search goes on after ``step``: below their length limit, not a greedy search
    (one beam) that has found its </s>, and (with ``early_stop``) while a live hypothesis could still beat the
    ``settle``-th best finished one."""
    still = []
    for row, found in enumerate(finished):
        if step >= limits[row] or (beams == 1 and found):
            continue
        if early_stop and len(found) >= settle:
            # Log-probabilities only fall as a hypothesis grows, so the best any live one can still reach is its
            # score now over the largest length penalty it can get. Below the settle-th best finished score, the
            # rest of the search cannot change the best settle hypotheses.
            largest_penalty = max(length_penalty(step + 1, alpha), length_penalty(limits[row], alpha))
            bar = sorted((score for score, _ in found), reverse=True)[settle - 1]
            if best_alive[row] / largest_penalty < bar:
                continue
        still.append(row)
    return still


def search(
    model: Transformer, source: Tensor, options: DecodingOptions = DEFAULT_DECODING, memory: Tensor | None = None
) -> list[list[int]]:
    """Greedy decoding for beam size 1, beam search otherwise (``model`` as :func:`search_model` prepared it;
    ``memory`` as for :func:`greedy_decode`)."""
    if options.greedy:
        return greedy_decode(model, source, options.max_extra_tokens, memory)
    return beam_search(
        model, source, options.beam_size, options.alpha, max_extra_tokens=options.max_extra_tokens, memory=memory
    )


@dataclass
class EncodedSource:
    ids: list[int]
    truncated: bool


def encode_source(tokenizer: Tokenizer, text: str, max_tokens: int) -> EncodedSource:
    """Source ids ending with </s>, cut to ``max_tokens`` (</s> included) if the text is longer."""
    ids = tokenizer.encode(text)
    truncated = len(ids) + 1 > max_tokens
    return EncodedSource([*ids[: max_tokens - 1], EOS_ID], truncated)


def max_source_tokens(model: Transformer) -> int:
    """Longest source (</s> included) whose output limit still fits the model's positions."""
    return max(1, model.config.max_positions - 1 - EXTRA_OUTPUT_TOKENS)


def source_limit(model: Transformer, max_tokens: int | None = None) -> int:
    """Source tokens (</s> included) a search may read: ``max_tokens`` when given, never beyond the model's reach."""
    return min(max_tokens or max_source_tokens(model), max_source_tokens(model))


def one_source(
    model: Transformer, tokenizer: Tokenizer, text: str, max_tokens: int | None = None
) -> tuple[EncodedSource, Tensor]:
    """One sentence encoded for a search (cut to :func:`source_limit`) and as a (1, S) tensor on the model's device."""
    encoded = encode_source(tokenizer, text, source_limit(model, max_tokens))
    return encoded, torch.tensor([encoded.ids], dtype=torch.long, device=next(model.parameters()).device)


@torch.no_grad()
def translate_ids(
    model: Transformer,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    options: DecodingOptions = DEFAULT_DECODING,
    batch_size: int = 32,
    max_tokens: int | None = None,
) -> tuple[list[list[int]], list[list[int]]]:
    """Source ids (cut to the model's reach, ending with </s>) and output ids of many sentences, searched in
    batches of similar length; both come back in input order."""
    model.eval()
    searcher = search_model(model, options.precision)
    limit = source_limit(model, max_tokens)
    encoded = [encode_source(tokenizer, text, limit).ids for text in sentences]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    device = next(model.parameters()).device
    outputs: list[list[int]] = [[] for _ in encoded]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        found = search(searcher, pad([encoded[i] for i in chunk]).to(device), options)
        for index, output in zip(chunk, found, strict=True):
            outputs[index] = output
    return encoded, outputs


def translate(
    model: Transformer,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    options: DecodingOptions = DEFAULT_DECODING,
    batch_size: int = 32,
    max_tokens: int | None = None,
) -> list[str]:
    """Translate many sentences (see :func:`translate_ids`); results come back in input order."""
    _, outputs = translate_ids(model, tokenizer, sentences, options, batch_size, max_tokens)
    return [tokenizer.decode(output) for output in outputs]
