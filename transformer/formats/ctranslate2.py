"""The model for other engines: a checkpoint converted to CTranslate2 (the inference engine behind OpenNMT and
argos-translate), the engine a user would deploy this model with.

The conversion is exact: the same weights in float32, one embedding matrix shared by the encoder's input, the
decoder's input and the output projection (§3.4), embeddings scaled by √d_model, post-norm layers (§3.1), ReLU
(Eq. 2), the self-attention's Q, K, V and the cross-attention's K, V as fused projections. The positional encoding
is written into the converted model as the project's own table (§3.5): CTranslate2's built-in sinusoids start at
position 1, put all sines before all cosines and use other frequencies. The vocabulary is the SentencePiece model's
pieces in id order, so both engines read the same token ids.

CTranslate2 is an optional extra (``pip install ctranslate2``); nothing else in the project needs it. The command
(:mod:`transformer.cli.export`)::

    python -m transformer export ctranslate2 --checkpoint checkpoints/en-de-small --out /tmp/en-de-ct2
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.config import ARCHITECTURE_FIELDS, ModelConfig
from transformer.paper.model import MultiHeadAttention, PositionwiseFeedForward, Transformer

PAPER = ModelConfig()  # the paper's architecture, which the spec below writes
LAYER_NORM_EPSILON = 1e-5  # nn.LayerNorm's default, which every LayerNorm of the model uses


class ExportError(RuntimeError):
    """The export cannot run here (CTranslate2 missing) or the model does not fit the target format."""


def _ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise ExportError("CTranslate2 is not installed: pip install ctranslate2") from None
    return ctranslate2


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to(torch.float32).cpu().numpy().copy()


def _linear(spec, weight: torch.Tensor, bias: torch.Tensor) -> None:
    spec.weight, spec.bias = _array(weight), _array(bias)


def _layer_norm(spec, norm: torch.nn.LayerNorm) -> None:
    if abs(norm.eps - LAYER_NORM_EPSILON) > 1e-12:
        raise ExportError(f"LayerNorm epsilon {norm.eps} differs from the model's {LAYER_NORM_EPSILON}")
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _attention(spec, attention: MultiHeadAttention, self_attention: bool) -> None:
    """CTranslate2 keeps self-attention as [QKV, out] and cross-attention as [Q, KV, out]."""
    q, k, v, out = attention.query, attention.key, attention.value, attention.output
    if self_attention:
        _linear(spec.linear[0], torch.cat([q.weight, k.weight, v.weight]), torch.cat([q.bias, k.bias, v.bias]))
    else:
        _linear(spec.linear[0], q.weight, q.bias)
        _linear(spec.linear[1], torch.cat([k.weight, v.weight]), torch.cat([k.bias, v.bias]))
    _linear(spec.linear[-1], out.weight, out.bias)


def _feed_forward(spec, feed_forward: PositionwiseFeedForward, norm: torch.nn.LayerNorm) -> None:
    _layer_norm(spec.layer_norm, norm)
    _linear(spec.linear_0, feed_forward.inner.weight, feed_forward.inner.bias)
    _linear(spec.linear_1, feed_forward.outer.weight, feed_forward.outer.bias)


def ctranslate2_spec(model: Transformer, pieces: list[str]):
    """The CTranslate2 ``TransformerSpec`` of ``model`` with vocabulary ``pieces`` (id order), weights filled in."""
    _ctranslate2()
    from ctranslate2.specs import common_spec, transformer_spec

    config = model.config
    if any(module.head_gate is not None for module in model.modules() if isinstance(module, MultiHeadAttention)):
        raise ExportError("heads are switched off on this model; export it with every head on")
    departs = [name for name in ARCHITECTURE_FIELDS if getattr(config, name) != getattr(PAPER, name)]
    if departs:
        raise ExportError(
            f"only the paper's architecture exports to CTranslate2; this model departs in {', '.join(departs)}"
        )
    positions = _array(model.positions("encoder"))
    spec = transformer_spec.TransformerSpec.from_config(
        (config.encoder_layers, config.decoder_layers),
        config.num_heads,
        pre_norm=False,
        activation=common_spec.Activation.RELU,
    )
    embedding = _array(model.embedding.weight)
    for part in (spec.encoder, spec.decoder):
        embeddings = part.embeddings[0] if isinstance(part.embeddings, list) else part.embeddings
        embeddings.weight = embedding
        part.scale_embeddings = True  # × √d_model, as Transformer.embed
        part.position_encodings.encodings = positions
    spec.decoder.projection.weight = embedding
    spec.decoder.projection.bias = np.zeros(config.vocab_size, dtype=np.float32)
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder_layers, strict=True):
        _attention(layer_spec.self_attention, layer.self_attention, self_attention=True)
        _layer_norm(layer_spec.self_attention.layer_norm, layer.self_attention_norm)
        _feed_forward(layer_spec.ffn, layer.feed_forward, layer.feed_forward_norm)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder_layers, strict=True):
        _attention(layer_spec.self_attention, layer.self_attention, self_attention=True)
        _layer_norm(layer_spec.self_attention.layer_norm, layer.self_attention_norm)
        _attention(layer_spec.attention, layer.cross_attention, self_attention=False)
        _layer_norm(layer_spec.attention.layer_norm, layer.cross_attention_norm)
        _feed_forward(layer_spec.ffn, layer.feed_forward, layer.feed_forward_norm)
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    spec.config.layer_norm_epsilon = LAYER_NORM_EPSILON
    spec.config.decoder_start_token = pieces[config.bos_id]
    spec.config.bos_token, spec.config.eos_token = pieces[config.bos_id], pieces[config.eos_id]
    spec.config.unk_token = pieces[config.unk_id]
    spec.config.add_source_eos = False  # the project's sources already end with </s> (decode.encode_source)
    return spec


def export_ctranslate2(loaded: LoadedCheckpoint, out: str | Path, force: bool = False) -> Path:
    """Write ``loaded`` as a CTranslate2 model folder (model.bin, vocabularies, config.json) at ``out``; the
    SentencePiece model is copied beside it as ``spm.model``. Returns the folder."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise ExportError(f"{out} exists and is not empty (--force replaces it)")
    pieces = loaded.tokenizer.pieces(range(loaded.config.vocab_size))
    if len(set(pieces)) != len(pieces):
        raise ExportError("the tokenizer has repeated pieces; CTranslate2 needs one piece per id")
    spec = ctranslate2_spec(loaded.model, pieces)
    spec.validate()
    spec.optimize(quantization=None)  # float32: the same numbers as the project's search
    out.mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
    loaded.tokenizer.save(out / "spm.model")
    return out
