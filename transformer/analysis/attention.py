"""What the app and the figure scripts analyse: one sentence's translation with every attention head recorded.

:class:`AttentionMaps` is the object that flows from the model to every view. It holds the tokens as the model sees
them (SentencePiece pieces) and the attention probabilities as NumPy arrays shaped [layers, heads, queries, keys]:

- ``encoder``: encoder self-attention over the source, [L, H, S, S];
- ``decoder``: decoder masked self-attention over the decoder input ``<s> y1 … yn``, [L, H, T, T];
- ``cross``: encoder–decoder attention from the decoder input to the source, [L, H, T, S].

Decoder position t reads ``target_tokens[t]`` and predicts ``predicted_tokens[t]`` (the next output piece, or
``</s>`` at the end). Everything here is plain functions of these arrays: no Streamlit, no plotting.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transformer.paper.config import ATTENTION_KINDS as KINDS
from transformer.paper.data import pad
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID, PAD_ID, SPECIAL_PIECES, Tokenizer, join_pieces
from transformer.search.decode import (
    DEFAULT_DECODING,
    DecodingOptions,
    encode_source,
    max_source_tokens,
    search,
    search_model,
    source_limit,
)
from transformer.search.fast import decoder_attention, encode_recording

KIND_TITLES = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Encoder–decoder (cross) attention",
}


@dataclass
class AttentionMaps:
    source_tokens: list[str]
    target_tokens: list[str]
    predicted_tokens: list[str]
    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray

    @property
    def num_layers(self) -> int:
        return self.encoder.shape[0]

    @property
    def num_heads(self) -> int:
        return self.encoder.shape[1]

    def weights(self, kind: str) -> np.ndarray:
        """[L, H, queries, keys] of one attention kind."""
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(KINDS)}")
        return getattr(self, kind)

    def tokens(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of one attention kind."""
        if kind == "encoder":
            return self.source_tokens, self.source_tokens
        if kind == "decoder":
            return self.target_tokens, self.target_tokens
        return self.target_tokens, self.source_tokens

    def matrix(self, kind: str, layer: int | None, head: int | None) -> np.ndarray:
        """One [queries, keys] matrix; ``None`` for layer or head averages over all layers or heads."""
        weights = self.weights(kind)
        weights = weights.mean(axis=0) if layer is None else weights[layer]
        return weights.mean(axis=0) if head is None else weights[head]


@dataclass
class Translation:
    """A translated sentence with its attention and how it was produced."""

    source_text: str
    translation: str
    maps: AttentionMaps
    truncated: bool = False  # the source was longer than the model reads: see read_text
    read_text: str = ""  # the part of the source the model read (all of it unless truncated)
    options: DecodingOptions = DEFAULT_DECODING
    seconds: dict[str, float] = field(default_factory=dict)
    source_ids: list[int] = field(default_factory=list)  # what the model read (ending with </s>)
    output_ids: list[int] = field(default_factory=list)  # what it wrote (without <s> and </s>)


@torch.no_grad()
def teacher_forced(
    model: Transformer, tokenizer: Tokenizer, source_ids: Sequence[int], output_ids: Sequence[int]
) -> tuple[AttentionMaps, torch.Tensor]:
    """One teacher-forced pass over a source (ending with </s>) and an output (without <s>/</s>): every head
    recorded, and the logits (T, V) at each decoder position."""
    device = next(model.parameters()).device
    source = torch.tensor([list(source_ids)], dtype=torch.long, device=device)
    target_input = torch.tensor([[BOS_ID, *output_ids]], dtype=torch.long, device=device)
    result = model(source, target_input, need_weights=True)
    maps = _maps_of(
        tokenizer, source_ids, output_ids, result.encoder_attention, result.decoder_attention, result.cross_attention, 0
    )
    return maps, result.logits[0]


