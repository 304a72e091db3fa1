"""Bootstrap intervals (:mod:`transformer.analysis.intervals`): they cover the truth about 95% of the time, resample
pooled figures as pooled figures, pair what is measured on the same items, and agree with sacreBLEU's own."""

from __future__ import annotations

import numpy as np
import pytest

from transformer.analysis import intervals
from transformer.analysis import word_alignment as wa


def test_the_interval_of_a_mean_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    trials, covered = 300, 0
    for trial in range(trials):
        sample = rng.exponential(2.0, size=60)  # skewed: the percentile interval need not be symmetric
        found = intervals.mean(sample, resamples=400, seed=trial)
        covered += found.low <= 2.0 <= found.high
        assert found.low <= found.value <= found.high
    assert 0.89 <= covered / trials <= 0.985, covered / trials


def test_an_interval_narrows_with_more_items_and_repeats_with_its_seed():
    rng = np.random.default_rng(2)
    small, large = rng.normal(size=30), rng.normal(size=3000)
    width = lambda found: found.high - found.low  # noqa: E731
    assert width(intervals.mean(large)) < width(intervals.mean(small)) / 5
    assert intervals.mean(small) == intervals.mean(small)  # the same seed: the same interval, on any machine
    assert intervals.mean(small, seed=7) != intervals.mean(small, seed=8)


def test_a_pooled_rate_is_resampled_as_a_pooled_rate():
    """Hits over arcs, sentence by sentence: the figure is sum(hits) / sum(arcs), not the mean of each sentence's
    rate (one long sentence with many arcs weighs more than a short one)."""
    hits, arcs = [1, 9, 0], [1, 10, 4]
    found = intervals.ratio(hits, arcs)
    assert found.value == pytest.approx(10 / 15)
    assert found.value != pytest.approx(np.mean([1, 0.9, 0]))
    assert 0 <= found.low < found.value < found.high <= 1


def test_the_aer_interval_is_around_the_corpus_aer_the_aligner_reports():
    rng = np.random.default_rng(3)
    sure = [{(i, i) for i in range(rng.integers(3, 12))} for _ in range(40)]
    possible = [set(s) | {(0, 1)} for s in sure]
    predicted = [{link for link in s if rng.random() < 0.8} | {(1, 0)} for s in sure]
    reported = wa.score(predicted, sure, possible)
    counts = wa.counts(predicted, sure, possible)
    assert counts.shape == (40, 4)
    found = intervals.aer(counts)
    assert found.value == pytest.approx(reported.aer)
    assert found.low < reported.aer < found.high and found.items == 40


def test_a_paired_difference_sees_a_small_steady_gain_that_two_separate_intervals_hide():
    """A head right on 3 more arcs in 100 than its baseline, on the same sentences whose difficulty varies a lot:
    the separate intervals overlap, the paired one lies above zero. Equal measures are never called different."""
    rng = np.random.default_rng(4)
    arcs = rng.integers(5, 40, size=200).astype(float)
    difficulty = rng.uniform(0.2, 0.9, size=200)
    baseline = np.round(arcs * difficulty)
    head = np.minimum(arcs, baseline + np.round(arcs * 0.03 + rng.integers(0, 2, size=200)))
    alone_head, alone_base = intervals.ratio(head, arcs), intervals.ratio(baseline, arcs)
    assert alone_head.low < alone_base.high  # the two intervals overlap
    difference = intervals.paired_ratio(head, baseline, arcs)
    assert difference.above(0) and difference.value == pytest.approx(alone_head.value - alone_base.value)
    same = intervals.paired_ratio(baseline, baseline, arcs)
    assert not same.above(0) and not same.below(0)


