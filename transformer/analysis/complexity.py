"""§4, "Why self-attention": the paper's Table 1 as data, the path a signal takes between two positions through
each kind of layer, and a measured race between one self-attention layer and one recurrent layer.

Table 1 compares layer types by the work one layer does on n positions of width d, the operations that must run
one after another, and the longest path a signal travels between two positions (in layers, or in steps of a
recurrence). :func:`path_length` counts that path for two given positions and :func:`route` lists the positions it
passes through, so a page can draw it over a sentence. :func:`time_layers` times the project's own
:class:`~transformer.paper.model.MultiHeadAttention` against ``torch.nn.LSTM`` of the same width: an LSTM is the
recurrent layer of the paper's recurrent baselines (§1, §2), and like self-attention it holds four d × d weight blocks
per input (the input, forget and output gates and the cell), so the race is between n sequential steps and one
parallel pass rather than between layers of very different sizes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import torch
from torch import nn

from transformer.features.toy import torch_threads
from transformer.paper.model import MultiHeadAttention


@dataclass(frozen=True)
class LayerType:
    """One row of Table 1: the layer type's key and its three asymptotic costs, written as the paper writes them."""

    key: str
    complexity_per_layer: str
    sequential_operations: str
    maximum_path_length: str


# Table 1 of the paper, in its order; n: sequence length, d: representation width, k: convolution kernel width,
# r: neighbourhood size of restricted self-attention. The convolutional row's O(log_k(n)) is for dilated
# convolutions; contiguous kernels need O(n/k) layers (§4).
TABLE_1 = (
    LayerType("self_attention", "O(n²·d)", "O(1)", "O(1)"),
    LayerType("recurrent", "O(n·d²)", "O(n)", "O(n)"),
    LayerType("convolutional", "O(k·n·d²)", "O(1)", "O(log_k(n))"),
    LayerType("restricted", "O(r·n·d)", "O(1)", "O(n/r)"),
)
# The layer kinds a path can be counted through: Table 1's rows, with the convolution in both of §4's forms.
PATH_KINDS = ("recurrent", "convolutional", "dilated", "restricted", "self_attention")


def _check(kind: str, i: int, j: int, k: int, r: int) -> None:
    if kind not in PATH_KINDS:
        raise ValueError(f"unknown layer kind {kind!r}; choose one of {', '.join(PATH_KINDS)}")
    if i < 0 or j < 0:
        raise ValueError(f"positions must be ≥ 0, not {i} and {j}")
    if k < 2:
        raise ValueError(f"a convolution's kernel width k must be ≥ 2 to move a signal at all, not {k}")
    if r < 2:
        raise ValueError(f"a restricted neighbourhood r must be ≥ 2 to reach another position, not {r}")


def _base_k_digits(distance: int, k: int) -> list[int]:
    """``distance`` in base k, lowest digit first ([] for 0)."""
    digits = []
    while distance:
        distance, digit = divmod(distance, k)
        digits.append(digit)
    return digits


