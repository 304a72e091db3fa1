"""Source words left untranslated, found by contrastive conditioning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.analysis import omissions as om
from transformer.analysis.attention import teacher_forced
from transformer.formats.checkpoint import load_checkpoint
from transformer.paper.tokenizer import EOS_ID


def test_content_words_leave_out_function_words_punctuation_and_single_letters():
    words = "The cat , of course , sat on 2009 mats ' s Berlin. e-mail".split()
    assert [w for w in words if om.content_word(w)] == ["cat", "course", "sat", "mats", "Berlin.", "e-mail"]


def test_the_gain_is_the_change_of_the_translations_log_probability(trained_checkpoint: Path):
    """Each scored word's gain is log p(output | source without it) − log p(output | source), computed here from
    teacher-forced logits; function words are not scored."""
    loaded = load_checkpoint(trained_checkpoint)
    words = "the small dog sees the red house.".split()
    output = loaded.tokenizer.encode("der kleine hund sieht das haus.")

    def log_p(source_words: list[str]) -> float:
        source = [*loaded.tokenizer.encode(" ".join(source_words)), EOS_ID]
        _, logits = teacher_forced(loaded.model, loaded.tokenizer, source, output)
        targets = torch.tensor([*output, EOS_ID])
        return float(torch.log_softmax(logits.float(), -1).gather(1, targets[:, None]).sum())

    found = om.omissions(loaded, words, output)
    assert found.log_probability == pytest.approx(log_p(words), abs=1e-3)
    for i, word in enumerate(words):
        if om.content_word(word):
            assert found.gain[i] == pytest.approx(log_p(words[:i] + words[i + 1 :]) - found.log_probability, abs=1e-3)
        else:
            assert np.isnan(found.gain[i])


def test_a_word_whose_translation_is_missing_is_ranked_first(monkeypatch: pytest.MonkeyPatch, trained_checkpoint):
    """A constructed scorer that knows the answer: a word-for-word 'model' whose translation gets less likely for
    every source word it does not render and for every output word without a source. The German lacks 'rot' (red):
    leaving 'red' out of the source is the only change that makes the translation more likely."""
    loaded = load_checkpoint(trained_checkpoint)
    dictionary = {"small": "klein", "dog": "hund", "sees": "sieht", "red": "rot", "house": "haus"}
    output_words = ["klein", "hund", "sieht", "haus"]

    def scorer(_loaded, sources, _output):
        scores = []
        for ids in sources:
            source = loaded.tokenizer.decode(ids).split()
            rendered = {dictionary.get(word) for word in source}
            scores.append(
                -sum(w not in rendered for w in output_words)
                - sum(dictionary.get(w) not in output_words for w in source if w in dictionary)
            )
        return np.array(scores, dtype=float)

    monkeypatch.setattr(om, "_log_likelihoods", scorer)
    found = om.omissions(loaded, "the small dog sees the red house".split(), [5])
    assert found.words[found.ranked()[0]] == "red"
    assert [found.words[i] for i in found.flagged(margin=0.5)] == ["red"]
    assert found.flagged(margin=5.0) == []


def test_a_source_longer_than_the_model_reads_is_refused(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    with pytest.raises(ValueError, match="longer than the model reads"):
        om.omissions(loaded, ["house"] * (loaded.model.config.max_positions + 5), [5])


def test_support_is_the_log_probability_the_source_adds_to_each_output_word(trained_checkpoint: Path):
    loaded = load_checkpoint(trained_checkpoint)
    source = [*loaded.tokenizer.encode("the small dog sees the red house."), EOS_ID]
    output = loaded.tokenizer.encode("der kleine hund sieht das haus.")
    words, owners = ["der kleine", "hund sieht das haus."], [0 if i < 2 else 1 for i in range(len(output))]

    def per_token(source_ids: list[int]) -> np.ndarray:
        _, logits = teacher_forced(loaded.model, loaded.tokenizer, source_ids, output)
        log_p = torch.log_softmax(logits.float(), -1)[: len(output)]
        return log_p.gather(1, torch.tensor(output)[:, None])[:, 0].numpy()

    support = om.source_support(loaded, source, output, owners, words)
    with_source, without_source = per_token(source), per_token([EOS_ID])
    assert support.with_source == pytest.approx([with_source[:2].sum(), with_source[2:].sum()], abs=1e-3)
    assert support.pmi == pytest.approx(
        [with_source[:2].sum() - without_source[:2].sum(), with_source[2:].sum() - without_source[2:].sum()], abs=1e-3
    )


def test_the_least_supported_content_words_come_first_and_only_unsupported_ones_are_marked():
    support = om.Support(
        ["Der", "Hund", "bellt", "laut", "."],
        np.array([-1.0, -2.0, -3.0, -4.0, -0.1]),
        np.array([-1.5, -9.0, -2.5, -3.0, -0.1]),
    )
    # pmi: Der 0.5, Hund 7, bellt −0.5, laut −1, "." 0; "Der" and "." are not content words
    assert [support.words[i] for i in support.ranked()] == ["laut", "bellt", "Hund"]
    assert [support.words[i] for i in support.flagged()] == ["laut", "bellt"]  # the source makes them less likely
    assert om.german_content_word("Gesetze,") and not om.german_content_word("und") and not om.german_content_word("„")