def _maps_of(
    tokenizer: Tokenizer,
    source_ids: Sequence[int],
    output_ids: Sequence[int],
    encoder: torch.Tensor,
    decoder: torch.Tensor,
    cross: torch.Tensor,
    row: int,
) -> AttentionMaps:
    """One sentence's maps from a (possibly padded) batch's attention [B, L, H, queries, keys], cut to its length."""
    s, t = len(source_ids), len(output_ids) + 1
    return AttentionMaps(
        source_tokens=tokenizer.pieces(source_ids),
        target_tokens=tokenizer.pieces([BOS_ID, *output_ids]),
        predicted_tokens=tokenizer.pieces([*output_ids, EOS_ID]),
        encoder=encoder[row, :, :, :s, :s].float().contiguous().cpu().numpy(),
        decoder=decoder[row, :, :, :t, :t].float().contiguous().cpu().numpy(),
        cross=cross[row, :, :, :t, :s].float().contiguous().cpu().numpy(),
    )


def attention_for(
    model: Transformer, tokenizer: Tokenizer, source_ids: Sequence[int], output_ids: Sequence[int]
) -> AttentionMaps:
    """Every head's attention over a source and an output (:func:`teacher_forced` without the logits)."""
    return teacher_forced(model, tokenizer, source_ids, output_ids)[0]


@torch.no_grad()
def attention_for_many(
    model: Transformer,
    tokenizer: Tokenizer,
    sources: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
) -> list[AttentionMaps]:
    """:func:`attention_for` of several sentences in one padded pass (no logits: the app's translations need only
    the maps). Padding only ever adds masked keys (and queries that are cut off), so each sentence's maps are its
    own pass's, to float rounding."""
    if len(sources) != len(outputs):
        raise ValueError(f"{len(sources)} sources but {len(outputs)} outputs")
    device = next(model.parameters()).device
    source = pad([list(ids) for ids in sources], PAD_ID).to(device)
    return _recorded_maps(model, tokenizer, sources, outputs, source, *encode_recording(model, source))


def _recorded_maps(
    model: Transformer,
    tokenizer: Tokenizer,
    sources: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    source: torch.Tensor,
    memory: torch.Tensor,
    encoder: torch.Tensor,
) -> list[AttentionMaps]:
    """The maps of a padded batch whose encoder has run (:func:`~transformer.search.fast.encode_recording`), with
    the decoder's pass over the outputs on the search's packed weights
    (:func:`~transformer.search.fast.decoder_attention`: what ``model.decode(..., need_weights=True)`` records)."""
    target_input = pad([[BOS_ID, *output] for output in outputs], PAD_ID).to(source.device)
    decoder, cross = decoder_attention(model, memory, source, target_input)
    return [
        _maps_of(tokenizer, source_ids, output_ids, encoder, decoder, cross, row)
        for row, (source_ids, output_ids) in enumerate(zip(sources, outputs, strict=True))
    ]


@torch.no_grad()
def translate_with_attention(
    model: Transformer,
    tokenizer: Tokenizer,
    text: str,
    options: DecodingOptions = DEFAULT_DECODING,
    max_tokens: int | None = None,
) -> Translation:
    """Translate one sentence (beam search, or greedy for beam 1), then record attention over the output.

    The search runs in ``options.precision`` (see :func:`~transformer.search.decode.search_model`); the attention is
    always recorded with the float32 model, for exactly the output that was found.
    """
    return translate_many_with_attention(model, tokenizer, [text], options, max_tokens)[0]


@torch.no_grad()
def translate_many_with_attention(
    model: Transformer,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    options: DecodingOptions = DEFAULT_DECODING,
    max_tokens: int | None = None,
) -> list[Translation]:
    """:func:`translate_with_attention` for several sentences with one batched search (padded to the longest), then
    their attention recorded in one padded pass (:func:`attention_for_many`). ``seconds["decode"]`` and
    ``seconds["attention"]`` are the batch's times, shared by all, and ``seconds["batch"]`` the number of sentences
    searched together."""
    model.eval()
    searcher = search_model(model, options.precision)
    limit = source_limit(model, max_tokens)
    encoded = [encode_source(tokenizer, text, limit) for text in texts]
    device = next(model.parameters()).device
    source = pad([e.ids for e in encoded], model.config.pad_id).to(device)
    started = time.perf_counter()
    # The encoder runs once, recording its attention; a bfloat16 search encodes again in its own precision.
    memory, encoder = encode_recording(model, source)
    outputs = search(searcher, source, options, memory if searcher is model else None)
    decoded = time.perf_counter()
    every_maps = _recorded_maps(model, tokenizer, [e.ids for e in encoded], outputs, source, memory, encoder)
    recorded = time.perf_counter()
    translations = []
    for text, source, output, maps in zip(texts, encoded, outputs, every_maps, strict=True):
        translations.append(
            Translation(
                source_text=text,
                translation=tokenizer.decode(output),
                maps=maps,
                truncated=source.truncated,
                read_text=tokenizer.decode(source.ids[:-1]) if source.truncated else text,
                options=options,
                seconds={"decode": decoded - started, "attention": recorded - decoded, "batch": float(len(texts))},
                source_ids=list(source.ids),
                output_ids=list(output),
            )
        )
    return translations


