"""Model configuration and the named presets.

A :class:`ModelConfig` fully describes the network's shape (§3 of the paper); it round-trips through JSON so a
checkpoint folder's ``config.json`` rebuilds exactly the model that wrote it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACTIVATIONS = ("relu", "silu", "gelu")
# The attention kinds: encoder self-attention, decoder masked self-attention, encoder–decoder (cross) attention.
ATTENTION_KINDS = ("encoder", "decoder", "cross")
POSITIONAL_TABLES = ("paper", "tensor2tensor", "learned")
ARCHITECTURE_FIELDS = (
    "activation",
    "norm_first",
    "positional",
    "position_offset",
    "scale_embedding",
    "embedding_norm",
    "output_bias",
    "forced_first_id",
)

# Upper bounds far above the presets (big: d_model 1024, d_ff 4096, 16 heads, 6 layers, 37,000 pieces).
LIMITS = {
    "vocab_size": 1_000_000,
    "d_model": 16_384,
    "num_heads": 1024,
    "d_ff": 65_536,
    "encoder_layers": 128,
    "decoder_layers": 128,
    "max_positions": 65_536,
}


@dataclass(frozen=True)
class ModelConfig:
    """Shape and regularisation of the encoder–decoder Transformer.

    The defaults are the ``small`` preset: the paper's depth (N=6) and head count (h=8) at a quarter of its width,
    so that it trains on a CPU and its attention figures compare layer for layer with the paper's.
    """

    vocab_size: int = 8000
    d_model: int = 256
    num_heads: int = 8
    d_ff: int = 1024
    encoder_layers: int = 6
    decoder_layers: int = 6
    dropout: float = 0.1  # §5.4: sub-layer outputs and embedding + PE sums
    attention_dropout: float = 0.0  # on the attention probabilities; the paper does not use it
    max_positions: int = 1024  # rows of the precomputed sinusoid table
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    source_language: str = "en"  # ISO 639-1 codes of the pair the model translates; not part of the network
    target_language: str = "de"
    # Where models that descend from the paper's differ from it (the defaults are the paper's choices), so that a
    # Marian (OPUS-MT) or M2M100/NLLB model opened from a Hugging Face folder runs as this model
    # (transformer.formats.hub).
    activation: str = "relu"  # the FFN's non-linearity (Eq. 2 uses ReLU; OPUS-MT "silu", i.e. swish)
    norm_first: bool = False  # True: x + Sublayer(LayerNorm(x)) and a final LayerNorm per stack (pre-norm)
    # "paper": §3.5's frequencies; "tensor2tensor": 10000^(-i/(D/2-1)), as fairseq; "learned": a table of
    # weights per stack instead of sinusoids (BART, mBART; the paper's §3.5 found the two to perform alike)
    positional: str = "paper"
    position_offset: int = 0  # the table's first row is position ``position_offset`` (M2M100: 2)
    scale_embedding: bool = True  # Embedding·√d_model (§3.4)
    embedding_norm: bool = False  # a LayerNorm of each stack's embedded input, before dropout (BART, mBART)
    output_bias: bool = False  # a bias on the pre-softmax projection (Marian's final_logits_bias)
    forced_first_id: int = -1  # a token every translation starts with (M2M100/NLLB: the target language); -1 none

    @property
    def languages(self) -> tuple[str, str]:
        """(source, target): the pair's ISO 639-1 codes, which are also its corpus files' suffixes."""
        return self.source_language, self.target_language

    def __post_init__(self) -> None:
        # A config.json is read from disk: wrong types and sizes no machine could hold are refused before any
        # tensor is made.
        for spec in dataclasses.fields(self):
            value, wanted = (
                getattr(self, spec.name),
                {"int": int, "float": float, "str": str, "bool": bool}[str(spec.type)],
            )
            if wanted is bool:
                if not isinstance(value, bool):
                    raise ValueError(f"{spec.name} must be true or false, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, wanted if wanted is not float else (int, float)):
                raise ValueError(f"{spec.name} must be {spec.type!s}, got {value!r}")
        for name, most in LIMITS.items():
            if getattr(self, name) > most:
                raise ValueError(
                    f"{name}={getattr(self, name)} is beyond any model this project builds (at most {most})"
                )
        for name in ("vocab_size", "d_model", "num_heads", "d_ff", "encoder_layers", "decoder_layers", "max_positions"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")
        if self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even for the sinusoidal positional encoding")
        specials = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        for name, value in specials.items():
            if not 0 <= value < self.vocab_size:
                raise ValueError(f"{name}={value} is not a piece of the {self.vocab_size}-piece vocabulary")
        if len(set(specials.values())) < len(specials):
            raise ValueError(f"the special pieces must be different pieces, got {specials}")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.attention_dropout < 1.0:
            raise ValueError("dropout rates must lie in [0, 1)")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if self.positional not in POSITIONAL_TABLES:
            raise ValueError(f"positional {self.positional!r} is not one of {', '.join(POSITIONAL_TABLES)}")
        if not -1 <= self.forced_first_id < self.vocab_size:
            raise ValueError(f"forced_first_id={self.forced_first_id} is not a piece of the vocabulary (or -1)")
        if not 0 <= self.position_offset <= 16:
            raise ValueError(f"position_offset must lie in [0, 16], got {self.position_offset}")

    @property
    def paper_architecture(self) -> bool:
        """True when the network is the paper's own (post-norm, ReLU, §3.5's table, no output bias)."""
        defaults = ModelConfig.__dataclass_fields__
        return all(getattr(self, name) == defaults[name].default for name in ARCHITECTURE_FIELDS)

    @property
    def head_dim(self) -> int:
        """d_k = d_v = d_model / h (§3.2.2)."""
        return self.d_model // self.num_heads

    def layers(self, kind: str) -> int:
        """How many layers have attention of ``kind`` (one of :data:`ATTENTION_KINDS`): the encoder's for its
        self-attention, the decoder's for its self-attention and for the cross-attention."""
        if kind == "encoder":
            return self.encoder_layers
        if kind in ("decoder", "cross"):
            return self.decoder_layers
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(ATTENTION_KINDS)}")

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(unknown)}")
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> ModelConfig:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "ru": "Russian",
    "cs": "Czech",
    "ro": "Romanian",
    "tr": "Turkish",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
}


def language_name(code: str) -> str:
    """ "English" for "en"; an unknown code is shown as it is."""
    return LANGUAGE_NAMES.get(code, code)


PRESETS: dict[str, ModelConfig] = {
    # A few thousand parameters' worth of model for unit tests and the synthetic tasks.
    "tiny": ModelConfig(
        vocab_size=64, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, max_positions=256
    ),
    # The CPU default: the paper's N=6, h=8 at d_model=256.
    "small": ModelConfig(),
    # Table 3, rows "base" and "big" (vocabulary ~37k shared BPE for EN-DE).
    "base": ModelConfig(vocab_size=37000, d_model=512, num_heads=8, d_ff=2048),
    "big": ModelConfig(vocab_size=37000, d_model=1024, num_heads=16, d_ff=4096, dropout=0.3),
}


def preset(name: str, **overrides: Any) -> ModelConfig:
    """Return the named preset, optionally with some fields replaced (e.g. ``vocab_size``)."""
    try:
        config = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
    return config.replace(**overrides) if overrides else config
