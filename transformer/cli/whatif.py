"""What-if questions about one translation, from the command line.

    python -m transformer whatif ablate  "SENTENCE" --off cross:2:4,encoder:5:*   # heads switched off
    python -m transformer whatif beam    "SENTENCE" [--beam 4]                     # n-best list and search tree
    python -m transformer whatif force   "SENTENCE" --given "GERMAN"               # score a given translation
    python -m transformer whatif rollout "SENTENCE" [--flow]                       # attention rollout and flow
    python -m transformer whatif compare "SENTENCE" --other CHECKPOINT | --other-sentence "…"

Heads are ``kind:layer:head`` with 1-based layer and head (``*`` for all). Every command takes the decoding options
of ``python -m transformer translate`` and ``--json`` for one JSON object on standard output. Head importance over a
sample is ``python -m transformer importance``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import numpy as np

from transformer.analysis import ablation, rollout
from transformer.analysis.attention import KINDS, translate_with_attention
from transformer.analysis.beam import explore_beam, token_probabilities
from transformer.analysis.compare import difference, same_tokens
from transformer.analysis.forced import force
from transformer.cli import command_parser, fail
from transformer.cli.translate import add_decoding_arguments, run_decoding
from transformer.formats.checkpoint import CheckpointError, load_checkpoint


def parser() -> argparse.ArgumentParser:
    main = command_parser("whatif", __doc__)
    commands = main.add_subparsers(dest="command", required=True)
    helps = {
        "ablate": "translate with heads switched off, beside the intact model",
        "beam": "the beam search's n-best list, tree and per-token probabilities",
        "force": "score a given German translation teacher-forced, beside the model's own",
        "rollout": "encoder attention rollout (and flow), and the rollout through cross-attention to the source",
        "compare": "one head's attention under two checkpoints or for two sentences, and their difference",
    }
    for name, text in helps.items():
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("sentence", help="the English sentence")
        add_decoding_arguments(command)
        command.add_argument("--json", action="store_true", help="print one JSON object")
        if name == "ablate":
            command.add_argument("--off", required=True, help="heads to switch off, e.g. cross:2:4,encoder:5:*")
        elif name == "beam":
            command.add_argument("--top", type=int, default=5, help="alternatives listed per output position")
        elif name == "force":
            command.add_argument("--given", required=True, help="the German translation to score")
        elif name == "rollout":
            command.add_argument("--flow", action="store_true", help="also attention flow (max-flow; short inputs)")
        elif name == "compare":
            other = command.add_mutually_exclusive_group(required=True)
            other.add_argument("--other", help="a second checkpoint (folder or name)")
            other.add_argument("--other-sentence", help="a second sentence, on the same checkpoint")
            command.add_argument("--kind", choices=KINDS, default="encoder")
            command.add_argument("--layer", type=int, default=5, help="1-based")
            command.add_argument("--head", type=int, default=1, help="1-based")
    return main


def rounded(matrix: np.ndarray, digits: int = 4) -> list:
    return np.round(np.asarray(matrix, dtype=float), digits).tolist()


def ablate(args: argparse.Namespace, options, loaded) -> dict:
    model, tokenizer = loaded.model, loaded.tokenizer
    off = ablation.expand_heads(model, ablation.parse_heads(args.off))
    intact = translate_with_attention(model, tokenizer, args.sentence, options)
    ablated = ablation.translate_ablated(model, tokenizer, args.sentence, off, options)
    return {
        "heads_off": [[kind, layer + 1, head + 1] for kind, layer, head in off],
        "translation": intact.translation,
        "ablated": ablated.translation,
        "diff": ablation.word_diff(intact.translation, ablated.translation),
    }


def beam(args: argparse.Namespace, options, loaded) -> dict:
    model, tokenizer = loaded.model, loaded.tokenizer
    tree = explore_beam(model, tokenizer, args.sentence, options)
    best = tree.best()
    output = tree.tokens(best.id) if best else []
    probabilities = token_probabilities(model, tokenizer, tree.source_ids, output, args.top)
    return {
        "decoding": options.describe(),
        "steps": tree.steps(),
        "hypotheses": len(tree.nodes) - 1,
        "pruned": sum(node.status == "pruned" for node in tree.nodes),
        "nbest": [
            {
                "translation": tokenizer.decode(tree.tokens(node.id)),
                "log_prob": round(node.log_prob, 4),
                "score": round(node.score, 4),
            }
            for node in tree.finished()
        ],
        "tokens": [
            {
                "piece": p.piece,
                "probability": round(p.probability, 4),
                "rank": p.rank,
                "top": [[piece, round(prob, 4)] for piece, prob in p.top],
            }
            for p in probabilities
        ],
    }


def forced(args: argparse.Namespace, options, loaded) -> dict:
    translation = translate_with_attention(loaded.model, loaded.tokenizer, args.sentence, options)
    result = force(loaded.model, loaded.tokenizer, translation, args.given, top_k=5)
    scores = {
        name: {
            "log_prob": round(scored.log_prob, 4),
            "mean_log_prob": round(scored.mean_log_prob, 4),
            "tokens": [[p.piece, round(p.probability, 4), p.rank] for p in scored.tokens],
        }
        for name, scored in (("given_scores", result.given), ("model_scores", result.model))
    }
    return {
        "translation": translation.translation,
        "given": args.given,
        "bleu": round(result.bleu, 2),
        "chrf": round(result.chrf, 2),
        **scores,
    }


def rolled_out(args: argparse.Namespace, options, loaded) -> dict:
    translation = translate_with_attention(loaded.model, loaded.tokenizer, args.sentence, options)
    maps = translation.maps
    through = rollout.cross_rollout(maps.encoder, maps.decoder, maps.cross)
    result = {
        "translation": translation.translation,
        "source_tokens": maps.source_tokens,
        "target_tokens": maps.target_tokens,
        "encoder_rollout": rounded(rollout.attention_rollout(maps.encoder)[-1]),
        "cross_rollout": rounded(through["source"]),
        "source_share": rounded(through["source_share"]),
    }
    if args.flow:
        result["encoder_flow"] = rounded(rollout.attention_flow(maps.encoder))
    return result


def compared(args: argparse.Namespace, options, loaded) -> dict:
    first = translate_with_attention(loaded.model, loaded.tokenizer, args.sentence, options)
    if args.other:
        other = load_checkpoint(args.other)
        second = translate_with_attention(other.model, other.tokenizer, args.sentence, options)
    else:
        second = translate_with_attention(loaded.model, loaded.tokenizer, args.other_sentence, options)
    layer, head = args.layer - 1, args.head - 1
    for maps in (first.maps, second.maps):
        if not (0 <= layer < maps.num_layers and 0 <= head < maps.num_heads):
            raise ValueError(
                f"no layer {args.layer}, head {args.head} in a model of {maps.num_layers} layers and "
                f"{maps.num_heads} heads"
            )
    delta = difference(first.maps, second.maps, args.kind, layer, head)
    return {
        "translations": [first.translation, second.translation],
        "kind": args.kind,
        "layer": args.layer,
        "head": args.head,
        "same_shape": delta is not None,
        "same_tokens": same_tokens(first.maps, second.maps, args.kind),
        "difference": None if delta is None else rounded(delta),
        "largest_difference": None if delta is None else round(float(np.abs(delta).max()), 4),
    }


COMMANDS = {"ablate": ablate, "beam": beam, "force": forced, "rollout": rolled_out, "compare": compared}


def run(args: argparse.Namespace, options, loaded) -> dict:
    """The chosen command's result, as the JSON it prints."""
    return COMMANDS[args.command](args, options, loaded)


def main(argv: Sequence[str] | None = None) -> int:
    return run_decoding(parser(), argv, _answer)


def _answer(args: argparse.Namespace, options, loaded) -> int:
    """The chosen command's result on standard output (one JSON object with --json)."""
    try:
        result = run(args, options, loaded)
    except (ValueError, CheckpointError) as error:
        return fail(str(error).splitlines()[0])
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    for key, value in result.items():
        if isinstance(value, list) and value and isinstance(value[0], list | dict):
            print(f"{key}:")
            for row in value:
                print(f"  {json.dumps(row, ensure_ascii=False)}")
        else:
            print(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return 0
