"""What the What if tabs share: the view pickers, headings, downloads and the heads switched off."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import transformer.formats.checkpoint
from pages import url_state
from pages.caching import per_model
from pages.figures import sentence_slug, show_figure
from pages.i18n import escaped, language, t
from pages.links import atlas_button
from pages.models import available_checkpoints, get_checkpoint, open_checkpoint, stored_heads
from pages.pickers import head_picker
from pages.url_state import Field
from transformer.analysis import ablation, precompute
from transformer.analysis.attention import KINDS, AttentionMaps, Translation
from transformer.analysis.forced import Scored, score_output
from transformer.formats.checkpoint import LoadedCheckpoint
from transformer.paper.tokenizer import readable_pieces
from transformer.plots import attention as plot_attention
from transformer.search.decode import DecodingOptions


@dataclass(frozen=True)
class Case:
    """What every What if tab is handed: the loaded model, the page's sentence, its translation and the decoding."""

    loaded: LoadedCheckpoint
    text: str
    translation: Translation
    options: DecodingOptions


def view_fields(prefix: str) -> dict[str, Field]:
    """The view a tab shows (its attention kind, 1-based layer and head; ``prefix`` after ``wi_``): without a link's
    choice, the loaded model's clearest head (:func:`head_pickers`)."""
    return {
        f"wi_{prefix}kind": Field(None, url_state.choice(KINDS)),
        f"wi_{prefix}layer": Field(None, url_state.integer(1, 64)),
        f"wi_{prefix}head": Field(None, url_state.integer(1, 64)),
    }


@per_model(max_entries=32)
def cached_score(loaded: LoadedCheckpoint, source_ids: tuple, output_ids: tuple) -> Scored:
    """One hypothesis's attention and per-token probabilities, from one teacher-forced pass."""
    return score_output(loaded.model, loaded.tokenizer, list(source_ids), list(output_ids), "")


def read_old_links(loaded: LoadedCheckpoint) -> None:
    """The heads switched off as (layer, head) pairs: a link written before layers and heads were named from 1 gave
    each as one number, layer × heads + head, read here with the model's head count (once the page has it)."""
    heads = loaded.config.num_heads
    for kind in KINDS:
        key = f"wi_off_{kind}"
        if key in st.session_state:
            st.session_state[key] = [
                divmod(x, heads) if isinstance(x, int) else tuple(x) for x in st.session_state[key]
            ]


def heads_off() -> list[ablation.Head]:
    """The heads chosen on the ablation tab, as (kind, layer, head), 0-based."""
    return [(kind, layer, head) for kind in KINDS for layer, head in st.session_state.get(f"wi_off_{kind}", [])]


def set_heads_off(heads: list[ablation.Head]) -> None:
    for kind in KINDS:
        st.session_state[f"wi_off_{kind}"] = sorted((layer, head) for k, layer, head in heads if k == kind)
    st.session_state["wi_tab"] = "ablate"


def translation_line(label: str, text: str) -> None:
    st.markdown(f"**{escaped(label)}**")
    st.markdown(
        f'<div style="font-size:1.25rem;font-weight:600">{html.escape(text) or "∅"}</div>', unsafe_allow_html=True
    )


def opening_head(loaded: LoadedCheckpoint) -> tuple[str, int, int]:
    """The loaded model's clearest head (as the main page opens on), else cross-attention layer 1, head 1."""
    stored = stored_heads(loaded)
    return ("cross", 0, 0) if stored is None else precompute.default_head(stored.tables)


def head_pickers(
    loaded: LoadedCheckpoint, prefix: str = "wi_", also: LoadedCheckpoint | None = None
) -> tuple[str, int, int]:
    """Kind, layer and head of the view shown on both sides (0-based layer and head); they open on the model's
    clearest head. ``also``: the model on the other side, when it is another one (only the layers and heads both
    models have are offered)."""
    if f"{prefix}kind" not in st.session_state:
        kind, layer, head = opening_head(loaded)
        st.session_state[f"{prefix}kind"] = kind
        st.session_state.setdefault(f"{prefix}layer", layer + 1)
        st.session_state.setdefault(f"{prefix}head", head + 1)
    return head_picker(loaded.config, prefix, also=None if also is None else also.config)


