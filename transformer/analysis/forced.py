"""Forced decoding: how the model scores a translation someone else wrote.

The model reads the source and is fed a given German sentence (yours, or a test set's reference) token by token,
teacher-forced, instead of its own choices: each token's probability and rank, the tokens it would have preferred,
and every head's attention over that sentence — beside the same for the model's own output, with BLEU and chrF of
the model's output against the given sentence.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from transformer.analysis.attention import AttentionMaps, Translation, teacher_forced
from transformer.analysis.beam import TokenProbability, token_probabilities
from transformer.paper.data import DATA_ROOT, read_pairs
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import Tokenizer


@dataclass
class Scored:
    """An output scored teacher-forced: its ids, attention and per-token probabilities (the last is </s>)."""

    text: str
    output_ids: list[int]
    maps: AttentionMaps
    tokens: list[TokenProbability]
    truncated: bool = False  # the given sentence was longer than the model can write: only its start was scored

    @property
    def log_prob(self) -> float:
        """log P(y | x), </s> included."""
        return sum(token.log_prob for token in self.tokens)

    @property
    def mean_log_prob(self) -> float:
        return self.log_prob / len(self.tokens)


@dataclass
class ForcedDecoding:
    """A given translation and the model's own, both scored on the same source; BLEU and chrF of the model's
    output with the given sentence as the reference."""

    given: Scored
    model: Scored
    bleu: float
    chrf: float


def score_output(
    model: Transformer, tokenizer: Tokenizer, source_ids: list[int], output_ids: list[int], text: str, top_k: int = 5
) -> Scored:
    """Teacher-forced attention and probabilities of one output (ids without <s>/</s>), cut to the model's reach."""
    reach = model.config.max_positions - 1  # <s> and the output share the decoder's positions
    truncated = len(output_ids) > reach
    output_ids = list(output_ids[:reach])
    maps, logits = teacher_forced(model, tokenizer, source_ids, output_ids)  # one pass for both
    tokens = token_probabilities(model, tokenizer, source_ids, output_ids, top_k, logits=logits)
    return Scored(text, output_ids, maps, tokens, truncated)


def force(
    model: Transformer, tokenizer: Tokenizer, translation: Translation, given: str, top_k: int = 5
) -> ForcedDecoding:
    """Score ``given`` (a German sentence) as the translation of ``translation``'s source, and the model's own
    output beside it."""
    import sacrebleu  # slow to import; only this view needs it

    given = given.strip()
    if not given:
        raise ValueError("type a translation to score")
    source_ids = list(translation.source_ids)
    scored_given = score_output(model, tokenizer, source_ids, tokenizer.encode_target(given), given, top_k)
    scored_model = score_output(
        model, tokenizer, source_ids, list(translation.output_ids), translation.translation, top_k
    )
    hypothesis = translation.translation
    return ForcedDecoding(
        scored_given,
        scored_model,
        sacrebleu.sentence_bleu(hypothesis, [given]).score,
        sacrebleu.sentence_chrf(hypothesis, [given]).score,
    )


REFERENCE_SETS = (
    "test/tatoeba_new",
    "test/multi30k_test2016",
    "test/newstest2014",
    "dev/newstest2013",
    "dev/multi30k_val",
)


@functools.cache
def _references(root: str, languages: tuple[str, str]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for name in REFERENCE_SETS:
        try:
            pairs = read_pairs(f"{root}/{name}", languages)
        except (OSError, ValueError):
            continue  # the data is not on this machine: no references to offer
        for source, reference in pairs:
            found.setdefault(source.strip(), (name.split("/")[1], reference))
    return found


def reference_for(
    sentence: str, root: str | None = None, languages: tuple[str, str] = ("en", "de")
) -> tuple[str, str] | None:
    """(test set, reference translation) when ``sentence`` is a source line of one of the dev or test sets in the
    data folder (``$TRANSFORMER_DATA``, default ``../shared/data/en-de``), else None."""
    return _references(str(root or DATA_ROOT), tuple(languages)).get(sentence.strip())
