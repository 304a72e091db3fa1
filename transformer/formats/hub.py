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
:func:`export_marian` writes a checkpoint as a ``MarianMTModel`` folder that ``from_pretrained`` opens offline.

transformers is needed only here (``pip install transformers``; the app's extra brings it). Nothing is downloaded:
a folder always opens, a hub id only when the local Hugging Face cache already holds it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import warnings
from collections.abc import Iterable, Mapping, Sequence
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
from transformer.paper.config import ModelConfig
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, clean

FAMILIES = {"marian": "Marian (OPUS-MT)", "m2m_100": "M2M100 / NLLB"}
HIDDEN_LOGIT = -1e9  # the logit of a row added for the start token: exp(-1e9 - any logit) is 0 in float32
# ISO 639-1 → NLLB's language codes, for the languages the app names (transformer.paper.config.LANGUAGE_NAMES)
NLLB_CODES = {
    "en": "eng_Latn",
    "de": "deu_Latn",
    "fr": "fra_Latn",
    "es": "spa_Latn",
    "it": "ita_Latn",
    "nl": "nld_Latn",
    "pt": "por_Latn",
    "ru": "rus_Cyrl",
    "cs": "ces_Latn",
    "ro": "ron_Latn",
    "tr": "tur_Latn",
    "zh": "zho_Hans",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
}


class HubError(CheckpointError):
    """A Hugging Face folder that cannot be opened as this project's model; the message says why."""


def _transformers():
    try:
        import transformers
    except ImportError:
        raise HubError("opening a Hugging Face model needs transformers: pip install transformers") from None
    transformers.utils.logging.disable_progress_bar()  # no bars from loading and saving in the app's log
    return transformers


def is_hub_folder(path: str | Path) -> bool:
    """True for a folder whose config.json is a Hugging Face one (it names a ``model_type``)."""
    config = Path(path) / "config.json"
    try:
        return "model_type" in read_json(config)
    except (CheckpointError, TypeError):  # missing, huge, not JSON, nested too deeply: not a Hugging Face folder
        return False


def cached_hub_folder(name: str) -> Path | None:
    """The local snapshot of a Hugging Face hub id (``Helsinki-NLP/opus-mt-en-de``) when the cache holds one; None
    for a name that is not a hub id. Never downloads: a hub id missing from the cache raises with how to get it."""
    # The hub's names are at most 96 characters a part; a longer one is no hub id (and no file name either).
    if not re.fullmatch(r"[\w.-]{1,96}/[\w.-]{1,96}", name) or Path(name).exists():
        return None
    repository = hub_cache() / f"models--{name.replace('/', '--')}"
    snapshots = repository / "snapshots"
    main = repository / "refs" / "main"
    candidates = [snapshots / main.read_text().strip()] if main.is_file() else []
    candidates += sorted(snapshots.glob("*")) if snapshots.is_dir() else []
    for snapshot in candidates:
        if (snapshot / "config.json").is_file():
            return snapshot
    raise HubError(
        f"{name}: no such checkpoint folder, nor a model in the local Hugging Face cache ({hub_cache()}); nothing is "
        f"downloaded at run time: `hf download {name}` (or `huggingface-cli download {name}`) fetches a hub model once"
    )


def hub_cache() -> Path:
    """The local Hugging Face hub cache (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else ~/.cache/huggingface/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def cached_hub_models() -> list[str]:
    """The hub ids of the Marian and M2M100/NLLB models the local Hugging Face cache holds, sorted."""
    found = []
    for repository in sorted(hub_cache().glob("models--*--*")):
        for snapshot in sorted((repository / "snapshots").glob("*")):
            if is_hub_folder(snapshot) and _model_type(snapshot) in FAMILIES:
                found.append(repository.name.removeprefix("models--").replace("--", "/", 1))
                break
    return found


def _model_type(folder: Path) -> str | None:
    try:
        return read_json(folder / "config.json").get("model_type")
    except (CheckpointError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------------------------
# Weights: names, the width permutation and the vocabulary order


def interleaving(d_model: int) -> torch.Tensor:
    """Index k of the interleaved (paper) layout ← index ``interleaving(D)[k]`` of the half-split layout: even
    dimensions take the first half (sines), odd ones the second (cosines)."""
    k = torch.arange(d_model)
    return torch.where(k % 2 == 0, k // 2, d_model // 2 + k // 2)


def _layer_names(kind: str, index: int) -> dict[str, tuple[str, str]]:
    """This project's name → (the Hugging Face name, how the width enters it) for one layer's tensors."""
    ours, theirs = f"{kind}_layers.{index}", f"model.{kind}.layers.{index}"
    names: dict[str, tuple[str, str]] = {}

    def module(mine: str, hf: str, weight: str, bias: str) -> None:  # a Linear or LayerNorm: weight, then bias
        names[f"{ours}.{mine}.weight"] = (f"{theirs}.{hf}.weight", weight)
        names[f"{ours}.{mine}.bias"] = (f"{theirs}.{hf}.bias", bias)

    attentions = [("self_attention", "self_attn")] + (
        [("cross_attention", "encoder_attn")] if kind == "decoder" else []
    )
    for mine, hf in attentions:
        for projection, hf_projection in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
            module(f"{mine}.{projection}", f"{hf}.{hf_projection}", "columns", "none")
        module(f"{mine}.output", f"{hf}.out_proj", "rows", "rows")
        module(f"{mine}_norm", f"{hf}_layer_norm", "rows", "rows")
    module("feed_forward.inner", "fc1", "columns", "none")
    module("feed_forward.outer", "fc2", "rows", "rows")
    module("feed_forward_norm", "final_layer_norm", "rows", "rows")
    return names


def weight_names(config: ModelConfig) -> dict[str, tuple[str, str]]:
    """Every tensor of the model built from ``config`` → (its Hugging Face name, how the width enters it:
    "columns", "rows" or "none"). The embedding and the output bias, whose rows are the vocabulary, are apart."""
    names: dict[str, tuple[str, str]] = {}
    for index in range(config.encoder_layers):
        names.update(_layer_names("encoder", index))
    for index in range(config.decoder_layers):
        names.update(_layer_names("decoder", index))
    if config.norm_first:
        for kind in ("encoder", "decoder"):
            for part in ("weight", "bias"):
                names[f"{kind}_norm.{part}"] = (f"model.{kind}.layer_norm.{part}", "rows")
    return names


def _permute(tensor: torch.Tensor, how: str, order: torch.Tensor) -> torch.Tensor:
    if how == "columns":
        return tensor.index_select(1, order)
    if how == "rows":
        return tensor.index_select(0, order)
    return tensor


def _embedding(tensors: Mapping[str, torch.Tensor], folder: Path) -> torch.Tensor:
    """The one embedding matrix shared by encoder, decoder and output; refused where the model has several."""
    for name in ("model.shared.weight", "model.encoder.embed_tokens.weight"):
        if name in tensors:
            shared = tensors[name]
            break
    else:
        raise HubError(f"{folder}: the weights hold no token embedding (model.shared.weight)")
    for name in ("model.decoder.embed_tokens.weight", "lm_head.weight"):
        if name in tensors and not torch.equal(tensors[name], shared):
            raise HubError(
                f"{folder}: {name} differs from the encoder's embedding; models with separate source and target "
                "vocabularies or an untied output layer cannot be opened yet"
            )
    return shared


@dataclass(frozen=True)
class Vocabulary:
    """The reordering of a Hugging Face vocabulary: ``order[i]`` is the Hugging Face id of this project's id ``i``
    (one id appears twice where the start token got a row of its own, ``added``)."""

    order: list[int]
    added: int | None  # this project's id of a row added for the start token, or None

    @classmethod
    def of(cls, size: int, pad: int, unk: int, start: int, eos: int) -> Vocabulary:
        if len({pad, unk, eos}) < 3:
            raise HubError(f"the special tokens pad={pad}, unk={unk}, eos={eos} are not three different tokens")
        fixed = [pad, unk, start, eos]
        added = BOS_ID if start in (pad, unk, eos) else None
        rest = [i for i in range(size) if i not in fixed]
        return cls(fixed + rest, added)

    @property
    def size(self) -> int:
        return len(self.order)

    def to_ours(self) -> dict[int, int]:
        """Hugging Face id → this project's id (the start token's original id where it has two)."""
        mapping: dict[int, int] = {}
        for ours, theirs in enumerate(self.order):
            if ours != self.added:
                mapping.setdefault(theirs, ours)
        return mapping


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
            f"{folder}: a {model_type!r} model is {what}; the app opens Marian (OPUS-MT) and M2M100/NLLB translation "
            "models"
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
    for ours, (theirs, _how) in weight_names(model_config).items():
        if theirs not in shapes:
            raise HubError(f"{folder}: the weights lack {theirs}")
        if tuple(shapes[theirs]) != tuple(expected[ours].shape):
            raise HubError(
                f"{folder}: tensor {theirs} has shape {tuple(shapes[theirs])} but config.json implies "
                f"{tuple(expected[ours].shape)}"
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
            positional="paper" if family == "marian" else "tensor2tensor",
            position_offset=0 if family == "marian" else int(config["pad_token_id"]) + 1,
            scale_embedding=bool(config.get("scale_embedding", family == "marian")),
            output_bias=output_bias,
            forced_first_id=forced,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise HubError(f"{folder / 'config.json'}: {error}") from None


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


class HubTokenizer(Tokenizer):
    """A Hugging Face model's own tokenizer, giving and taking this project's reordered ids (:class:`Vocabulary`).

    ``encode`` returns what the model reads before its closing </s>: for M2M100/NLLB the source-language token
    first. Pieces are the tokenizer's own, so words start at ▁ as with the project's SentencePiece model."""

    def __init__(
        self, tokenizer, vocabulary: Vocabulary, source_prefix: Sequence[int] = (), target_prefix: Sequence[int] = ()
    ) -> None:
        self.hub = tokenizer
        self.source_prefix, self.target_prefix = tuple(source_prefix), tuple(target_prefix)
        self.vocabulary = vocabulary
        self.from_hub = vocabulary.to_ours()
        self.to_hub = vocabulary.order
        specials = set(getattr(tokenizer, "all_special_ids", []))
        self.special = {self.from_hub[i] for i in specials if i in self.from_hub} | {PAD_ID, UNK_ID, BOS_ID, EOS_ID}

    @property
    def vocab_size(self) -> int:
        return self.vocabulary.size

    def _ours(self, ids: Iterable[int]) -> list[int]:
        return [self.from_hub.get(int(i), UNK_ID) for i in ids]

    def encode_text(self, text: str) -> list[int]:
        return self._ours(self.hub(clean(text), add_special_tokens=False)["input_ids"])

    def encode(self, text: str) -> list[int]:
        return [*self.source_prefix, *self.encode_text(text)]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Iterable[int]) -> str:
        kept = [self.to_hub[int(i)] for i in ids if int(i) not in self.special and 0 <= int(i) < self.vocab_size]
        return clean(self.hub.decode(kept, skip_special_tokens=True))

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [str(piece) for piece in self.hub.convert_ids_to_tokens([self.to_hub[int(i)] for i in ids])]

    def save(self, path: str | Path) -> None:
        raise HubError("a Hugging Face model's tokenizer stays in its folder")


def _hub_tokenizer(folder: Path, family: str, languages: tuple[str, str]):
    transformers = _transformers()
    try:
        with warnings.catch_warnings():  # MarianTokenizer recommends sacremoses, which the app does not use
            warnings.simplefilter("ignore")
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as error:  # missing or broken tokenizer files raise many kinds of error
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise HubError(f"{folder}: its tokenizer does not open ({message[:300]})") from None
    if family == "m2m_100":
        source, target = (_language_code(tokenizer, code) for code in languages)
        tokenizer.src_lang = source
        if hasattr(tokenizer, "tgt_lang"):
            tokenizer.tgt_lang = target
    return tokenizer


def _language_code(tokenizer, code: str) -> str:
    """The tokenizer's own name of a language: ``de`` for M2M100, ``deu_Latn`` for NLLB."""
    if hasattr(tokenizer, "get_lang_id"):
        return code
    return NLLB_CODES.get(code, code)


