"""Which source words did not make it into the translation?

Contrastive conditioning (Vamvas & Sennrich 2022, "As Little as Possible, as Much as Necessary: Detecting Over- and
Undertranslations with Contrastive Conditioning"): score the translation, teacher-forced, once given the whole
source and once given the source without one word. A word the translation renders makes it *less* likely when left
out of the source; a word the translation leaves out makes it *more* likely (the shorter source now fits it
better). The gain in log-probability, per source word, is the flag: the higher, the likelier that word went
untranslated. It asks the model itself, where attention only shows where a head looked; on gold pairs with one
word's translation deleted on purpose, attention coverage finds the deleted word less often
(``benchmarks/omissions.py``, docs/trust.md).

Words are whitespace-separated; only content words (not in :data:`FUNCTION_WORDS`, containing a letter, two
characters or more) are flagged, since a left-out article rarely changes what a translation says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.data import pad
from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID

FUNCTION_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me might more most must my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would yet you your yours yourself yourselves""".split()
)
GERMAN_FUNCTION_WORDS = frozenset(
    """aber als am an auch auf aus bei bin bis bist da damit dann das dass daß dem den denn der des die dies diese
    diesem diesen dieser dieses doch du durch ein eine einem einen einer eines er es euch für hat hatte haben habe
    hier ich ihr ihm ihn ihnen im in ist ja jetzt kann man mich mir mit muss nach nicht noch nun nur ob oder ohne
    schon sehr sein seine sich sie sind so soll über um und uns unter vom von vor war waren was weil wenn wer wie wir
    wird wo zu zum zur""".split()
)
BATCH = 32  # source variants scored in one padded pass
# The app marks a word "possibly left untranslated" when leaving it out makes the translation this much more likely
# (nats). On the gold pairs with one word's translation deleted, 67% of the deleted words pass it; in 44% of the
# intact pairs some word passes it too (their references are free translations): a prompt to look, not a verdict.
MARGIN = 1.0
OMISSIONS_FILE = "omissions.json"  # beside a model: how often its marks were right (benchmarks/omissions.py --store)
SUPPORT_MARGIN = 0.0  # a content word the source does not make more likely at all: "not from the source"?


def content_word(word: str) -> bool:
    core = word.strip(".,;:!?\"'()[]«»“”‘’").lower()
    return len(core) >= 2 and any(c.isalpha() for c in core) and core not in FUNCTION_WORDS


@dataclass
class Omissions:
    words: list[str]  # the source words
    gain: (
        np.ndarray
    )  # [words]: log p(translation | source without the word) − log p(translation | source); NaN: not scored
    log_probability: float  # log p(translation | whole source)

    def ranked(self) -> list[int]:
        """Scored words, likeliest left out first."""
        scored = [i for i in range(len(self.words)) if np.isfinite(self.gain[i])]
        return sorted(scored, key=lambda i: -self.gain[i])

    def flagged(self, margin: float = MARGIN) -> list[int]:
        """Words whose removal makes the translation more likely by more than ``margin`` (nats)."""
        return [i for i in self.ranked() if self.gain[i] > margin]


def _log_likelihoods(loaded: LoadedCheckpoint, sources: Sequence[Sequence[int]], output: Sequence[int]) -> np.ndarray:
    """log p(output, then </s> | source) for each source (each ending with </s>)."""
    return _token_log_probabilities(loaded, sources, output).sum(axis=1)


def _token_log_probabilities(
    loaded: LoadedCheckpoint, sources: Sequence[Sequence[int]], output: Sequence[int]
) -> np.ndarray:
    """[sources, output tokens + 1]: log p of each output token, then of </s>, given each source."""
    model = loaded.model
    device = next(model.parameters()).device
    found = []
    for start in range(0, len(sources), BATCH):
        chunk = sources[start : start + BATCH]
        source = pad([list(ids) for ids in chunk], PAD_ID).to(device)
        rows = source.shape[0]
        target_input = torch.tensor([[BOS_ID, *output]], device=device).expand(rows, -1)
        target_output = torch.tensor([[*output, EOS_ID]], device=device).expand(rows, -1)
        with torch.no_grad():
            memory, _ = model.encode(source)
            hidden, _, _ = model.decode(target_input, memory, model.source_mask(source))
            log_p = torch.log_softmax(model.project(hidden).float(), dim=-1)
        found.append(log_p.gather(2, target_output[..., None])[..., 0].cpu().numpy())
    return np.concatenate(found)


def omissions(loaded: LoadedCheckpoint, source_words: Sequence[str], output_ids: Sequence[int]) -> Omissions:
    """Contrastive conditioning of a translation (``output_ids``, without <s>/</s>) on each content word of the
    source (``source_words``, whitespace-separated words)."""
    words = list(source_words)
    encode = loaded.tokenizer.encode
    scored = [i for i, word in enumerate(words) if content_word(word)]
    sources = [[*encode(" ".join(words)), EOS_ID]]
    sources += [[*encode(" ".join(words[:i] + words[i + 1 :])), EOS_ID] for i in scored]
    limit = loaded.model.config.max_positions - 1
    if max(map(len, sources)) > limit or len(output_ids) + 1 > limit:
        raise ValueError(f"a sentence is longer than the model reads ({limit} pieces)")
    likelihoods = _log_likelihoods(loaded, sources, output_ids)
    gain = np.full(len(words), np.nan)
    gain[scored] = likelihoods[1:] - likelihoods[0]
    return Omissions(words, gain, float(likelihoods[0]))


@dataclass
class Support:
    """How much the source supports each output word: its log-probability given the source and given no source
    (an empty one: the decoder then writes from the German written so far alone). Their difference, the pointwise
    mutual information with the source, is small for a word written from the target side alone — function words,
    endings, and words that come from nowhere in the source."""

    words: list[str]  # output words
    with_source: np.ndarray  # [words] log p(word | source, prefix), its pieces' summed
    without_source: np.ndarray  # [words] log p(word | no source, prefix)

    @property
    def pmi(self) -> np.ndarray:
        return self.with_source - self.without_source

    def ranked(self) -> list[int]:
        """German content words, least supported by the source first."""
        scored = [i for i, word in enumerate(self.words) if german_content_word(word)]
        return sorted(scored, key=lambda i: self.pmi[i])

    def flagged(self, margin: float = SUPPORT_MARGIN) -> list[int]:
        """Content words the source makes at most ``margin`` nats more likely."""
        return [i for i in self.ranked() if self.pmi[i] <= margin]


def german_content_word(word: str) -> bool:
    core = word.strip(".,;:!?\"'()[]«»„“”‘’-").lower()
    return len(core) >= 2 and any(c.isalpha() for c in core) and core not in GERMAN_FUNCTION_WORDS


def source_support(
    loaded: LoadedCheckpoint,
    source_ids: Sequence[int],
    output_ids: Sequence[int],
    owners: Sequence[int],
    words: Sequence[str],
) -> Support:
    """:class:`Support` of output words ``words``; ``owners`` gives the word of each output piece."""
    found = _token_log_probabilities(loaded, [list(source_ids), [EOS_ID]], output_ids)[:, : len(output_ids)]
    by_word = np.zeros((2, len(words)))
    np.add.at(by_word.T, list(owners), found.T)
    return Support(list(words), by_word[0], by_word[1])
