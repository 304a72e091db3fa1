"""Telling English input from input the model cannot read, with the shipped checkpoint's own tokenizer."""

from __future__ import annotations

import pytest

from transformer.analysis.input_check import (
    looks_like,
    not_source_reasons,
    unknown_characters,
)
from transformer.formats import checkpoint as ckpt
from transformer.paper.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.load(ckpt.REPOSITORY_CHECKPOINTS / ckpt.DEFAULT_CHECKPOINT_NAME / ckpt.TOKENIZER_FILE)


def reasons(tokenizer: Tokenizer, text: str) -> list[str]:
    return not_source_reasons(text, tokenizer.pieces(tokenizer.encode(text)))


@pytest.mark.parametrize(
    "text",
    [
        "The Law will never be perfect, but its application should be just.",
        "Can you tell me where the train station is?",
        "My brother lives in Berlin and works as a doctor.",
        "We met in Zürich, then drove to Málaga.",
        "Die Hard is a film; Der Spiegel is a magazine.",
        "I paid 5 € for 2 coffees 😀",
        # The sentence: typos, an emoji and symbols the vocabulary lacks. With a third such character (~), a
        # count of 3 called it "not English" though its words plainly are; so did a few emoji or CJK characters.
        "Teh weather is realy nice todya 😀 and 2 < 3",
        "Teh weather is realy nice todya 😀 and 2 < 3 ~ so lets go to teh park",
        "We had a great time at the beach today 😀😀🎉🌊☀️",
        "I was there and 我爱北京",
    ],
)
def test_english_is_not_flagged(tokenizer, text):
    assert reasons(tokenizer, text) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Ich möchte heute mit dir ins Kino gehen, aber ich habe keine Zeit.", "German"),
        ("Das ist nicht mein Hund.", "German"),
        ("Das Wetter ist heute sehr schön 😀 und 2 < 3 ~ also gehen wir in den Park", "German"),
        ("저는 학생입니다. 한국어를 공부해요.", "Latin alphabet"),
        ("我爱北京天安门", "raw bytes"),
        ("😀😀😀 🎉🎉 🚀", "raw bytes"),
        ("Привет, как дела?", "Latin alphabet"),
    ],
)
def test_other_input_is_flagged_with_the_reason(tokenizer, text, says):
    found = reasons(tokenizer, text)
    assert found and any(says in reason for reason in found), found


def test_german_words_must_outnumber_english_ones():
    assert looks_like("ich bin der Meinung", "de", "en")
    assert not looks_like("the die is cast and the Kindergarten is open", "de", "en")


def test_the_checks_follow_the_checkpoints_language_pair():
    """A German → English model: German input is fine, English input reads like its target language."""
    german = "Ich bin heute nicht zu Hause, aber morgen wieder."
    english = "I was not at home, and you were there."
    assert not_source_reasons(german, german.split(), "de", "en") == []
    assert any("reads like English" in reason for reason in not_source_reasons(english, english.split(), "de", "en"))
    # A language written in another script is not flagged for its letters; one without word lists only for them.
    korean = "아이들이 공원에서 놀고 있다"
    assert not_source_reasons(korean, korean.split(), "ko", "en") == []
    assert any("Latin alphabet" in reason for reason in not_source_reasons(korean, korean.split(), "fr", "en"))
    assert not_source_reasons(english, english.split(), "fr", "xx") == []


def test_characters_outside_the_vocabulary_are_named(tokenizer):
    """The calm notice for a few characters the model cannot read: each once, in order, an emoji as one."""
    sentence = "Teh weather is realy nice todya 😀 and 2 < 3, 😀!"
    assert unknown_characters(sentence, tokenizer) == ["😀", "<"]
    assert unknown_characters(sentence, tokenizer.pieces(tokenizer.encode(sentence))) == ["😀", "<"]
    assert unknown_characters("The cat sat on the mat, and 2 > 1.", tokenizer) == []
    assert unknown_characters("", tokenizer) == []
    # Joined emoji and flags are one character each; what the tokenizer drops without a trace is named too.
    assert unknown_characters("We 👨\u200d👩\u200d👧 went 🇩🇪 there 👍🏽", tokenizer) == [
        "👨\u200d👩\u200d👧",
        "🇩🇪",
        "👍🏽",
    ]
    assert unknown_characters("a\ufffdb", tokenizer) == ["\ufffd"]
    assert unknown_characters("zero\u200bwidth", tokenizer) == []  # invisible: nothing to show
