"""Tiny random Hugging Face translation models, made and saved by the tests (no download): a Marian model with
OPUS-MT's conventions and an M2M100 model, both over a SentencePiece model given as ``spm``.

The Marian one differs from this project's model wherever an OPUS-MT model does: </s> is id 0 and <pad> the last id,
decoding starts from <pad>, the FFN is swish, the output layer has a bias, and vocab.json orders the pieces unlike the
SentencePiece model. The M2M100 one is pre-norm with final LayerNorms, fairseq's positional table from position 2,
a source-language token before the sentence and the target-language token forced first.

    python tests/hub_models.py OUT_FOLDER   # OUT_FOLDER/marian, m2m100 (over the shipped spm.model) and nllb
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import sentencepiece as spm
import torch

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
# fairseq's special tokens, kept by M2M100 and BART: <s> 0, <pad> 1, </s> 2, decoding from </s>
FAIRSEQ_IDS = {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}


def _pieces(spm_path: Path) -> list[str]:
    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def _random(model_class, config, seed: int) -> torch.nn.Module:
    """A network of ``config`` with random weights of a trained model's scale (:func:`_randomise`)."""
    torch.manual_seed(seed)
    model = model_class(config).eval()
    _randomise(model, seed)
    return model


def _randomise(model: torch.nn.Module, seed: int) -> None:
    """Weights of a trained model's scale (not the near-zero initial ones), so attention is far from uniform."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ("layer_norm" in name or "layernorm" in name) and name.endswith("weight"):
                parameter.copy_(1.0 + 0.2 * torch.randn(parameter.shape, generator=generator))
            else:
                parameter.copy_(0.3 * torch.randn(parameter.shape, generator=generator))


def _shape(d_model: int, heads: int, layers: int) -> dict[str, int]:
    """The configuration entries of a network's size, the same for both stacks (the FFN twice as wide)."""
    return {
        "d_model": d_model,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": 2 * d_model,
        "decoder_ffn_dim": 2 * d_model,
    }


def make_marian(spm_path: Path, out: Path, d_model: int = 16, heads: int = 4, layers: int = 2, seed: int = 0) -> Path:
    import transformers

    pieces = [piece for piece in _pieces(spm_path) if piece not in SPECIALS]
    # OPUS-MT's order: </s> 0, <unk> 1, the pieces (in reverse here, unlike the SentencePiece ids), <pad> last.
    vocab = {"</s>": 0, "<unk>": 1, **{piece: 2 + i for i, piece in enumerate(reversed(pieces))}}
    vocab["<pad>"] = len(vocab)
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        **_shape(d_model, heads, layers),
        activation_function="swish",
        max_position_embeddings=128,
        pad_token_id=vocab["<pad>"],
        eos_token_id=0,
        decoder_start_token_id=vocab["<pad>"],
        forced_eos_token_id=0,
        bad_words_ids=[[vocab["<pad>"]]],
        scale_embedding=True,
    )
    model = _random(transformers.MarianMTModel, config, seed)
    with torch.no_grad():
        model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape))
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    staging = out.parent / f".{out.name}-tokenizer"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    for name in ("source.spm", "target.spm"):
        shutil.copy(spm_path, staging / name)
    tokenizer = transformers.MarianTokenizer(
        str(staging / "source.spm"), str(staging / "target.spm"), str(staging / "vocab.json"), "en", "de"
    )
    tokenizer.save_pretrained(out)
    shutil.rmtree(staging)
    return out


def make_m2m100(spm_path: Path, out: Path, d_model: int = 16, heads: int = 4, layers: int = 2, seed: int = 1) -> Path:
    import transformers

    pieces = [piece for piece in _pieces(spm_path) if piece not in SPECIALS]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{piece: 4 + i for i, piece in enumerate(pieces)}}
    staging = out.parent / f".{out.name}-tokenizer"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    shutil.copy(spm_path, staging / "sentencepiece.bpe.model")
    tokenizer = transformers.M2M100Tokenizer(
        str(staging / "vocab.json"), str(staging / "sentencepiece.bpe.model"), src_lang="en", tgt_lang="de"
    )
    _save_m2m100(
        transformers,
        len(vocab) + len(tokenizer.lang_code_to_id) + tokenizer.num_madeup_words,
        out,
        d_model,
        heads,
        layers,
        seed,
    )
    tokenizer.save_pretrained(out)
    shutil.rmtree(staging)
    return out


