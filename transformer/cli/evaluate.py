"""sacreBLEU BLEU and chrF of a checkpoint on a test set.

    python -m transformer evaluate --checkpoint DIR --src FILE --ref FILE [--beam 4] [--limit N] [--json]

Prints both scores with their sacreBLEU signatures and the model's health (:mod:`transformer.analysis.health`), or with
``--json`` one JSON object (keys ``bleu``, ``chrf``, ``sentences``, the signatures, the decoding settings, the time
taken, and the health measures: ``encoder_position_cosine`` and ``<kind>_entropy_normalised`` as lists per layer,
``cross_alignment_best`` and its head); ``--no-health`` skips the health measures.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import sacrebleu

from transformer.analysis.health import format_health, model_health
from transformer.cli import command_parser, fail
from transformer.cli.translate import add_decoding_arguments, run_decoding
from transformer.formats.checkpoint import META_FILE, LoadedCheckpoint, folder_lock, read_json, write_json
from transformer.paper.data import read_lines, read_parallel
from transformer.search.decode import DecodingOptions, translate


def record_scores(checkpoint: Path, result: dict) -> None:
    """Keep the scores in the checkpoint's meta.json under "scores", keyed by test set, limit and decoding."""
    meta_path = checkpoint / META_FILE
    stem = Path(result["src"]).name.removesuffix(".gz").rsplit(".", 1)[0]
    key = f"{stem}" + ("" if result["limit"] is None else f"[:{result['limit']}]") + f" beam{result['beam']}"
    if result.get("precision", "float32") != "float32":
        key += f" {result['precision']}"
    scores = {name: result[name] for name in ("bleu", "chrf", "sentences", "alpha", "bleu_signature", "chrf_signature")}
    with folder_lock(checkpoint):  # another evaluation of the same checkpoint may be recording at the same moment
        meta = read_json(meta_path) if meta_path.is_file() else {}
        meta.setdefault("scores", {})[key] = scores
        write_json(meta_path, meta)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("evaluate", __doc__)
    add_decoding_arguments(parser)
    parser.add_argument("--src", type=Path, required=True, help="source sentences, one per line (plain or .gz)")
    parser.add_argument("--ref", type=Path, required=True, help="reference translations, line-aligned with --src")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--output", type=Path, default=None, help="also write the translations to this file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--record", action="store_true", help="also store the scores in the checkpoint's meta.json (key 'scores')"
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="resamples for sacreBLEU's 95%% bootstrap intervals of BLEU and chrF (0: none)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="another system's translations of --src (one per line): its BLEU, the difference with its paired 95%% "
        "interval and sacreBLEU's paired bootstrap p-value",
    )
    parser.add_argument(
        "--no-health",
        dest="health",
        action="store_false",
        help="skip the model-health measures (encoder position cosines, attention entropies, cross alignment)",
    )
    return run_decoding(parser, argv, _evaluate)


def _evaluate(args: argparse.Namespace, options: DecodingOptions, loaded: LoadedCheckpoint) -> int:
    try:
        pairs = read_parallel(args.src, args.ref)
    except (FileNotFoundError, ValueError) as error:
        return fail(error)
    if args.limit is not None:
        pairs = pairs[: args.limit]
    started = time.time()
    hypotheses = translate(loaded.model, loaded.tokenizer, [s for s, _ in pairs], options, args.batch_size)
    seconds = time.time() - started
    references = [[t for _, t in pairs]]
    bleu_metric, chrf_metric = sacrebleu.BLEU(), sacrebleu.CHRF()
    resamples = args.bootstrap if args.bootstrap > 1 and len(pairs) > 1 else 1
    bleu = bleu_metric.corpus_score(hypotheses, references, n_bootstrap=resamples)
    chrf = chrf_metric.corpus_score(hypotheses, references, n_bootstrap=resamples)
    if args.output:
        args.output.write_text("".join(f"{h}\n" for h in hypotheses), encoding="utf-8")
    result = {
        "checkpoint": str(loaded.path),
        "language_pair": f"{loaded.config.source_language}-{loaded.config.target_language}",
        "src": str(args.src),
        "ref": str(args.ref),
        "sentences": len(pairs),
        "limit": args.limit,
        "beam": args.beam,
        "alpha": args.alpha,
        "precision": args.precision,
        "bleu": round(bleu.score, 2),
        "chrf": round(chrf.score, 2),
        **(
            {"bleu_ci": round(float(bleu._ci), 2), "chrf_ci": round(float(chrf._ci), 2), "bootstrap": resamples}
            if resamples > 1  # sacreBLEU's half-width of the 95% percentile interval of its resamples
            else {}
        ),
        "bleu_signature": str(bleu_metric.get_signature()),
        "chrf_signature": str(chrf_metric.get_signature()),
        "seconds": round(seconds, 1),
    }
    if args.compare:
        try:
            other = read_lines(args.compare)
        except OSError as error:
            return fail(error)
        if len(other) < len(hypotheses):
            return fail(f"{args.compare} has {len(other)} lines for {len(hypotheses)} sentences")
        result["compare"] = compare(
            hypotheses, other[: len(hypotheses)], references[0], max(resamples, 1000), args.compare
        )
    if args.health:
        result.update(model_health(loaded.model, loaded.tokenizer))
    if args.record:
        record_scores(loaded.path, result)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        interval = {
            name: f" ± {result[f'{name}_ci']:.2f} (95%)" if f"{name}_ci" in result else "" for name in ("bleu", "chrf")
        }
        print(f"BLEU {result['bleu']:.2f}{interval['bleu']}  ({result['bleu_signature']})")
        print(f"chrF {result['chrf']:.2f}{interval['chrf']}  ({result['chrf_signature']})")
        if "compare" in result:
            found = result["compare"]
            print(
                f"against {found['file']}: BLEU {found['bleu']:.2f}; this model − it: {found['difference']:+.2f} "
                f"[{found['low']:+.2f}, {found['high']:+.2f}] (paired 95%), p = {found['p']}"
            )
        print(f"{len(pairs)} sentences, beam {args.beam}, {args.precision} search, {seconds:.1f}s")
        if args.health:
            print(f"model health on {result['health_sample']}:\n{format_health(result)}")
    return 0


def compare(hypotheses: list[str], other: list[str], references: list[str], resamples: int, name: Path) -> dict:
    """This model's translations against another system's on the same sentences: the other's BLEU, the difference
    with its paired bootstrap interval, and sacreBLEU's paired bootstrap test (Koehn 2004)."""
    from transformer.analysis import intervals

    difference = intervals.paired_bleu_difference(hypotheses, other, references, resamples=resamples)
    tested = intervals.paired_bleu(other, {"this": hypotheses}, references, resamples)
    return {
        "file": str(name),
        "bleu": tested["baseline"]["bleu"],
        "difference": round(difference.value, 2),
        "low": round(difference.low, 2),
        "high": round(difference.high, 2),
        "p": tested["this"]["p"],
    }
