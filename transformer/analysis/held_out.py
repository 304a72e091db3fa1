"""Head scores as a reader can trust them: the best head chosen on one half of the sentences and its score reported on
the other half, with its 95% interval, for the anaphora heads (pronoun → antecedent) and the dictionary-alignment
cross heads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from transformer.analysis import intervals
from transformer.analysis.alignment import load_dictionary, sentence_alignment_hits
from transformer.analysis.attention import load_anaphora_examples
from transformer.analysis.heads import Sample, encoder_attentions, sentence_anaphora
from transformer.formats.checkpoint import LoadedCheckpoint


def anaphora_held_out(loaded: LoadedCheckpoint, examples=None) -> dict:
    """The best anaphora head chosen on half of the pronoun sentences and scored on the other half, both ways, so
    that every sentence is scored by a head chosen without it; the cross-fitted mean weight on the antecedent and
    the share of sentences whose antecedent is the pronoun's strongest word, each with its 95% bootstrap interval
    over the sentences, beside the best head's figure on all of them (chosen on the same sentences, flattering)."""
    examples = load_anaphora_examples() if examples is None else examples
    attention = encoder_attentions(loaded, [example.sentence for example in examples])
    if not attention:
        return {}
    counts = sentence_anaphora(attention, examples, np.shape(attention[0][1])[:2])
    weights, hits = counts["anaphora"].hits, counts["anaphora_hits"].hits  # [sentences, L, H]
    if len(weights) < 4:
        return {}
    weight, picks = intervals.held_out_best(weights)
    # the antecedent-is-top share of the same heads (chosen by weight): each sentence by a head chosen without it
    halves = [np.arange(1, len(weights), 2), np.arange(0, len(weights), 2)]  # the halves each choice scores
    chosen_hit = np.zeros(len(weights))
    for (layer, head), check in zip(picks, halves, strict=True):
        chosen_hit[check] = hits[check, layer, head]
    best = np.unravel_index(weights.mean(0).argmax(), weights.shape[1:])
    return {
        "sentences": len(weights),
        "heads": [[layer + 1, head + 1] for layer, head in picks],  # chosen on the even sentences, then the odd
        "weight": weight.as_dict(),
        "hits": intervals.mean(chosen_hit).as_dict(),
        "in_sample": {
            "layer": int(best[0]) + 1,
            "head": int(best[1]) + 1,
            "weight": round(float(weights.mean(0)[best]), 4),
        },
    }


def dictionary_held_out(loaded: LoadedCheckpoint, sentences: Sequence[str], dictionary=None) -> dict:
    """The cross head whose strongest source word is most often a dictionary translation, chosen on half of the
    model's own translations of ``sentences`` and scored on the other half, both ways: the pooled share with its
    95% bootstrap interval over sentences, beside the best head's share on all of them (chosen there, flattering)."""
    dictionary = load_dictionary() if dictionary is None else dictionary
    hits, words = [], []
    for source_ids, output, maps in Sample(loaded, sentences).decoded:
        found, counted, _, _ = sentence_alignment_hits(loaded.tokenizer, source_ids, output, maps.cross, dictionary)
        hits.append(np.asarray(found, dtype=float))
        words.append(counted)
    if len(hits) < 4 or not sum(words):
        return {}
    hits, words = np.stack(hits), np.asarray(words, dtype=float)  # [sentences, L, H], [sentences]
    share, picks = intervals.held_out_best(hits, words)
    best = np.unravel_index(hits.sum(0).argmax(), hits.shape[1:])
    return {
        "sentences": len(hits),
        "words": int(words.sum()),
        "heads": [[layer + 1, head + 1] for layer, head in picks],  # chosen on the even sentences, then the odd
        "share": share.as_dict(),
        "in_sample": {
            "layer": int(best[0]) + 1,
            "head": int(best[1]) + 1,
            "share": round(float(hits.sum(0)[best] / words.sum()), 4),
        },
    }
