"""The joint SentencePiece vocabulary: special ids, byte fallback for any Unicode input, word grouping."""

from __future__ import annotations

import pytest

from transformer.paper.tokenizer import (
    BOS_ID,
    CONTINUES,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    WORD_START,
    Tokenizer,
    join_pieces,
    readable_pieces,
)


def test_special_ids_are_fixed(tokenizer: Tokenizer):
    assert tokenizer.pieces([PAD_ID, UNK_ID, BOS_ID, EOS_ID]) == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tokenizer.vocab_size == 320


@pytest.mark.parametrize(
    "text", ["the cat sees the dog.", "Grüße 😀 aus Köln", "한국어 문장입니다", "中文句子", "</script>"]
)
def test_any_script_round_trips_through_byte_fallback(tokenizer: Tokenizer, text: str):
    ids = tokenizer.encode(text)
    assert UNK_ID not in ids
    assert tokenizer.decode(ids) == text


def test_control_characters_encode_without_error(tokenizer: Tokenizer):
    text = "tab\tbell\x07 nul\x00 end"
    ids = tokenizer.encode(text)
    assert UNK_ID not in ids
    decoded = tokenizer.decode(ids)
    # NFKC normalisation turns the tab into a space and drops the bell; every visible character survives.
    assert [c for c in decoded if c.isprintable() and not c.isspace()] == list("tabbellnulend")


def test_word_groups_follow_word_starts_and_specials(tokenizer: Tokenizer):
    pieces = ["<s>", "▁Gr", "üße", "▁aus", "▁K", "öl", "n", "</s>", "<pad>"]
    assert Tokenizer.word_groups(pieces) == [[0], [1, 2], [3], [4, 5, 6], [7], [8]]
    # Punctuation is a word of its own, as in the paper's figures; a piece after it joins it only without ▁.
    assert Tokenizer.word_groups(["▁diff", "icult", ".", "</s>"]) == [[0, 1], [2], [3]]
    assert Tokenizer.word_groups(["▁didn", "'", "t", "▁go"]) == [[0], [1, 2], [3]]


def test_loading_a_broken_model_names_the_file(tmp_path):
    broken = tmp_path / "spm.model"
    broken.write_bytes(b"not a sentencepiece model")
    with pytest.raises(ValueError, match="spm.model: not a valid SentencePiece model"):
        Tokenizer.load(broken)
    with pytest.raises(FileNotFoundError, match="missing.model: SentencePiece model not found"):
        Tokenizer.load(tmp_path / "missing.model")


def test_byte_pieces_stay_inside_their_word_and_merge_back_to_text():
    pieces = ["▁", "<0x4C>", "aw", "▁caf", "<0xC3>", "<0xA9>", ".", "</s>"]
    assert Tokenizer.word_groups(pieces) == [[0, 1, 2], [3, 4, 5], [6], [7]]
    assert join_pieces(pieces[3:6]) == "▁café"
    assert join_pieces(["<0xC3>"]) == "\ufffd"  # half a character is shown as such, never an exception


def test_pieces_read_without_the_word_marker_and_continuations_marked(tokenizer: Tokenizer):
    sentence = "The central bank's interest rates rose, didn't they?"
    pieces = tokenizer.pieces(tokenizer.encode(sentence))
    shown = readable_pieces([*pieces, "</s>"])
    assert not any(WORD_START in piece for piece in shown) and shown[-1] == "</s>"
    # A reader gets the text back: a shown piece starts a word where the model's did, and a continuation's mark goes.
    words = "".join(
        (" " + piece.replace("␣", "") if original.startswith(WORD_START) else piece.removeprefix(CONTINUES))
        for piece, original in zip(shown, pieces, strict=False)
    )
    assert words == join_pieces(pieces).replace(WORD_START, " ") == " " + sentence
    assert any(piece.startswith(CONTINUES) for piece in shown)  # "rates" or "didn't" is more than one piece
    assert readable_pieces(["▁Zins", "sätze", "▁", ".", "<0xE2>", "__de__"]) == [
        "Zins",
        "·sätze",
        "␣",
        ".",
        "<0xE2>",
        "__de__",
    ]