@torch.no_grad()
def encoder_attention(
    model: Transformer, tokenizer: Tokenizer, text: str, pads: int = 0
) -> tuple[list[str], np.ndarray]:
    """Encoder self-attention [L, H, S, S] of a sentence, optionally followed by ``pads`` <pad> tokens as in the
    paper's figures (padding is masked as keys, so no token attends to it; the pads' own rows are shown)."""
    ids = [*encode_source(tokenizer, text, max_source_tokens(model) - pads).ids, *([PAD_ID] * pads)]
    source = torch.tensor([ids], dtype=torch.long, device=next(model.parameters()).device)
    _, weights = model.encode(source, need_weights=True)
    return tokenizer.pieces(ids), weights[0].float().cpu().numpy()


def word_groups(tokens: Sequence[str]) -> list[list[int]]:
    return Tokenizer.word_groups(tokens)


def merge_tokens(tokens: Sequence[str], groups: Sequence[Sequence[int]]) -> list[str]:
    """Join a word's pieces into one label, dropping SentencePiece's ▁ word marker."""
    merged = []
    for group in groups:
        text = join_pieces([tokens[i] for i in group])
        merged.append(text if text in SPECIAL_PIECES else text.replace("▁", " ").strip() or "▁")
    return merged


def merge_matrix(matrix: np.ndarray, query_groups: Sequence[Sequence[int]], key_groups: Sequence[Sequence[int]]):
    """Word-level attention from piece-level [..., queries, keys]: summed over a word's key pieces (so rows still sum
    to 1) and averaged over its query pieces."""
    keys = np.stack([matrix[..., list(group)].sum(axis=-1) for group in key_groups], axis=-1)
    return np.stack([keys[..., list(group), :].mean(axis=-2) for group in query_groups], axis=-2)


def merged_view(maps: AttentionMaps, by_prediction: bool = False) -> AttentionMaps:
    """The same maps at word level (pieces merged, see :func:`merge_matrix`).

    Decoder rows (the queries of decoder self- and cross-attention) are grouped by the word each position reads, or
    with ``by_prediction`` by the word it predicts: the positions that write "spielen" (reading "Kinder" and
    "spiel") become one row labelled "spielen" in ``predicted_tokens``. Decoder keys stay grouped by the word read.
    Both groupings have one group per output word plus one special token, so the matrices keep their shape."""
    source_groups = word_groups(maps.source_tokens)
    target_groups = word_groups(maps.target_tokens)
    row_groups = word_groups(maps.predicted_tokens) if by_prediction else target_groups
    if len(row_groups) != len(target_groups):  # never for a decoder input "<s> y" and its predictions "y </s>"
        row_groups = target_groups
    return AttentionMaps(
        source_tokens=merge_tokens(maps.source_tokens, source_groups),
        target_tokens=merge_tokens(maps.target_tokens, target_groups),
        predicted_tokens=merge_tokens(maps.predicted_tokens, row_groups),
        encoder=merge_matrix(maps.encoder, source_groups, source_groups),
        decoder=merge_matrix(maps.decoder, row_groups, target_groups),
        cross=merge_matrix(maps.cross, row_groups, source_groups),
    )


def ordinary_positions(tokens: Sequence[str]) -> list[int]:
    """Positions of the tokens that are not <s>, </s> or <pad>."""
    return [i for i, token in enumerate(tokens) if token not in SPECIAL_PIECES]