def _save_m2m100(transformers, vocab_size: int, out: Path, d_model: int, heads: int, layers: int, seed: int) -> None:
    """A random M2M100 network of that vocabulary, saved at ``out`` (its tokenizer saved beside it by the caller)."""
    config = transformers.M2M100Config(
        vocab_size=vocab_size,
        **_shape(d_model, heads, layers),
        activation_function="relu",
        max_position_embeddings=256,
        **FAIRSEQ_IDS,
        scale_embedding=True,
    )
    model = _random(transformers.M2M100ForConditionalGeneration, config, seed)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)


def make_nllb(out: Path, d_model: int = 16, heads: int = 4, layers: int = 2, seed: int = 2) -> Path:
    """An NLLB-style model: M2M100's network with NLLB's tokenizer (tokenizers' BPE over single characters here)
    and language codes such as eng_Latn."""
    import string

    import transformers

    characters = string.ascii_letters + string.digits + string.punctuation + "äöüßÄÖÜé"
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "▁": 4}
    for character in characters:
        vocab.setdefault(character, len(vocab))
        vocab.setdefault("▁" + character, len(vocab))
    merges = [("▁", character) for character in characters]
    tokenizer = transformers.NllbTokenizer(vocab=vocab, merges=merges, src_lang="eng_Latn", tgt_lang="deu_Latn")
    _save_m2m100(transformers, len(tokenizer), out, d_model, heads, layers, seed)
    tokenizer.save_pretrained(out)
    return out


def byte_level_vocabulary(words: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2's byte-level BPE over every byte, with merges that make whole pieces of ``words`` (each with its
    leading space, "Ġ"): BART's tokenizer files, small."""
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for character in sorted(ByteLevel.alphabet()):
        vocab.setdefault(character, len(vocab))
    merges = []
    to_bytes = ByteLevel(add_prefix_space=False, use_regex=False)
    for word in words:
        piece = to_bytes.pre_tokenize_str(f" {word}")[0][0]
        for end in range(2, len(piece) + 1):  # Ġt + h, Ġth + e, …
            pair = (piece[: end - 1], piece[end - 1])
            if piece[:end] not in vocab:
                merges.append(pair)
                vocab[piece[:end]] = len(vocab)
    vocab["<mask>"] = len(vocab)
    return vocab, merges


BART_WORDS = ["the", "children", "are", "playing", "in", "park", "Law", "will", "never", "be", "perfect"]


def make_bart(out: Path, d_model: int = 16, heads: int = 4, layers: int = 2, seed: int = 3) -> Path:
    """A BART model: learned positions per stack from row 2, a LayerNorm of the embedded input, post-norm GELU
    layers, no √d_model, an output bias; byte-level BPE with <s> before the sentence, decoding from </s> with <s>
    forced first (as facebook/bart-large)."""
    import transformers

    vocab, merges = byte_level_vocabulary(BART_WORDS)
    tokenizer = transformers.BartTokenizer(vocab=vocab, merges=merges)
    config = transformers.BartConfig(
        vocab_size=len(vocab),
        **_shape(d_model, heads, layers),
        activation_function="gelu",
        max_position_embeddings=128,
        **FAIRSEQ_IDS,
        scale_embedding=False,
    )
    model = _random(transformers.BartForConditionalGeneration, config, seed)
    with torch.no_grad():
        model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape))
    model.generation_config.forced_bos_token_id = 0
    model.generation_config.bad_words_ids = [[1]]  # no <pad> written, as this project's search (and Marian's config)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


if __name__ == "__main__":
    root = Path(sys.argv[1])
    shipped = Path(__file__).resolve().parent.parent / "checkpoints" / "en-de-small" / "spm.model"
    print(make_marian(shipped, root / "marian"))
    print(make_m2m100(shipped, root / "m2m100"))
    print(make_nllb(root / "nllb"))
    print(make_bart(root / "bart"))