def heatmap(
    maps: AttentionMaps, kind: str, layer: int | None, head: int | None, title: str, key: str, atlas: bool = False
) -> None:
    """One head's (or an average's) attention; ``atlas``: with a button to the head's card (the loaded model's)."""
    queries, keys = map(readable_pieces, maps.tokens(kind))
    show_figure(
        plot_attention.attention_heatmap(
            maps.matrix(kind, layer, head), queries, keys, title, causal=kind == "decoder", language=language()
        ),
        key=key,
    )
    if atlas and layer is not None and head is not None:
        atlas_button(kind, layer, head, key=f"{key}_atlas")


def download(name: str, what: str, make, extension: str, mime: str) -> None:
    """A download button (key ``{name}_download``) for a file named after the page's sentence and ``what``; ``make``
    makes its content when the button is pressed, not at every run of the page."""
    label = {"json": "whatif.download_json", "csv": "whatif.download_csv", "npz": "whatif.download_npz"}[extension]
    st.download_button(t(label), make, file_name=file_name(what, extension), mime=mime, key=f"{name}_download")


def download_json(name: str, value: dict) -> None:
    """The tab's numbers as a JSON download (the figures download with their camera button)."""
    text = lambda: json.dumps(value, ensure_ascii=False, indent=1, default=float)  # noqa: E731  (made on a press)
    download(name, name.removeprefix("wi_"), text, "json", "application/json")


def file_name(what: str, extension: str) -> str:
    """A download's name after the page's sentence and what the file holds ("the-children-are-…-rollout.npz")."""
    return f"{sentence_slug(st.session_state.get('wi_text') or '')}-{what}.{extension}"


def describe(kind: str, layer: int, head: int) -> str:
    """A chart's title: the kind's short name (no English gloss), so that it fits a half-width chart in Korean."""
    return t("whatif.view", kind=t(f"kind_title.{kind}"), layer=layer + 1, head=head + 1)


def comparison_checkpoints(loaded: LoadedCheckpoint) -> list[str]:
    """What the side-by-side tab offers beside the loaded checkpoint: the app's checkpoints (the loaded one last)
    and, when the loaded checkpoint lies in a training run's folder, that run's kept checkpoints and snapshots."""
    names = [name for name in available_checkpoints() if name not in (loaded.path.name, str(loaded.path))]
    if loaded.path.parent.name in ("checkpoints", "snapshots"):
        run = loaded.path.parent.parent
        steps = [*sorted((run / "snapshots").glob("step-*")), *sorted((run / "checkpoints").glob("step-*"))]
        names += [shown_path(path) for path in steps if path != loaded.path and (path / "config.json").is_file()]
    return [*names, shown_path(loaded.path)]


def open_comparison(chosen: str) -> LoadedCheckpoint:
    """A choice of :func:`comparison_checkpoints`: a listed model through the gate (:func:`open_checkpoint`); a
    snapshot or kept checkpoint of the loaded model's own run, which the page itself offers, directly."""
    if chosen in available_checkpoints():
        return open_checkpoint(chosen)
    return get_checkpoint(str(transformer.formats.checkpoint.resolve(chosen).resolve()))


def shown_path(path: Path) -> str:
    """How a checkpoint folder is named in the choice and the page's link: by name when it is one of the app's
    checkpoints, else relative to the server's folder where it lies below it; never the server's absolute folders
    when it can be helped (a shared link would carry them)."""
    path = Path(path)
    shipped = transformer.formats.checkpoint.REPOSITORY_CHECKPOINTS  # read now: tests move it
    if path.parent.resolve() == shipped.resolve():
        return path.name
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
