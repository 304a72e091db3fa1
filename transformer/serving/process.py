"""Translations searched in a separate Python process, so that a server's pages and its searches run side by side.

In one process they take turns: Python runs one thread at a time, and a search is thousands of short PyTorch calls,
each of which must take the interpreter back from the thread that renders a page or writes to a browser. With a
class at once, one core then sat idle while the other alternated between the two. :class:`TranslationProcess` starts
``python -m transformer.serving.process CHECKPOINT`` with its own copy of the model and sends it batches of
sentences; :class:`transformer.serving.translator.Translator` uses one when asked to (the app does) and searches in
its own process until the child is ready, or whenever it has failed.

The two talk over the child's standard input and output in frames: a 1-byte kind, an 8-byte length and the bytes.
A request is JSON (the sentences, the decoding options, the token limit); an answer is JSON followed by the
attention arrays as raw float32 (no pickle, so nothing the child sends can run code in the server). The child
checks that it loaded the same weights as the server (:func:`parameter_checksum`) and ends when its input closes, so it
never outlives the server.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from transformer.analysis.attention import AttentionMaps, Translation, translate_many_with_attention
from transformer.paper.config import ATTENTION_KINDS
from transformer.paper.model import Transformer
from transformer.search.decode import DEFAULT_DECODING, DecodingOptions

READY, REQUEST, ANSWER, FAILURE = b"R", b"Q", b"A", b"F"
HEADER = struct.Struct("<cQ")
MAX_FRAME = 1 << 31  # a corrupt length must not make the reader allocate without end


class TranslationProcessError(RuntimeError):
    """The child process could not start, answered nonsense, or ended: translate in this process instead."""


def parameter_checksum(model: Transformer) -> float:
    """A number that differs between models with different weights (the sum of every parameter, in float64)."""
    with torch.no_grad():
        return float(sum(parameter.double().sum() for parameter in model.parameters()))


def stop(process: subprocess.Popen, grace: float = 15.0, terminate: bool = True) -> None:
    """End a child process: ask it to stop (SIGTERM; with ``terminate=False`` only wait, when it has been told
    otherwise), wait up to ``grace`` seconds, then kill it."""
    if terminate:
        process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def write_frame(stream: IO[bytes], kind: bytes, payload: bytes) -> None:
    stream.write(HEADER.pack(kind, len(payload)) + payload)
    stream.flush()


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        data += chunk
    return bytes(data)


def read_frame(stream: IO[bytes]) -> tuple[bytes, bytes]:
    kind, size = HEADER.unpack(read_exactly(stream, HEADER.size))
    if kind not in (READY, REQUEST, ANSWER, FAILURE) or size > MAX_FRAME:
        raise TranslationProcessError(f"not a frame of this protocol (kind {kind!r}, {size:,} bytes)")
    return kind, read_exactly(stream, size)


def request_payloads(stream: IO[bytes], answers: IO[bytes]) -> Iterator[bytes]:
    """The payloads of the request frames on ``stream`` until it closes; a frame of another kind is answered on
    ``answers`` with a failure and skipped."""
    while True:
        try:
            kind, payload = read_frame(stream)
        except EOFError:
            return
        if kind != REQUEST:
            write_frame(answers, FAILURE, f"expected a request, got {kind!r}".encode())
            continue
        yield payload


def encode_translations(translations: Sequence[Translation]) -> bytes:
    """JSON for everything but the attention arrays, which follow as raw float32 in the order the JSON lists."""
    records, blobs, offset = [], [], 0
    for translation in translations:
        maps = translation.maps
        shapes = {}
        for name in ATTENTION_KINDS:  # the fields of AttentionMaps holding arrays
            array = np.ascontiguousarray(getattr(maps, name), dtype=np.float32)
            shapes[name] = list(array.shape)
            blobs.append(array.tobytes())
            offset += array.nbytes
        records.append(
            {
                "source_text": translation.source_text,
                "translation": translation.translation,
                "truncated": translation.truncated,
                "read_text": translation.read_text,
                "seconds": translation.seconds,
                "source_ids": translation.source_ids,
                "output_ids": translation.output_ids,
                "source_tokens": maps.source_tokens,
                "target_tokens": maps.target_tokens,
                "predicted_tokens": maps.predicted_tokens,
                "shapes": shapes,
            }
        )
    header = json.dumps({"translations": records, "array_bytes": offset}).encode("ascii")
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def decode_translations(payload: bytes, options: DecodingOptions) -> list[Translation]:
    try:
        (size,) = struct.unpack_from("<Q", payload)
        header = json.loads(payload[8 : 8 + size].decode("ascii"))
        arrays = memoryview(payload)[8 + size :]
        if len(arrays) != header["array_bytes"]:
            raise ValueError(f"{len(arrays):,} bytes of arrays, the header says {header['array_bytes']:,}")
        translations, offset = [], 0
        for record in header["translations"]:
            values = {}
            for name in ATTENTION_KINDS:
                shape = [int(n) for n in record["shapes"][name]]
                count = int(np.prod(shape))
                values[name] = np.frombuffer(arrays, np.float32, count, offset).reshape(shape).copy()
                offset += 4 * count
            maps = AttentionMaps(record["source_tokens"], record["target_tokens"], record["predicted_tokens"], **values)
            translations.append(
                Translation(
                    source_text=record["source_text"],
                    translation=record["translation"],
                    maps=maps,
                    truncated=bool(record["truncated"]),
                    read_text=record["read_text"],
                    options=options,
                    seconds={str(k): float(v) for k, v in record["seconds"].items()},
                    source_ids=[int(i) for i in record["source_ids"]],
                    output_ids=[int(i) for i in record["output_ids"]],
                )
            )
        return translations
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as error:
        raise TranslationProcessError(f"the translation process answered something unreadable: {error}") from error


class TranslationProcess:
    """A child process with its own copy of a checkpoint's model; :meth:`translate_many` is
    :func:`~transformer.analysis.attention.translate_many_with_attention` run there. One caller at a time.

    Starting it waits (up to ``start_timeout`` seconds) until the child has loaded the checkpoint and found the same
    weights as ``model`` (``path`` must be the folder ``model`` came from); any failure then, or later, raises
    :class:`TranslationProcessError` and leaves the process ended. ``threads``: PyTorch's threads in the child
    (default: every core)."""

    def __init__(
        self,
        path: str | Path,
        model: Transformer,
        threads: int | None = None,
        start_timeout: float = 120.0,
        answer_timeout: float = 600.0,
    ) -> None:
        self.answer_timeout = answer_timeout
        command = [sys.executable, "-m", "transformer.serving.process", str(path)]
        if threads is not None:
            command += ["--threads", str(threads)]
        repository = str(Path(__file__).resolve().parent.parent)
        paths = [repository, *filter(None, [os.environ.get("PYTHONPATH")])]  # this package, wherever it is run from
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment)
        self.pid = self._process.pid
        self._lock = threading.Lock()
        try:
            kind, payload = self._answer(start_timeout)
            if kind == FAILURE:
                raise TranslationProcessError(f"the translation process could not start: {payload.decode()}")
            if kind != READY:
                raise TranslationProcessError(f"the translation process sent {kind!r} instead of being ready")
            theirs, ours = json.loads(payload)["checksum"], parameter_checksum(model)
            if theirs != ours:
                raise TranslationProcessError(
                    f"the translation process loaded other weights from {path} "
                    f"(parameter checksum {theirs} against {ours})"
                )
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def _answer(self, timeout: float) -> tuple[bytes, bytes]:
        stdout = self._process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        if not ready:
            raise TranslationProcessError(f"the translation process did not answer within {timeout:.0f} s")
        try:
            return read_frame(stdout)
        except EOFError as error:
            code = self._process.wait(timeout=5)
            raise TranslationProcessError(f"the translation process ended (exit status {code})") from error

    def translate_many(
        self,
        texts: Sequence[str],
        options: DecodingOptions = DEFAULT_DECODING,
        max_tokens: int | None = None,
        threads: int | None = None,
    ) -> list[Translation]:
        """Raises :class:`TranslationProcessError` if the process failed (it is then ended), and
        ``RuntimeError`` with the child's message if the search itself failed there (the process goes on).
        ``threads``: PyTorch's threads for this batch and the next (default: as before)."""
        request = json.dumps(
            {"texts": list(texts), "options": asdict(options), "max_tokens": max_tokens, "threads": threads}
        )
        with self._lock:
            if not self.alive:
                raise TranslationProcessError("the translation process has ended")
            try:
                stdin = self._process.stdin
                assert stdin is not None
                write_frame(stdin, REQUEST, request.encode("ascii"))
                kind, payload = self._answer(self.answer_timeout)
            except BaseException:  # a failed pipe, or interrupted between a request and its answer: out of step
                self.close()
                raise
        if kind == FAILURE:
            raise RuntimeError(f"translation failed: {payload.decode()}")
        if kind != ANSWER:
            self.close()
            raise TranslationProcessError(f"the translation process sent {kind!r} instead of an answer")
        translations = decode_translations(payload, options)
        if len(translations) != len(texts):
            self.close()
            raise TranslationProcessError(f"{len(translations)} translations for {len(texts)} sentences")
        return translations

    def close(self) -> None:
        """End the child (it also ends by itself when this process ends)."""
        process = self._process
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        stop(process, grace=5, terminate=False)  # with its input closed, it ends by itself

    def __enter__(self) -> TranslationProcess:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def serve(path: str, threads: int | None, requests: IO[bytes], answers: IO[bytes]) -> int:
    """The child's side: load the checkpoint, say it is ready, answer requests until the input closes."""
    if threads is not None:
        torch.set_num_threads(max(1, threads))
    from transformer.formats.checkpoint import load_checkpoint

    try:
        loaded = load_checkpoint(path)
    except Exception as error:  # the server says why and translates in its own process
        write_frame(answers, FAILURE, f"{type(error).__name__}: {error}".encode())
        return 1
    # One short search first, so that the first visitor does not wait for the search's weights to be packed and
    # its first products to be set up (about 0.1 s on 2 cores).
    translate_many_with_attention(loaded.model, loaded.tokenizer, ["Hello."], DEFAULT_DECODING)
    write_frame(answers, READY, json.dumps({"checksum": parameter_checksum(loaded.model), "pid": os.getpid()}).encode())
    for payload in request_payloads(requests, answers):
        try:
            request = json.loads(payload)
            options = DecodingOptions(**request["options"])
            threads = request.get("threads")
            if threads and int(threads) != torch.get_num_threads():
                torch.set_num_threads(max(1, int(threads)))
            started = time.perf_counter()
            translations = translate_many_with_attention(
                loaded.model, loaded.tokenizer, request["texts"], options, request["max_tokens"]
            )
            for translation in translations:
                translation.seconds["process"] = time.perf_counter() - started
            answer = encode_translations(translations)
        except Exception as error:  # this batch fails; the process serves the next one
            write_frame(answers, FAILURE, f"{type(error).__name__}: {error}".encode("utf-8", "backslashreplace"))
            continue
        write_frame(answers, ANSWER, answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="checkpoint folder")
    parser.add_argument("--threads", type=int, default=None, help="PyTorch threads (default: every core)")
    args = parser.parse_args(argv)
    # The frames own standard output; anything else printed goes to standard error.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return serve(args.checkpoint, args.threads, sys.stdin.buffer, answers)


if __name__ == "__main__":
    sys.exit(main())
