"""Why the search chose this output: the beam search's tree, its n-best list, and each output token's probability
with the alternatives the model weighed (the views Seq2Seq-Vis offered for RNN models, here for the Transformer).

- :func:`explore_beam` runs the app's own beam search (:func:`transformer.search.decode.beam_search`) on one sentence
  with a :class:`~transformer.search.decode.BeamRecorder`, so the tree is the search that produced the translation, not
  a re-enactment: every hypothesis weighed at each step with its log-probability and length-normalised score, kept,
  finished or pruned. Its best finished hypothesis is the decoder's output.
- :func:`token_probabilities` scores a given output teacher-forced (one pass): the probability of each token, its
  rank, and the top-k alternatives at that position. It serves the beam explorer (the chosen hypothesis) and forced
  decoding (:mod:`transformer.analysis.forced`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID, Tokenizer
from transformer.search.decode import (
    DEFAULT_DECODING,
    BeamNode,
    BeamRecorder,
    DecodingOptions,
    beam_search,
    one_source,
    search_model,
)


@dataclass(frozen=True)
class TokenProbability:
    """One output position: the token written there, its probability and rank among the vocabulary, and the
    ``top`` most probable tokens at that position as (piece, probability), best first."""

    position: int
    token: int
    piece: str
    probability: float
    log_prob: float
    rank: int
    top: list[tuple[str, float]]


@torch.no_grad()
def token_probabilities(
    model: Transformer,
    tokenizer: Tokenizer,
    source_ids: Sequence[int],
    output_ids: Sequence[int],
    top_k: int = 5,
    logits: torch.Tensor | None = None,
) -> list[TokenProbability]:
    """Teacher-forced probabilities of ``output_ids`` (without <s>/</s>) given ``source_ids`` (ending with </s>):
    one entry per output token and one for the closing </s>. Summed, their log-probabilities are the sequence's
    log P(y | x), which beam search ranks (before the length penalty). ``logits`` (T, V) of a pass already made
    over the same pair (:func:`~transformer.analysis.attention.teacher_forced`) save the model a second pass."""
    model.eval()
    device = next(model.parameters()).device
    if logits is None:
        source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
        target_input = torch.tensor([[BOS_ID, *output_ids]], dtype=torch.long, device=device)
        logits = model(source, target_input).logits[0]
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (T, V)
    written = torch.tensor([*output_ids, EOS_ID], device=log_probs.device)
    chosen = log_probs.gather(1, written[:, None])[:, 0]
    ranks = (log_probs > chosen[:, None]).sum(dim=1) + 1
    top_values, top_ids = log_probs.topk(min(top_k, log_probs.size(-1)), dim=-1)
    result = []
    for position, token in enumerate(written.tolist()):
        pieces = tokenizer.pieces(top_ids[position].tolist())
        alternatives = [(piece, float(value.exp())) for piece, value in zip(pieces, top_values[position], strict=True)]
        result.append(
            TokenProbability(
                position,
                token,
                tokenizer.pieces([token])[0],
                float(chosen[position].exp()),
                float(chosen[position]),
                int(ranks[position]),
                alternatives,
            )
        )
    return result


@dataclass
class BeamTree:
    """The search tree of one sentence's beam search: ``nodes`` (ids are positions; 0 is the <s> root), the
    options searched with, and the source ids the model read."""

    nodes: list[BeamNode]
    options: DecodingOptions
    source_ids: list[int]

    def path(self, node_id: int) -> list[BeamNode]:
        """The nodes from the root's first child to ``node_id``."""
        path = []
        node: BeamNode | None = self.nodes[node_id]
        while node is not None and node.parent is not None:
            path.append(node)
            node = self.nodes[node.parent]
        return path[::-1]

    def tokens(self, node_id: int) -> list[int]:
        """The output ids of the hypothesis ending at ``node_id``, without </s>."""
        return [node.token for node in self.path(node_id) if node.token != EOS_ID]

    def finished(self) -> list[BeamNode]:
        """The n-best list: finished hypotheses, best score first."""
        return sorted((node for node in self.nodes if node.status == "finished"), key=lambda n: -n.score)

    def best(self) -> BeamNode | None:
        finished = self.finished()
        return finished[0] if finished else None

    def steps(self) -> int:
        return max(node.step for node in self.nodes)


@torch.no_grad()
def explore_beam(
    model: Transformer,
    tokenizer: Tokenizer,
    text: str,
    options: DecodingOptions = DEFAULT_DECODING,
    max_tokens: int | None = None,
) -> BeamTree:
    """Beam search of one sentence with its tree recorded (beam size 1: the greedy path with the candidate it
    weighed beside each step). The search runs until none of its ``beam_size`` best finished hypotheses can still be
    displaced by a live one, so that the n-best list is that of a search to the length limit (its best one is the
    translation either way)."""
    model.eval()
    searcher = search_model(model, options.precision)
    encoded, source = one_source(model, tokenizer, text, max_tokens)
    recorder = BeamRecorder()
    beam_search(
        searcher,
        source,
        options.beam_size,
        options.alpha,
        settle=options.beam_size,
        max_extra_tokens=options.max_extra_tokens,
        recorder=recorder,
    )
    return BeamTree(recorder.nodes[0], options, list(encoded.ids))
