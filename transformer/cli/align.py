"""Word alignment from the cross-attention, from the command line (:mod:`transformer.analysis.word_alignment`).

    python -m transformer align --checkpoint DIR --src EN_FILE --tgt DE_FILE [--method NAME] [--gold WA_FILE] [--json]
    python -m transformer align --src EN_FILE --tgt DE_FILE --gold WA_FILE --choose

The files hold one sentence a line with words separated by spaces. Each German sentence is teacher-forced on its
English one and one line of Pharaoh links (``english-german``, 0-based word positions) is printed per pair. With
``--gold`` (``SENTENCE GERMAN ENGLISH S|P`` lines, sentences from 1) the AER (with its 95% bootstrap interval over
the pairs), precision and recall follow on standard error (``--json``: one JSON object instead). ``--choose`` scores
every method on the gold pairs and stores the best beside the checkpoint (``alignment.json``): it becomes the default
method and the app shows its AER.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer.analysis import alignment_choice, intervals
from transformer.analysis import word_alignment as wa
from transformer.analysis.attribution import AttributionUnavailable
from transformer.cli import command_parser, fail, load_or_report
from transformer.formats.checkpoint import LoadedCheckpoint


def parser() -> argparse.ArgumentParser:
    parse = command_parser("align", __doc__)
    parse.add_argument("--checkpoint", default=None, help="checkpoint folder or name (default: the shipped model)")
    parse.add_argument("--src", type=Path, required=True, help="English sentences, words separated by spaces")
    parse.add_argument("--tgt", type=Path, required=True, help="their German translations, likewise")
    parse.add_argument(
        "--method",
        help="L<layer>, L<layer>H<head> or mean, then optionally -shift (rows whose input is the word) and -both "
        "(both directions agree); or a gradient reading, saliency or input_x_gradient (captum), optionally -both; "
        f"default: the stored choice, else {alignment_choice.FALLBACK_METHOD}",
    )
    parse.add_argument("--gold", type=Path, help="gold links: 'SENTENCE GERMAN ENGLISH S|P' lines")
    parse.add_argument("--choose", action="store_true", help="score every method on --gold and store the best")
    parse.add_argument("--gradients", action="store_true", help="with --choose: score the gradient readings too")
    parse.add_argument("--json", action="store_true", help="print one JSON object")
    parse.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parse.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    return parse


def main(argv: Sequence[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if args.choose and not args.gold:
        command.error("--choose needs --gold")
    loaded = load_or_report(args.checkpoint, device=args.device, threads=args.threads)
    if loaded is None:
        return 1
    config = loaded.model.config
    try:
        method = wa.Method.parse(args.method) if args.method else alignment_choice.default_method(loaded)
        method.check(config.decoder_layers, config.num_heads)
        gold = alignment_choice.Gold.read(args.src, args.tgt, args.gold) if args.gold else None
        english, german = (gold.english, gold.german) if gold else read_lines(args.src, args.tgt)
        pairs = wa.force(loaded, english, german)
        gradients = wa.GRADIENTS if args.choose and args.gradients else [method.gradient] if method.gradient else []
        if gradients:
            wa.add_gradients(loaded, pairs, gradients)
    except (OSError, ValueError, AttributionUnavailable) as error:
        return fail(error)
    if args.choose:
        return choose(loaded, pairs, gold, args.json, bool(gradients))
    found = [wa.links(pair, method) for pair in pairs]
    result = {"method": method.name, "pairs": len(pairs)}
    if gold:
        result |= wa.score(found, gold.sure, gold.possible).as_dict()
        result["interval"] = intervals.aer(wa.counts(found, gold.sure, gold.possible)).as_dict()
    if args.json:
        print(json.dumps({**result, "alignments": [wa.pharaoh(links) for links in found]}, ensure_ascii=False))
        return 0
    for links in found:
        print(wa.pharaoh(links))
    if gold:
        aer = intervals.Interval.from_dict(result["interval"])
        print(
            f"{method.name}: AER {aer.format(4)} (95% bootstrap interval over pairs), precision "
            f"{result['precision']:.4f}, recall {result['recall']:.4f} ({result['links']} links, "
            f"{result['gold_links']} gold, {len(pairs)} pairs)",
            file=sys.stderr,
        )
    return 0


def read_lines(english: Path, german: Path) -> tuple[list[str], list[str]]:
    source = english.read_text(encoding="utf-8").splitlines()
    target = german.read_text(encoding="utf-8").splitlines()
    if len(source) != len(target):
        raise ValueError(f"{english} has {len(source)} lines but {german} has {len(target)}")
    return source, target


def choose(
    loaded: LoadedCheckpoint, pairs: list[wa.ForcedPair], gold: alignment_choice.Gold, as_json: bool, gradients: bool
) -> int:
    config = loaded.model.config
    result = alignment_choice.choose(pairs, gold, wa.every_method(config.decoder_layers, config.num_heads, gradients))
    path = alignment_choice.save_choice(loaded, result)
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    print(f"{'method':<18} {'AER':>6} {'prec.':>6} {'recall':>6}")
    for name, value in list(result["methods"].items())[:10]:
        print(f"{name:<18} {value['aer']:6.3f} {value['precision']:6.3f} {value['recall']:6.3f}")
    for check in result["held_out"]:
        aer = intervals.Interval.from_dict(check["interval"])
        print(f"chosen on the other half: {check['method']}, AER {aer.format()} on {check['pairs']} held-out pairs")
    held_out, usual = (intervals.Interval.from_dict(result[key]) for key in ("held_out_interval", "held_out_vs_usual"))
    print(
        f"held out, every pair aligned by a reading chosen without it: AER {held_out.format()} "
        f"({usual.format()} against the usual reading, {alignment_choice.USUAL_METHOD}, on the same pairs; "
        "95% bootstrap intervals)"
    )
    chosen_on = f"AER {result['aer']:.3f} on the {result['pairs']} pairs it was chosen on"
    print(f"stored {result['method']} ({chosen_on}) in {path}")
    return 0
