"""This project's search against CTranslate2's on the same weights: time, and whether the outputs are the same.

The checkpoint is converted with ``python -m transformer export ctranslate2`` (float32, exact) into a temporary
folder, then both engines translate the first ``--sentences`` sentences of tatoeba_new (unseen everyday sentences)
with the same number of threads: greedy and beam 4 (α = 0.6, output limit = source + 50 tokens), one sentence at a
time and in batches of 32 sentences of similar length. Each engine runs in its own worker process (once
CTranslate2 has translated in a process, its idle worker threads keep the cores busy and PyTorch there ran 2.5×
slower), and the two take turns, never at the same time, over ``--rounds`` rounds (the order swapped each round, so
a machine that slows down or speeds up part-way hurts neither engine more); the figure of each engine is its median
round, after a warm-up.

CTranslate2's beam search returns its ``beam`` best finished hypotheses with their log-probabilities (length
penalty 0); they are re-ranked with this project's length penalty (((5 + |Y|) / 6)^α, |Y| counting </s>), since
CTranslate2's own penalty is |Y|^α. Outputs are compared token for token.

The project's search runs as the app runs it (:func:`transformer.search.decode.translate_ids`, float32). The last line
is the figure the speed target is set on: ``search time ratio (project / CTranslate2), beam 4, batch 1: X.XX``.

    pip install ctranslate2
    python benchmarks/search_speed.py [--checkpoint DIR] [--sentences 200] [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# CTranslate2 before torch: each brings its own copy of GNU OpenMP, and imported after torch, CTranslate2's search
# ran 4× slower here (and made PyTorch's slower too once it had run).
try:
    import ctranslate2
except ImportError:
    ctranslate2 = None

import torch

from transformer.formats.checkpoint import load_checkpoint
from transformer.formats.ctranslate2 import export_ctranslate2
from transformer.paper.data import DATA_ROOT, read_lines
from transformer.search.decode import DecodingOptions, encode_source, length_penalty, source_limit, translate_ids

SENTENCES = DATA_ROOT / "test" / "tatoeba_new.en"


def ctranslate2_search(translator, loaded, options: DecodingOptions, batch_size: int) -> Callable:
    """A function sentences → output ids searching with CTranslate2 as :func:`translate_ids` searches (same
    source cut, same batches by length, same output limit, same ranking of finished hypotheses)."""
    tokenizer, model = loaded.tokenizer, loaded.model
    limit = source_limit(model)

    def run(sentences: list[str]) -> list[list[int]]:
        encoded = [encode_source(tokenizer, text, limit).ids for text in sentences]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        outputs: list[list[int]] = [[] for _ in encoded]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            sources = [tokenizer.pieces(encoded[i]) for i in chunk]
            longest = max(len(source) for source in sources)
            results = translator.translate_batch(
                sources,
                beam_size=options.beam_size,
                num_hypotheses=options.beam_size,
                length_penalty=0.0,
                return_scores=True,
                max_decoding_length=min(longest + options.max_extra_tokens, model.config.max_positions - 1),
            )
            for index, result in zip(chunk, results, strict=True):
                ranked = max(
                    zip(result.hypotheses, result.scores, strict=True),
                    key=lambda item: item[1] / length_penalty(len(item[0]) + 1, options.alpha),
                )
                outputs[index] = [tokenizer.processor.piece_to_id(piece) for piece in ranked[0]]
        return outputs

    return run


def project_search(loaded, options: DecodingOptions, batch_size: int) -> Callable:
    def run(sentences: list[str]) -> list[list[int]]:
        return translate_ids(loaded.model, loaded.tokenizer, sentences, options, batch_size=batch_size)[1]

    return run


def worker(engine: str, checkpoint: str | None, folder: str, threads: int, connection) -> None:
    """One engine in its own process: runs each (beam, batch size, sentences) it is sent, answers (seconds,
    outputs); None ends it."""
    torch.set_num_threads(threads)
    loaded = load_checkpoint(checkpoint)
    translator = None
    if engine == "ctranslate2":
        translator = ctranslate2.Translator(folder, device="cpu", intra_threads=threads, inter_threads=1)
    while (task := connection.recv()) is not None:
        beam, batch_size, sentences = task
        options = DecodingOptions(beam_size=beam)
        if translator is None:
            run = project_search(loaded, options, batch_size)
        else:
            run = ctranslate2_search(translator, loaded, options, batch_size)
        run(sentences[: min(len(sentences), batch_size, 8)])  # warm-up: the first calls allocate
        start = time.perf_counter()
        outputs = run(sentences)
        connection.send((time.perf_counter() - start, outputs))


def compare(sentences: list[str], engines: dict, task: tuple, rounds: int) -> tuple[dict[str, float], dict]:
    """Median seconds per engine over ``rounds`` alternating rounds of ``task``, and each engine's outputs."""
    times: dict[str, list[float]] = {name: [] for name in engines}
    outputs: dict[str, list[list[int]]] = {}
    names = list(engines)
    for round_index in range(rounds):
        for name in names if round_index % 2 == 0 else reversed(names):
            engines[name].send((*task, sentences))
            seconds, outputs[name] = engines[name].recv()
            times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}, outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    if ctranslate2 is None:
        print("CTranslate2 is not installed: pip install ctranslate2", file=sys.stderr)
        return 1
    torch.set_num_threads(arguments.threads)
    loaded = load_checkpoint(arguments.checkpoint)
    sentences = read_lines(SENTENCES)[: arguments.sentences]
    print(
        f"{loaded.path.name}: {len(sentences)} tatoeba_new sentences, {arguments.threads} threads, "
        f"{arguments.rounds} alternating rounds (median), CTranslate2 {ctranslate2.__version__} float32, "
        f"torch {torch.__version__}\n"
    )
    print("| search | batch | project | CTranslate2 | ratio (time) | identical outputs |")
    print("|---|---|---|---|---|---|")
    ratio = float("nan")
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        converted = str(export_ctranslate2(loaded, Path(folder) / "ct2"))
        engines, processes = {}, []
        for engine in ("project", "ctranslate2"):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=worker, args=(engine, arguments.checkpoint, converted, arguments.threads, theirs), daemon=True
            )
            process.start()
            engines[engine] = ours
            processes.append(process)
        for beam in (1, 4):
            for batch_size in (1, 32):
                times, outputs = compare(sentences, engines, (beam, batch_size), arguments.rounds)
                same = sum(a == b for a, b in zip(outputs["project"], outputs["ctranslate2"], strict=True))
                ratio_here = times["project"] / times["ctranslate2"]
                if batch_size == 1:
                    project = f"{1000 * times['project'] / len(sentences):.1f} ms/sentence"
                    other = f"{1000 * times['ctranslate2'] / len(sentences):.1f} ms/sentence"
                else:
                    project = f"{len(sentences) / times['project']:.1f} sentences/s"
                    other = f"{len(sentences) / times['ctranslate2']:.1f} sentences/s"
                search = "greedy" if beam == 1 else f"beam {beam}"
                print(
                    f"| {search} | {batch_size} | {project} | {other} | {ratio_here:.2f} | "
                    f"{same}/{len(sentences)} ({100 * same / len(sentences):.1f}%) |",
                    flush=True,
                )
                if beam == 4 and batch_size == 1:
                    ratio = ratio_here
        for connection in engines.values():
            connection.send(None)
        for process in processes:
            process.join(timeout=30)
    print(f"\nsearch time ratio (project / CTranslate2), beam 4, batch 1: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
