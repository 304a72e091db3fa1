"""95% bootstrap intervals for the figures the app and the docs report (Efron & Tibshirani 1993, the percentile
interval): how far a figure measured on a few hundred sentences could move on another draw of sentences like them.

Every measure here is a function of sums over *items* (sentence pairs, tokens, omission cases): an AER pools the
links of every pair, an accuracy counts hits over arcs. :func:`bootstrap` takes each item's counts as one row,
draws ``resamples`` sets of items with replacement (each item as often as a multinomial draw says), sums each set's
rows and applies the measure to the sums, so a pooled ratio is resampled as a pooled ratio, never as a mean of
per-item ratios. Items are whole sentences wherever a measure has several counts per sentence (a cluster
bootstrap): the links or arcs of one sentence are not independent of each other.

A *paired* interval (:func:`paired`) resamples the same items for two measures and reports their difference: a head
against its baseline on the same arcs, a detector against chance on the same omissions. A head is called better
than its baseline only when the whole interval of the difference lies above zero (:meth:`Interval.above`).

Seeded (:data:`SEED`), so the same counts give the same interval on every machine. BLEU and chrF are resampled by
sacreBLEU itself (:func:`bleu_interval`, :func:`paired_bleu`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 1000
SEED = 12345
CHUNK = 200  # resamples drawn at once (a [CHUNK, items] matrix of counts)


@dataclass(frozen=True)
class Interval:
    """A figure on the whole set (``value``) and its 95% bootstrap interval [``low``, ``high``] over ``items``."""

    value: float
    low: float
    high: float
    items: int

    def above(self, other: float = 0.0) -> bool:
        """The whole interval lies above ``other`` (for a paired difference: the first measure is higher)."""
        return self.low > other

    def below(self, other: float = 0.0) -> bool:
        return self.high < other

    def format(self, digits: int = 3, scale: float = 1.0) -> str:
        """``0.206 [0.171, 0.243]``; ``scale=100`` for percentages."""
        value, low, high = (round(number * scale, digits) for number in (self.value, self.low, self.high))
        return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"

    def as_dict(self, digits: int = 4) -> dict[str, float | int]:
        return {
            "value": round(self.value, digits),
            "low": round(self.low, digits),
            "high": round(self.high, digits),
            "items": self.items,
        }

    @staticmethod
    def from_dict(stored: dict) -> Interval:
        return Interval(float(stored["value"]), float(stored["low"]), float(stored["high"]), int(stored["items"]))


def resampled_counts(items: int, resamples: int = RESAMPLES, seed: int = SEED):
    """Yield [chunk, items] matrices: how often each item is drawn in each resample (each row sums to ``items``)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        yield rng.multinomial(items, np.full(items, 1.0 / items), size=size).astype(np.float64)


