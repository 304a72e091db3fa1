"""Which folders are Hugging Face encoder–decoders this project opens, of which family, and the local Hugging Face cache
they may come from (nothing is downloaded)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from transformer.formats.checkpoint_files import CheckpointError, read_json

FAMILIES = {"marian": "Marian (OPUS-MT)", "m2m_100": "M2M100 / NLLB", "bart": "BART"}
# BART's positions are a learned table per stack, stored from row LEARNED_OFFSET (BART numbers the first token 2).
LEARNED_OFFSET = 2
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


def transformers_module():
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