def test_the_best_of_many_heads_is_called_ahead_only_of_the_heads_it_clearly_beats():
    """Six heads over 80 sentences: heads 0 and 1 score the same on average (each sentence a little apart), the
    rest half as much. Every head's interval holds its value; the best is not clearly ahead of its twin, clearly
    ahead of the rest. With ``lowest`` the roles turn round: the low heads tie among themselves."""
    rng = np.random.default_rng(7)
    noise = rng.normal(0, 0.05, size=(80, 1))  # sentence difficulty, shared by every head
    hits = np.clip(np.array([0.60, 0.60, 0.30, 0.30, 0.30, 0.30]) + noise + rng.normal(0, 0.05, (80, 6)), 0, 1)
    hits[:, 1] = hits[:, 0] + np.tile([0.03, -0.03], 40)  # the same mean, sentence by sentence a little off
    value, low, high, near = intervals.candidates(hits.reshape(80, 2, 3))
    assert value.shape == low.shape == high.shape == near.shape == (2, 3)
    assert (low <= value).all() and (value <= high).all()
    assert near.reshape(-1).tolist() == [True, True, False, False, False, False]
    _, _, _, near_low = intervals.candidates(hits, lowest=True)
    assert not near_low[:2].any() and near_low[2:].sum() >= 2


def test_pooled_heads_weigh_each_sentence_by_its_words():
    """A head right on every word of a long sentence and no word of a short one: the pooled share is words right
    over words, not the mean of two sentences' shares."""
    hits = np.array([[9.0, 1.0], [0.0, 1.0]])
    value, *_ = intervals.candidates(hits, totals=[9.0, 1.0])
    assert value.tolist() == [0.9, 0.2]


def test_one_item_has_no_interval_and_says_so():
    found = intervals.mean([0.4])
    assert found.value == 0.4 and np.isnan(found.low) and np.isnan(found.high)
    _, low, high, near = intervals.candidates(np.array([[0.2, 0.5, 0.1]]))
    assert np.isnan(low).all() and np.isnan(high).all() and near.tolist() == [False, True, False]
    assert intervals.Interval.from_dict(intervals.mean([1.0, 2.0, 3.0]).as_dict()).items == 3


def test_bleu_intervals_and_the_paired_test_are_sacrebleus():
    import sacrebleu

    references = [f"the {animal} sat on the mat near the door" for animal in ("cat", "dog", "bird", "fox")] * 25
    good = [r.replace("near", "by") if i % 3 else r for i, r in enumerate(references)]
    bad = [r.split(" on ")[0] for r in references]
    found = intervals.bleu_interval(good, references, resamples=200)
    assert found["bleu"]["value"] == pytest.approx(sacrebleu.corpus_bleu(good, [references]).score, abs=0.01)
    assert found["bleu"]["ci"] > 0 and found["sentences"] == 100
    compared = intervals.paired_bleu(good, {"worse": bad}, references, resamples=200)
    assert compared["baseline"]["p"] is None and compared["baseline"]["bleu"] == found["bleu"]["value"]
    assert compared["worse"]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(bad, [references]).score, abs=0.01)
    assert compared["worse"]["bleu"] < compared["baseline"]["bleu"] and compared["worse"]["p"] < 0.05


def test_bleu_from_summed_statistics_is_sacrebleus_on_any_subset_and_pairs_two_systems():
    import sacrebleu

    rng = np.random.default_rng(5)
    words = "the a cat dog sat ran on under mat house red big".split()
    references = [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(60)]
    close = [" ".join(r.split()[: max(1, len(r.split()) - 1)]) for r in references]  # one word short each
    far = [" ".join(rng.choice(words, size=4)) for _ in references]
    statistics = intervals.bleu_statistics(close, references)
    for subset in (range(60), range(0, 60, 7), [3, 3, 3, 10]):  # a resample may repeat sentences
        chosen = list(subset)
        expected = sacrebleu.corpus_bleu([close[i] for i in chosen], [[references[i] for i in chosen]]).score
        assert intervals.bleu_of_statistics(statistics[chosen].sum(0)) == pytest.approx(expected, abs=1e-6)
    difference = intervals.paired_bleu_difference(close, far, references)
    expected = sacrebleu.corpus_bleu(close, [references]).score - sacrebleu.corpus_bleu(far, [references]).score
    assert difference.value == pytest.approx(expected, abs=1e-6) and difference.above(0)
    assert not intervals.paired_bleu_difference(close, close, references).above(0)