def bootstrap(
    rows: np.ndarray,
    measure: Callable[[np.ndarray], np.ndarray],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Interval:
    """``rows`` [items, counts]: each item's counts; ``measure`` maps summed counts [..., counts] to the figure [...]
    (vectorised over leading axes). The figure on all items and its percentile interval."""
    value, low, high = bootstrap_many(rows, lambda sums: measure(sums)[..., None], resamples, seed, level)
    return Interval(float(value[0]), float(low[0]), float(high[0]), len(np.atleast_1d(rows)))


def bootstrap_many(
    rows: np.ndarray,
    measure: Callable[[np.ndarray], np.ndarray],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many figures from the same resamples at once (every head against its baseline on every relation): ``measure``
    maps summed counts [..., counts] to [..., figures]. Returns (value, low, high), each [figures]; NaN bounds for
    fewer than two items."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim == 1:
        rows = rows[:, None]
    items = len(rows)
    value = np.asarray(measure(rows.sum(0)), dtype=np.float64)
    if items < 2:
        return value, np.full_like(value, np.nan), np.full_like(value, np.nan)
    draws = np.concatenate([measure(counts @ rows) for counts in resampled_counts(items, resamples, seed)])
    tail = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(draws, [tail, 1.0 - tail], axis=0)
    return value, low, high


def mean(values: Sequence[float] | np.ndarray, **options) -> Interval:
    """The mean of per-item values."""
    values = np.asarray(values, dtype=np.float64)
    count = len(values)
    return bootstrap(values[:, None], lambda sums: sums[..., 0] / count, **options)


def ratio(numerators: Sequence[float], denominators: Sequence[float], **options) -> Interval:
    """sum(numerators) / sum(denominators) over items (a pooled rate: hits over arcs, sentence by sentence)."""
    rows = np.stack([np.asarray(numerators, float), np.asarray(denominators, float)], axis=1)
    return bootstrap(rows, lambda sums: _divide(sums[..., 0], sums[..., 1]), **options)


def paired(first: np.ndarray, second: np.ndarray, measure: Callable[[np.ndarray], np.ndarray], **options) -> Interval:
    """The difference measure(first) − measure(second) over the same resampled items: ``first`` and ``second``
    [items, counts] are two measures' counts on the same items (a head and its baseline on the same sentences)."""
    first, second = np.asarray(first, np.float64), np.asarray(second, np.float64)
    if first.ndim == 1:
        first, second = first[:, None], second[:, None]
    width = first.shape[1]
    rows = np.concatenate([first, second], axis=1)
    return bootstrap(rows, lambda sums: measure(sums[..., :width]) - measure(sums[..., width:]), **options)


def paired_ratio(
    first_hits: Sequence[float], second_hits: Sequence[float], totals: Sequence[float], **options
) -> Interval:
    """Two pooled rates over the same items and the same totals (a head's hits and a baseline's, over the same
    arcs): the interval of their difference."""
    totals = np.asarray(totals, float)
    first = np.stack([np.asarray(first_hits, float), totals], axis=1)
    second = np.stack([np.asarray(second_hits, float), totals], axis=1)
    return paired(first, second, lambda sums: _divide(sums[..., 0], sums[..., 1]), **options)


def held_out_best(hits: np.ndarray, totals: Sequence[float] | None = None, **options) -> tuple[Interval, list]:
    """The best of many candidates (heads) chosen on half of the items and scored on the other half, both ways
    (even items choose for the odd ones and the other way round), so that every item is scored by a candidate
    chosen without it. ``hits`` [items, *candidates]: each item's count for each candidate; ``totals`` [items]:
    each item's denominator (default 1: a mean). The pooled figure sum(hits) / sum(totals) with its interval, and
    the two chosen candidates' indices (the even half's choice first)."""
    hits = np.asarray(hits, dtype=np.float64)
    totals = np.ones(len(hits)) if totals is None else np.asarray(totals, dtype=np.float64)
    shape = hits.shape[1:]
    halves = [np.arange(0, len(hits), 2), np.arange(1, len(hits), 2)]
    chosen, picks = np.zeros(len(hits)), []
    for fit, check in (halves, halves[::-1]):
        pick = np.unravel_index(int(hits[fit].reshape(len(fit), -1).sum(0).argmax()), shape)
        chosen[check] = hits[(check, *pick)]
        picks.append([int(index) for index in pick])
    return ratio(chosen, totals, **options), picks


def candidates(
    hits: np.ndarray, totals: Sequence[float] | None = None, lowest: bool = False, **options
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many candidates measured on the same items (every head's score over the same sentences): ``hits`` [items,
    *candidates], ``totals`` [items] (default 1: a mean over items); each candidate's figure is the pooled
    sum(hits) / sum(totals). Returns (value, low, high, near_best), each of the candidates' shape: the figures with
    their 95% intervals, and the candidates the best one (the highest; with ``lowest``, the lowest) is *not* clearly
    ahead of, the best itself included: those whose paired difference from the best has an interval that reaches
    zero. NaN bounds (and only the best near itself) for fewer than two items."""
    hits = np.asarray(hits, dtype=np.float64)
    shape, items = hits.shape[1:], len(hits)
    totals = np.ones(items) if totals is None else np.asarray(totals, dtype=np.float64)
    rows = np.concatenate([hits.reshape(items, -1), totals[:, None]], axis=1)
    width = rows.shape[1] - 1
    value = _divide(rows[:, :width].sum(0), np.full(width, totals.sum()))
    near = np.zeros(width, dtype=bool)
    if not np.isfinite(value).any():
        nan = np.full(shape, np.nan)
        return value.reshape(shape), nan, nan, near.reshape(shape)
    best = int(np.nanargmin(value) if lowest else np.nanargmax(value))
    sign = -1.0 if lowest else 1.0

    def measure(sums: np.ndarray) -> np.ndarray:
        scores = _divide(sums[..., :width], sums[..., width:])
        return np.concatenate([scores, sign * (scores[..., best : best + 1] - scores)], axis=-1)

    _, low, high = bootstrap_many(rows, measure, **options)
    if items >= 2:
        near = ~(low[width:] > 0) & np.isfinite(value)  # the best's lead over it is not clear of zero
    near[best] = True
    return value.reshape(shape), low[:width].reshape(shape), high[:width].reshape(shape), near.reshape(shape)


def aer_measure(sums: np.ndarray) -> np.ndarray:
    """Summed (|A ∩ S|, |A ∩ P|, |A|, |S|) → the alignment error rate, 1 − (|A ∩ S| + |A ∩ P|) / (|A| + |S|) (Och &
    Ney 2003; P includes S; with sure links only, |A ∩ P| = |A ∩ S|)."""
    return 1.0 - _divide(sums[..., 0] + sums[..., 1], sums[..., 2] + sums[..., 3])


def aer(counts: np.ndarray, **options) -> Interval:
    """The AER over sentence pairs from each pair's counts [pairs, 4]: (|A ∩ S|, |A ∩ P|, |A|, |S|)."""
    return bootstrap(np.asarray(counts, float), aer_measure, **options)


def paired_aer(first: np.ndarray, second: np.ndarray, **options) -> Interval:
    """AER(first) − AER(second) on the same pairs (negative: the first reading errs less)."""
    return paired(first, second, aer_measure, **options)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


# ---------------------------------------------------------------------------------------------------- BLEU, chrF
def bleu_interval(hypotheses: Sequence[str], references: Sequence[str], resamples: int = RESAMPLES) -> dict:
    """Corpus BLEU and chrF with sacreBLEU's bootstrap (its percentile interval, reported by sacreBLEU as the
    resamples' mean ± half the interval's width; seed ``SACREBLEU_SEED``, 12345 unless set)."""
    import sacrebleu  # slow to import; only the measurements need it

    found = {}
    for name, metric in (("bleu", sacrebleu.BLEU()), ("chrf", sacrebleu.CHRF())):
        score = metric.corpus_score(list(hypotheses), [list(references)], n_bootstrap=resamples)
        half = float(score._ci)  # sacreBLEU's half-width of the 95% percentile interval of its resamples
        found[name] = {
            "value": round(float(score.score), 2),
            "ci": round(half, 2),
            "resample_mean": round(float(score._mean), 2),
        }
    return {**found, "sentences": len(hypotheses), "resamples": resamples}


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Each sentence's BLEU sufficient statistics [sentences, 10] as sacreBLEU counts them (system and reference
    length, then matching and total n-grams for n = 1…4), so that any set of sentences' corpus BLEU is a sum."""
    import sacrebleu

    statistics = sacrebleu.BLEU()._extract_corpus_statistics(list(hypotheses), [list(references)])
    return np.asarray(statistics, dtype=np.float64).reshape(-1, 10)


def bleu_of_statistics(sums: np.ndarray) -> np.ndarray:
    """Corpus BLEU from summed statistics [..., 10], vectorised: sacreBLEU's defaults (4-grams, brevity penalty,
    its 'exp' smoothing of an n-gram order without a match)."""
    system, reference = sums[..., 0], sums[..., 1]
    correct, total = sums[..., 2:6], sums[..., 6:10]
    halving = np.cumsum(correct == 0, axis=-1)  # 'exp' smoothing: 1/2, 1/4… for each order without a match
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(correct > 0, correct / total, 1.0 / (2.0**halving * total))
        log_mean = np.log(precision).mean(-1)
        penalty = np.where(system < reference, np.exp(1 - reference / np.maximum(system, 1e-9)), 1.0)
        score = 100 * penalty * np.exp(log_mean)
    return np.where((correct.sum(-1) > 0) & (total.min(-1) > 0) & (system > 0), score, 0.0)


def paired_bleu_difference(
    first: Sequence[str] | np.ndarray, second: Sequence[str] | np.ndarray, references: Sequence[str], **options
) -> Interval:
    """BLEU(first) − BLEU(second) on the same sentences, with the 95% bootstrap interval of the difference (paired:
    each resample draws the same sentences for both). ``first``/``second``: hypotheses, or their
    :func:`bleu_statistics` when several comparisons share one side."""
    one = first if isinstance(first, np.ndarray) else bleu_statistics(first, references)
    two = second if isinstance(second, np.ndarray) else bleu_statistics(second, references)
    return paired(one, two, bleu_of_statistics, **options)


def paired_bleu(
    baseline: Sequence[str], systems: dict[str, Sequence[str]], references: Sequence[str], resamples: int = RESAMPLES
) -> dict[str, dict]:
    """sacreBLEU's paired bootstrap test (Koehn 2004) of each system against ``baseline`` on the same sentences:
    per system its BLEU, the resamples' mean ± 95% half-width, and the p-value of its difference from the baseline."""
    import sacrebleu
    from sacrebleu.significance import PairedTest

    named = [("baseline", list(baseline)), *((name, list(output)) for name, output in systems.items())]
    test = PairedTest(named, {"BLEU": sacrebleu.BLEU()}, [list(references)], test_type="bs", n_samples=resamples)
    _, results = test()
    found = {}
    for name, result in zip((name for name, _ in named), results["BLEU"], strict=True):
        found[name] = {
            "bleu": round(float(result.score), 2),
            "mean": round(float(result.mean), 2),
            "ci": round(float(result.ci), 2),
            "p": None if result.p_value is None else round(float(result.p_value), 4),
        }
    return found