def _our_id(ours: Mapping[int, int], theirs: int) -> int:
    if theirs not in ours:
        raise HubError(f"the tokenizer's token {theirs} lies outside the model's vocabulary")
    return ours[theirs]


def _language_token_id(tokenizer, code: str) -> int:
    if hasattr(tokenizer, "get_lang_id"):
        return int(tokenizer.get_lang_id(code))
    token_id = tokenizer.convert_tokens_to_ids(code)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise HubError(f"the tokenizer has no language token {code!r}")
    return int(token_id)


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
    hub_tokenizer = _hub_tokenizer(folder, family, languages)
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
    if family == "m2m_100":
        ours = vocabulary.to_ours()
        forced = _our_id(ours, _language_token_id(hub_tokenizer, _language_code(hub_tokenizer, languages[1])))
        source_prefix = [_our_id(ours, _language_token_id(hub_tokenizer, _language_code(hub_tokenizer, languages[0])))]
    # Checked before anything is read or built: the shapes the configuration implies, and the memory it needs.
    model_config = hub_model_config(folder, config, vocabulary, languages, forced, vocabulary.added is not None)
    _check_shapes(folder, shapes, model_config, embedding)
    _check_memory(folder, weights, model_config)
    tensors = _hub(read_tensors, weights)
    shared = _embedding(tensors, folder)
    bias = tensors.get("final_logits_bias", torch.zeros(1, shared.size(0))).float().reshape(-1)
    if bias.numel() != shared.size(0):
        raise HubError(f"{folder}: final_logits_bias has {bias.numel()} values for {shared.size(0)} tokens")
    # A zero output bias (this project's own models exported as Marian) is no bias: the paper's model comes back.
    model_config = dataclasses.replace(model_config, output_bias=vocabulary.added is not None or bool(bias.any()))
    model = Transformer(model_config)
    order = torch.tensor(vocabulary.order)
    width = interleaving(model_config.d_model)
    state: dict[str, torch.Tensor] = {}
    for ours, (theirs, how) in weight_names(model_config).items():
        if theirs not in tensors:
            raise HubError(f"{folder}: the weights lack {theirs}")
        state[ours] = _permute(tensors[theirs].float(), how, width)
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


# ---------------------------------------------------------------------------------------------------------------
# Exporting this project's model as a Marian folder


def export_marian(loaded: LoadedCheckpoint, out: str | Path, force: bool = False) -> Path:
    """Write ``loaded`` as a Hugging Face ``MarianMTModel`` folder at ``out`` (config, generation config, float32
    safetensors, Marian tokenizer files), replacing a non-empty folder only with ``force``. Exact: the same function
    up to float rounding (tests)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise HubError(f"{out} exists and is not empty (--force replaces it)")
    transformers = _transformers()
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
    state = {theirs: _permute(ours[mine], how, width) for mine, (theirs, how) in weight_names(config).items()}
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