def path_length(kind: str, i: int, j: int, k: int = 3, r: int = 4) -> int:
    """The number of layers (recurrent: steps) a signal needs to travel between positions ``i`` and ``j``
    (0 when i = j; the same either way).

    - ``recurrent``: the hidden state moves one position per step, so |i − j| steps.
    - ``convolutional`` (contiguous kernels of width k): a layer's output at p reads positions p − k + 1 … p, so
      after L layers a position reads a window of 1 + L·(k − 1) positions (each layer widens the receptive field
      by k − 1); i and j are connected once that window holds both: ⌈|i − j| / (k − 1)⌉ layers (§4's O(n/k)).
      This is the count for one-sided (causal) kernels; a centred kernel reaches (k − 1)/2 to either side and
      needs twice as many layers.
    - ``dilated``: layer ℓ = 0, 1, … reads positions k^ℓ apart (dilation k^ℓ, kernel width k, as in ByteNet), so
      L layers read a window of k^L positions and each offset below k^L is one of its L base-k digits:
      ⌈log_k(|i − j| + 1)⌉ layers (Table 1's O(log_k(n))).
    - ``restricted``: self-attention over a neighbourhood of r positions centred on the query reaches r // 2
      positions to either side: ⌈|i − j| / (r // 2)⌉ layers (Table 1's O(n/r)).
    - ``self_attention``: every position reads every other one in one layer: 1.
    """
    _check(kind, i, j, k, r)
    distance = abs(i - j)
    if distance == 0:
        return 0
    if kind == "recurrent":
        return distance
    if kind == "convolutional":
        return -(-distance // (k - 1))
    if kind == "dilated":
        return len(_base_k_digits(distance, k))  # the smallest L with k^L > distance, in whole numbers
    if kind == "restricted":
        return -(-distance // (r // 2))
    return 1


def route(kind: str, i: int, j: int, k: int = 3, r: int = 4) -> list[int]:
    """The positions a signal from ``i`` is at after each layer (or step) on its way to ``j``: ``[i, …, j]``, one
    entry more than :func:`path_length`. Each layer moves it as far as that layer reaches (the last one the rest of
    the way); a dilated layer moves it by its own digit of the distance, possibly 0."""
    length = path_length(kind, i, j, k, r)
    direction = 1 if j >= i else -1
    distance = abs(i - j)
    if kind == "dilated":
        hops = [digit * k**layer for layer, digit in enumerate(_base_k_digits(distance, k))]
    else:
        reach = {"recurrent": 1, "convolutional": k - 1, "restricted": r // 2}.get(kind, distance)
        hops = [min(reach, distance - layer * reach) for layer in range(length)]
    positions = [i]
    for hop in hops:
        positions.append(positions[-1] + direction * hop)
    return positions


def maximum_path_lengths(n: int, k: int = 3, r: int = 4) -> dict[str, int]:
    """Each kind's path between the first and the last of n positions: the longest one, Table 1's last column."""
    return {kind: path_length(kind, 0, n - 1, k, r) for kind in PATH_KINDS}


# ------------------------------------------------------------------------------------------------ measured
WIDTHS = (8, 16, 32, 64, 128, 256, 512)
REPEATS = 5  # timed runs per layer and length, after one warm-up
# Measurements take turns: two at once would slow each other down, and, since torch's thread count is the process's,
# could leave the process at the other one's setting.
_ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class LayerTimes:
    """Median wall time of one forward pass of each layer, per sequence length n (milliseconds)."""

    d_model: int
    num_heads: int
    threads: int
    repeats: int
    lengths: tuple[int, ...]
    self_attention_ms: tuple[float, ...]
    recurrent_ms: tuple[float, ...]
    seconds: float  # the whole measurement, warm-up included

    def rows(self) -> list[dict]:
        """One row per n: {"n", "self_attention_ms", "recurrent_ms"}."""
        return [
            {"n": n, "self_attention_ms": attention, "recurrent_ms": recurrent}
            for n, attention, recurrent in zip(self.lengths, self.self_attention_ms, self.recurrent_ms, strict=True)
        ]


def _median_ms(run, x: torch.Tensor, repeats: int) -> float:
    run(x)  # warm-up: the first call allocates and picks kernels
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(x)
        times.append(time.perf_counter() - start)
    times.sort()
    return 1000 * times[len(times) // 2]


def time_layers(
    widths: tuple[int, ...] = WIDTHS,
    d_model: int = 256,
    threads: int | None = None,
    num_heads: int = 8,
    repeats: int = REPEATS,
    seed: int = 0,
) -> LayerTimes:
    """Time one self-attention layer (:class:`~transformer.paper.model.MultiHeadAttention`, ``num_heads`` heads) and one
    single-layer ``torch.nn.LSTM`` with hidden width ``d_model`` on a (1, n, d_model) input for each n in
    ``widths``: the median of ``repeats`` runs after one warm-up, in inference mode.

    ``threads``: torch's intra-op threads during the measurement (the process's setting, given back after, so other
    work in the process runs with them meanwhile); None keeps the process's setting. On a machine whose cores are
    busy with other processes, one thread gives steadier times: threads that wait for each other at every
    operation's end, while another process holds the cores, made each call of either layer take tens of
    milliseconds on two shared cores. Both layers get random weights: the time does not depend on them.
    """
    if repeats < 1 or not widths or min(widths) < 1:
        raise ValueError("need at least one repeat and sequence lengths ≥ 1")
    started = time.perf_counter()
    with _ONE_AT_A_TIME, torch_threads(threads):
        generator = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            attention = MultiHeadAttention(d_model, num_heads).eval()
            recurrent = nn.LSTM(d_model, d_model, batch_first=True).eval()
        attention_ms, recurrent_ms = [], []
        with torch.inference_mode():
            for n in widths:
                x = torch.randn(1, n, d_model, generator=generator)  # (B=1, n, d)
                attention_ms.append(_median_ms(lambda x: attention(x), x, repeats))
                recurrent_ms.append(_median_ms(lambda x: recurrent(x), x, repeats))
        used = torch.get_num_threads()
    return LayerTimes(
        d_model=d_model,
        num_heads=num_heads,
        threads=used,
        repeats=repeats,
        lengths=tuple(widths),
        self_attention_ms=tuple(attention_ms),
        recurrent_ms=tuple(recurrent_ms),
        seconds=time.perf_counter() - started,
    )
