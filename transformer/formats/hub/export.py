"""This project's model the other way: a checkpoint written as a ``MarianMTModel`` folder that ``from_pretrained`` opens
offline, with its tokenizer."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch

from transformer.formats.checkpoint_files import LoadedCheckpoint
from transformer.formats.hub.families import HubError, transformers_module
from transformer.formats.hub.tokenizer import HubTokenizer
from transformer.formats.hub.weights import interleaving, permute_width, weight_names
from transformer.paper.config import ModelConfig
from transformer.paper.tokenizer import Tokenizer


def export_marian(loaded: LoadedCheckpoint, out: str | Path, force: bool = False) -> Path:
    """Write ``loaded`` as a Hugging Face ``MarianMTModel`` folder at ``out`` (config, generation config, float32
    safetensors, Marian tokenizer files), replacing a non-empty folder only with ``force``. Exact: the same function
    up to float rounding (tests)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise HubError(f"{out} exists and is not empty (--force replaces it)")
    transformers = transformers_module()
    config = loaded.config
    if config.norm_first or config.positional != "paper" or config.position_offset or config.forced_first_id >= 0:
        raise HubError("only post-norm models with the paper's positional table export as Marian")
    if isinstance(loaded.tokenizer, HubTokenizer):
        raise HubError(f"{loaded.path} is a Hugging Face model already")
    model = loaded.model
    if any(getattr(module, "head_gate", None) is not None for module in model.modules()):
        raise HubError("heads are switched off on this model; export it with every head on")
    marian_config = transformers.MarianConfig(
        vocab_size=config.vocab_size,
        decoder_vocab_size=config.vocab_size,
        d_model=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_attention_heads=config.num_heads,
        decoder_attention_heads=config.num_heads,
        encoder_ffn_dim=config.d_ff,
        decoder_ffn_dim=config.d_ff,
        activation_function={"silu": "swish"}.get(config.activation, config.activation),
        max_position_embeddings=config.max_positions,
        scale_embedding=config.scale_embedding,
        dropout=config.dropout,
        attention_dropout=config.attention_dropout,
        activation_dropout=0.0,
        pad_token_id=config.pad_id,
        eos_token_id=config.eos_id,
        bos_token_id=config.bos_id,
        decoder_start_token_id=config.bos_id,
        forced_eos_token_id=config.eos_id,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
    )
    hf_model = transformers.MarianMTModel(marian_config).eval()
    width = torch.argsort(interleaving(config.d_model))  # half-split index ← interleaved index
    ours = {name: tensor.detach().float().cpu() for name, tensor in model.state_dict().items()}
    state = {theirs: permute_width(ours[mine], how, width) for mine, (theirs, how) in weight_names(config).items()}
    embedding = ours["embedding.weight"].index_select(1, width)
    for name in ("model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"):
        state[name] = embedding
    state["lm_head.weight"] = embedding
    bias = ours.get("output_bias", torch.zeros(config.vocab_size))
    state["final_logits_bias"] = bias.reshape(1, -1)
    missing, unexpected = hf_model.load_state_dict(state, strict=False)
    missing = [name for name in missing if "embed_positions" not in name]
    if missing or unexpected:
        raise HubError(
            f"the Marian model does not take these weights (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    out = Path(out)
    temporary = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    try:
        hf_model.generation_config = transformers.GenerationConfig(
            decoder_start_token_id=config.bos_id,
            bos_token_id=config.bos_id,
            eos_token_id=config.eos_id,
            pad_token_id=config.pad_id,
            forced_eos_token_id=config.eos_id,
            bad_words_ids=[[config.pad_id], [config.bos_id]],  # never generated, as in this project's search
            max_length=config.max_positions,
            num_beams=4,
        )
        hf_model.save_pretrained(temporary, safe_serialization=True)
        _save_marian_tokenizer(transformers, loaded.tokenizer, config, temporary)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(temporary, out)
    return out


def _save_marian_tokenizer(transformers, tokenizer: Tokenizer, config: ModelConfig, folder: Path) -> None:
    """Marian's tokenizer files: the SentencePiece model as source.spm and target.spm (one joint vocabulary) and
    vocab.json mapping each piece to its id, so that both tokenizers give the same ids."""
    pieces = tokenizer.pieces(range(tokenizer.vocab_size))
    vocab = {piece: index for index, piece in enumerate(pieces)}
    if len(vocab) != len(pieces):
        raise HubError("the SentencePiece model has repeated pieces; its ids cannot be written as vocab.json")
    staging = folder / ".tokenizer"
    staging.mkdir()
    for name in ("source.spm", "target.spm"):
        tokenizer.save(staging / name)
    (staging / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    marian = transformers.MarianTokenizer(
        source_spm=str(staging / "source.spm"),
        target_spm=str(staging / "target.spm"),
        vocab=str(staging / "vocab.json"),
        source_lang=config.source_language,
        target_lang=config.target_language,
        model_max_length=config.max_positions,
    )
    marian.save_pretrained(folder)
    shutil.rmtree(staging)
