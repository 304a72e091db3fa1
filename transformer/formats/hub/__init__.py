"""Hugging Face encoder–decoders as this project's model, and this project's model as a Hugging Face Marian model.

A Marian model (every OPUS-MT model) is the paper's network with a few choices of its own, and an M2M100 or NLLB
model is its pre-norm descendant; :class:`~transformer.paper.config.ModelConfig` names each difference (activation,
pre-norm with a final LayerNorm per stack, the positional table and its first position, an output bias, a forced
first token). Opening such a folder converts its weights into a :class:`~transformer.paper.model.Transformer`, exactly:

- the width is permuted. Both families store a position's sines in the first half of the width and its cosines in
  the second; the paper (§3.5) interleaves them. Moving every weight that reads or writes the residual stream by
  the same permutation of the width (embedding columns, the inputs of Q, K, V and the FFN, the outputs of Wᴼ and
  the FFN, the LayerNorms) computes the same function, so one table layout serves every model;
- the vocabulary is reordered so that ids 0–3 are <pad>, <unk>, the decoder's start token and </s>, the ids the
  project's code relies on. Where the start token is another special token (Marian starts from <pad>, M2M100 from
  </s>), it gets a row of its own, a copy of that token's embedding whose logit is held at -1e9 so that every
  softmax over the vocabulary is the original one;
- the model's own tokenizer (transformers' ``AutoTokenizer``) is wrapped to give and take the reordered ids.

Then every view, search and measurement of the app runs on it as on the shipped model. The other way,
:func:`~transformer.formats.hub.export.export_marian` writes a checkpoint as a ``MarianMTModel`` folder that
``from_pretrained`` opens offline.

transformers is needed only here (``pip install transformers``; the app's extra brings it). Nothing is downloaded:
a folder always opens, a hub id only when the local Hugging Face cache already holds it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from transformer.formats.checkpoint_files import (
    MAX_TOKENIZER_BYTES,
    CheckpointError,
    LoadedCheckpoint,
    check_memory,
    fingerprint,
    meta_model,
    model_bytes,
    read_json,
    read_tensors,
    shards_of,
    tensor_shapes,
)
from transformer.formats.hub.families import (
    FAMILIES,
    HIDDEN_LOGIT,
    LEARNED_OFFSET,
    HubError,
)
from transformer.formats.hub.tokenizer import HubTokenizer, language_code, language_token_id, open_hub_tokenizer, our_id
from transformer.formats.hub.weights import (
    Vocabulary,
    embedding_of,
    interleaving,
    permute_width,
    position_names,
    weight_names,
)
from transformer.paper.config import ModelConfig
from transformer.paper.model import Transformer

# ---------------------------------------------------------------------------------------------------------------
# Opening a Hugging Face folder


@dataclass(frozen=True)
class HubModel:
    """What a Hugging Face folder holds, read from its config.json: shown beside the model in the app."""

    family: str  # a key of FAMILIES: the folder's model_type
    name: str
    source_language: str
    target_language: str
    tokenizer_class: str

    def describe(self) -> str:
        return f"{FAMILIES[self.family]} from Hugging Face: {self.name}"


def _read_hub_config(folder: Path) -> dict[str, Any]:
    config = read_json(folder / "config.json")
    if not isinstance(config, dict):
        raise HubError(f"{folder / 'config.json'}: not a Hugging Face configuration")
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        encoder_decoder = bool(config.get("is_encoder_decoder"))
        what = "an encoder–decoder of another family" if encoder_decoder else "not an encoder–decoder"
        raise HubError(
            f"{folder}: a {model_type!r} model is {what}; the app opens "
            f"{', '.join(FAMILIES.values())} translation models"
        )
    return config


def _languages(folder: Path, config: Mapping[str, Any], tokenizer_config: Mapping[str, Any]) -> tuple[str, str]:
    """The pair a folder translates: the tokenizer's source/target languages, else ``opus-mt-SRC-TGT`` in the folder's
    name, else English → German (a many-to-many model translates whatever pair is asked)."""
    source, target = tokenizer_config.get("source_lang"), tokenizer_config.get("target_lang")
    if isinstance(source, str) and isinstance(target, str) and source and target:
        return source.split("_")[0][:3], target.split("_")[0][:3]
    names = [folder.name, str(config.get("_name_or_path", ""))] + [part for part in folder.parts if "opus-mt" in part]
    for name in names:
        found = re.search(r"opus-mt-([a-z]{2,3})-([a-z]{2,3})\b", name)
        if found:
            return found.group(1), found.group(2)
    return "en", "de"


TOKENIZER_FILES = ("*.spm", "*.model", "tokenizer.json", "vocab.json", "merges.txt", "*.txt")


def _check_tokenizer_files(folder: Path) -> None:
    """Refuse tokenizer files no tokenizer has (the largest in use, NLLB's tokenizer.json, is about 32 MB) before
    the tokenizer library reads them whole."""
    for pattern in TOKENIZER_FILES:
        for path in folder.glob(pattern):
            size = path.stat().st_size if path.is_file() else 0
            if size > MAX_TOKENIZER_BYTES:
                raise HubError(f"{path}: {size / 2**20:,.0f} MB, larger than any tokenizer file; not opened")


def _check_memory(folder: Path, weights: Path, model_config: ModelConfig) -> None:
    """Refuse a model too large for the free memory before reading its weights: the file, the float32 copy the
    conversion makes, and the model, whose size is counted from the configuration on the ``meta`` device."""
    files = [weights] if weights.is_file() else shards_of(weights)
    on_disk = sum(path.stat().st_size for path in files)
    check_memory(folder, on_disk + 2 * model_bytes(model_config))


def _check_shapes(folder: Path, shapes: Mapping[str, tuple[int, ...]], model_config: ModelConfig, embedding: str):
    """Every tensor the configuration implies is in the weights with its shape (read from the files' headers), so
    that a config.json that does not describe its weights is refused before anything is allocated."""
    expected = meta_model(folder, model_config).state_dict()
    rows = shapes[embedding][0]
    if tuple(shapes[embedding]) != (rows, model_config.d_model):
        raise HubError(
            f"{folder}: {embedding} has shape {tuple(shapes[embedding])} but config.json implies (…, "
            f"{model_config.d_model})"
        )
    implied = {theirs: tuple(expected[ours].shape) for ours, (theirs, _how) in weight_names(model_config).items()}
    for ours, theirs in position_names(model_config).items():  # stored from row LEARNED_OFFSET
        rows, width = expected[ours].shape
        implied[theirs] = (rows + LEARNED_OFFSET, width)
    for theirs, shape in implied.items():
        if theirs not in shapes:
            raise HubError(f"{folder}: the weights lack {theirs}")
        if tuple(shapes[theirs]) != shape:
            raise HubError(
                f"{folder}: tensor {theirs} has shape {tuple(shapes[theirs])} but config.json implies {shape}"
            )


def hub_model_config(
    folder: Path,
    config: Mapping[str, Any],
    vocabulary: Vocabulary,
    languages: tuple[str, str],
    forced: int,
    output_bias: bool,
) -> ModelConfig:
    """The :class:`ModelConfig` of a Hugging Face config (shapes, and where the family departs from the paper)."""
    family = config["model_type"]
    if config.get("encoder_attention_heads") != config.get("decoder_attention_heads"):
        raise HubError(f"{folder}: encoder and decoder have different head counts; not supported")
    if config.get("encoder_ffn_dim") != config.get("decoder_ffn_dim"):
        raise HubError(f"{folder}: encoder and decoder have different feed-forward widths; not supported")
    activation = {"swish": "silu", "silu": "silu", "relu": "relu", "gelu": "gelu"}.get(
        config.get("activation_function")
    )
    if activation is None:
        raise HubError(f"{folder}: activation {config.get('activation_function')!r} is not supported")
    try:
        d_model = int(config["d_model"])
        if d_model % 2:
            raise HubError(f"{folder}: d_model={d_model} is odd; the positional tables need an even width")
        return ModelConfig(
            vocab_size=vocabulary.size,
            d_model=d_model,
            num_heads=int(config["encoder_attention_heads"]),
            d_ff=int(config["encoder_ffn_dim"]),
            encoder_layers=int(config["encoder_layers"]),
            decoder_layers=int(config["decoder_layers"]),
            dropout=0.0,
            attention_dropout=0.0,
            max_positions=int(config.get("max_position_embeddings", 512)),
            source_language=languages[0],
            target_language=languages[1],
            activation=activation,
            norm_first=family == "m2m_100",
            positional={"marian": "paper", "m2m_100": "tensor2tensor"}.get(family, "learned"),
            position_offset=int(config["pad_token_id"]) + 1 if family == "m2m_100" else 0,
            scale_embedding=bool(config.get("scale_embedding", family == "marian")),
            embedding_norm=family == "bart",
            output_bias=output_bias,
            forced_first_id=forced,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise HubError(f"{folder / 'config.json'}: {error}") from None


def _source_prefix(folder: Path, tokenizer, eos: int) -> list[int]:
    """The special tokens the model's tokenizer puts before a sentence (BART's <s>): what it makes of no text, up to
    the closing </s> that this project's search adds itself."""
    around = [int(token) for token in tokenizer("", add_special_tokens=True)["input_ids"]]
    if not around or around[-1] != eos:
        raise HubError(f"{folder}: its tokenizer does not end a sentence with </s> ({around}); not supported")
    return around[:-1]


def _generation_setting(folder: Path, config: Mapping[str, Any], name: str) -> int | None:
    """A token id the folder's generation_config.json (else its config.json) sets, such as BART's forced first token;
    None where neither does."""
    found = None
    if (folder / "generation_config.json").is_file():
        generation = read_json(folder / "generation_config.json")
        found = generation.get(name) if isinstance(generation, dict) else None
    found = config.get(name) if found is None else found
    if found is None:
        return None
    if isinstance(found, bool) or not isinstance(found, int):
        raise HubError(f"{folder}: {name} is {found!r}, not a token id")
    return found


def _weights_file(folder: Path) -> Path:
    """The folder's safetensors weights (``model.safetensors`` or its shards); a pickle is never opened."""
    if not (folder / "model.safetensors").is_file() and not list(folder.glob("model-*-of-*.safetensors")):
        pickles = [p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt")]
        hint = f" (it has {pickles[0]}, a pickle, which the app never opens: it could run code)" if pickles else ""
        raise HubError(
            f"{folder}: no model.safetensors{hint}. Save the model as safetensors first: "
            "AutoModelForSeq2SeqLM.from_pretrained(folder).save_pretrained(folder, safe_serialization=True)"
        )
    return folder / "model.safetensors"


def _hub(call, *arguments):
    """A reader of :mod:`transformer.formats.checkpoint_files` whose failure is this module's :class:`HubError`."""
    try:
        return call(*arguments)
    except HubError:
        raise
    except CheckpointError as error:
        raise HubError(str(error)) from None


def open_hub_folder(folder: str | Path, dtype: torch.dtype = torch.float32) -> LoadedCheckpoint:
    """A Marian or M2M100/NLLB folder as a :class:`LoadedCheckpoint` of this project's model (see the module)."""
    folder = Path(folder)
    config = _read_hub_config(folder)
    family = config["model_type"]
    if family == "marian" and not config.get("share_encoder_decoder_embeddings", True):
        raise HubError(f"{folder}: separate source and target vocabularies cannot be opened yet")
    _check_tokenizer_files(folder)
    tokenizer_config = (
        read_json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").is_file() else {}
    )
    if not isinstance(tokenizer_config, dict):
        raise HubError(f"{folder / 'tokenizer_config.json'}: not a tokenizer configuration")
    languages = _languages(folder, config, tokenizer_config)
    hub_tokenizer = open_hub_tokenizer(folder, family, languages)
    weights = _weights_file(folder)
    shapes = _hub(tensor_shapes, weights)
    embedding = next((n for n in ("model.shared.weight", "model.encoder.embed_tokens.weight") if n in shapes), None)
    if embedding is None or len(shapes[embedding]) != 2:
        raise HubError(f"{folder}: the weights hold no token embedding (model.shared.weight)")
    try:
        pad, eos = int(config["pad_token_id"]), int(config["eos_token_id"])
        start = int(config.get("decoder_start_token_id", pad))
    except (KeyError, TypeError, ValueError) as error:
        raise HubError(f"{folder / 'config.json'}: no special token ids ({error})") from None
    unk = hub_tokenizer.unk_token_id
    vocabulary = Vocabulary.of(shapes[embedding][0], pad, unk, start, eos)
    forced, source_prefix = -1, []
    ours = vocabulary.to_ours()
    if family == "m2m_100":
        forced = our_id(ours, language_token_id(hub_tokenizer, language_code(hub_tokenizer, languages[1])))
        source_prefix = [our_id(ours, language_token_id(hub_tokenizer, language_code(hub_tokenizer, languages[0])))]
    elif family == "bart":
        source_prefix = [our_id(ours, token) for token in _source_prefix(folder, hub_tokenizer, eos)]
        first = _generation_setting(folder, config, "forced_bos_token_id")
        forced = -1 if first is None else our_id(ours, first)
    # Checked before anything is read or built: the shapes the configuration implies, and the memory it needs.
    model_config = hub_model_config(folder, config, vocabulary, languages, forced, vocabulary.added is not None)
    _check_shapes(folder, shapes, model_config, embedding)
    _check_memory(folder, weights, model_config)
    tensors = _hub(read_tensors, weights)
    shared = embedding_of(tensors, folder)
    bias = tensors.get("final_logits_bias", torch.zeros(1, shared.size(0))).float().reshape(-1)
    if bias.numel() != shared.size(0):
        raise HubError(f"{folder}: final_logits_bias has {bias.numel()} values for {shared.size(0)} tokens")
    # A zero output bias (this project's own models exported as Marian) is no bias: the paper's model comes back.
    model_config = dataclasses.replace(model_config, output_bias=vocabulary.added is not None or bool(bias.any()))
    model = Transformer(model_config)
    order = torch.tensor(vocabulary.order)
    # Sinusoids stored as two halves are moved into the paper's interleaved order; learned positions need no order.
    learned = model_config.positional == "learned"
    width = torch.arange(model_config.d_model) if learned else interleaving(model_config.d_model)
    state: dict[str, torch.Tensor] = {}
    for ours, (theirs, how) in weight_names(model_config).items():
        if theirs not in tensors:
            raise HubError(f"{folder}: the weights lack {theirs}")
        state[ours] = permute_width(tensors[theirs].float(), how, width)
    for ours, theirs in position_names(model_config).items():
        state[ours] = tensors[theirs].float()[LEARNED_OFFSET:]
    state["embedding.weight"] = shared.float().index_select(0, order).index_select(1, width)
    bias = bias.index_select(0, order)
    if vocabulary.added is not None:
        bias[vocabulary.added] = HIDDEN_LOGIT
    if model_config.output_bias:
        state["output_bias"] = bias
    try:
        model.load_state_dict(state)
    except RuntimeError as error:  # only shapes the headers did not show (the checks above cover the rest)
        raise HubError(f"{folder}: the weights do not fit its config.json ({str(error).splitlines()[0]})") from None
    name = str(config.get("_name_or_path") or folder.name)
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        name = folder.parent.parent.name.removeprefix("models--").replace("--", "/", 1)  # a hub cache's snapshot
    elif not name or name.startswith(("/", ".")) or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", name):
        name = folder.name
    info = HubModel(family, name, *languages, type(hub_tokenizer).__name__)
    meta = {"hub": info.__dict__, "description": info.describe()}
    target_prefix = [forced] if forced >= 0 else []
    tokenizer = HubTokenizer(hub_tokenizer, vocabulary, source_prefix, target_prefix)
    loaded = LoadedCheckpoint(folder, model.to(dtype).eval(), tokenizer, model_config, meta)
    loaded.store = measurement_folder(folder)
    return loaded


def measurement_folder(folder: Path) -> Path:
    """Where the measurements of a Hugging Face model's weights are kept: a folder of this project's cache named by
    the weights' fingerprint, never the user's model folder nor the Hugging Face cache."""
    root = Path(os.environ.get("ATTENTION_EXPLORER_CACHE", Path.home() / ".cache" / "attention-explorer"))
    return root / "models" / fingerprint(folder)[:32]