def without_specials(maps: AttentionMaps, by_prediction: bool = False) -> AttentionMaps:
    """Drop the rows and columns of <s>, </s> and <pad> (rows then no longer sum to 1). Decoder rows go by the token
    they read, or with ``by_prediction`` by the token they predict: then the row that reads <s> and writes the first
    word stays, and the one that writes </s> goes."""
    source_keep, target_keep = ordinary_positions(maps.source_tokens), ordinary_positions(maps.target_tokens)
    row_keep = ordinary_positions(maps.predicted_tokens) if by_prediction else target_keep
    if not source_keep or not target_keep or not row_keep:
        return maps
    return AttentionMaps(
        source_tokens=[maps.source_tokens[i] for i in source_keep],
        target_tokens=[maps.target_tokens[i] for i in target_keep],
        predicted_tokens=[maps.predicted_tokens[i] for i in row_keep],
        encoder=maps.encoder[..., source_keep, :][..., source_keep],
        decoder=maps.decoder[..., row_keep, :][..., target_keep],
        cross=maps.cross[..., row_keep, :][..., source_keep],
    )


# ------------------------------------------------------------------------------------------------ word-level helpers
PUNCTUATION = frozenset(".,;:!?-–—()\"'«»„“”")


def entropy_bits(weights: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """Entropy in bits of each attention row [..., keys] → [...] (zero weights contribute nothing), of a NumPy array
    or (on its own device) a torch tensor."""
    if isinstance(weights, torch.Tensor):
        return -torch.special.xlogy(weights, weights).sum(-1) / math.log(2)
    return -(weights * np.log2(np.where(weights > 0, weights, 1.0))).sum(-1)


def word_index(tokens: Sequence[str], word: str, occurrence: int = 0) -> int:
    """Position of ``word`` among the words that :func:`word_groups` forms from ``tokens`` (case-sensitive)."""
    words = merge_tokens(tokens, word_groups(tokens))
    found = [i for i, w in enumerate(words) if w.strip(".,;:!?\"'") == word]
    if len(found) <= occurrence:
        raise ValueError(f"word {word!r} not found in {' '.join(words)!r}")
    return found[occurrence]


def word_attention(weights: np.ndarray, tokens: Sequence[str], query_word: int, key_word: int) -> np.ndarray:
    """Weight [L, H] from one word to another in self-attention [L, H, S, S]: summed over the key word's pieces and
    averaged over the query word's pieces, as in :func:`merge_matrix`."""
    groups = word_groups(tokens)
    query, key = groups[query_word], groups[key_word]
    return np.asarray(weights)[..., query, :][..., key].sum(-1).mean(-1)


# ------------------------------------------------------------------------------------------------ paper figures
ANAPHORA_FILE = Path(__file__).resolve().parent / "resources" / "anaphora.tsv"


@dataclass(frozen=True)
class AnaphoraExample:
    sentence: str
    pronoun: str
    antecedent: str


def load_anaphora_examples(path: str | Path = ANAPHORA_FILE) -> list[AnaphoraExample]:
    """The shipped sentences with a marked pronoun → antecedent pair (tab-separated, ``#`` comments, one header)."""
    rows = [line.rstrip("\n").split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines()]
    rows = [row for row in rows if row and row[0] and not row[0].startswith("#")]
    return [AnaphoraExample(*row) for row in rows[1:]]


def word_level(weights: np.ndarray, tokens: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Self-attention [L, H, S, S] over pieces → (words, [L, H, W, W]) as in :func:`merge_matrix`."""
    groups = word_groups(tokens)
    return merge_tokens(tokens, groups), merge_matrix(np.asarray(weights), groups, groups)


def strongest_other_word(weights: np.ndarray, tokens: Sequence[str], query_word: int) -> np.ndarray:
    """For each head, the word that ``query_word`` attends to most, itself excluded: [L, H] word indices."""
    _, words = word_level(weights, tokens)
    row = words[..., query_word, :].copy()  # [L, H, W]
    row[..., query_word] = -np.inf
    return row.argmax(-1)
