"""How the live-trained toy model (``transformer/features/toy.py``, the *Train a tiny model* page) fares with the page's
defaults and with each of the paper's ablations, on every task: wall-clock seconds and steps until the held-out
exact match first reaches 95%, and the exact match and token accuracy where the run ended (at 100% exact match, at
the step limit or at the time budget, as on the page).

    python benchmarks/toy_training.py [--tasks copy reverse sort] [--seeds 0] [--seconds 90] [--steps 3000] \
        [--threads 1]
"""

from __future__ import annotations

import argparse
import time

from transformer.features.toy import TASKS, TRAINING_THREADS, ToySettings, torch_threads, train

ABLATIONS = {  # name → settings changed from the page's defaults
    "defaults": {},
    "no positional encoding": {"positional_encoding": False},
    "1 head": {"heads": 1},
    "no 1/sqrt(d_k)": {"scaled": False},
}


def measure(settings: ToySettings) -> dict:
    reached = None
    start = time.perf_counter()
    for snapshot in train(settings):
        if reached is None and snapshot.metrics["exact_match"] >= 0.95:
            reached = (snapshot.step, snapshot.seconds)
        last = snapshot
    return {
        "reached": reached,
        "steps": last.step,
        "seconds": time.perf_counter() - start,
        "exact": last.metrics["exact_match"],
        "tokens": last.metrics["token_accuracy"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--ablations", nargs="+", choices=list(ABLATIONS), default=list(ABLATIONS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--seconds", type=float, default=ToySettings.max_seconds)
    parser.add_argument("--steps", type=int, default=ToySettings.max_steps)
    parser.add_argument("--threads", type=int, default=TRAINING_THREADS, help="torch intra-op threads (the page's)")
    arguments = parser.parse_args(argv)
    print("| task | settings | seed | ≥95% exact match at | ended at | exact match | symbols in place |")
    print("|---|---|---|---|---|---|---|")
    for task in arguments.tasks:
        for name in arguments.ablations:
            for seed in arguments.seeds:
                settings = ToySettings(
                    task=task, seed=seed, max_seconds=arguments.seconds, max_steps=arguments.steps, **ABLATIONS[name]
                )
                with torch_threads(arguments.threads):
                    result = measure(settings)
                reached = "never" if result["reached"] is None else "step {} ({:.1f} s)".format(*result["reached"])
                print(
                    f"| {task} | {name} | {seed} | {reached} | step {result['steps']} ({result['seconds']:.1f} s) "
                    f"| {100 * result['exact']:.1f}% | {100 * result['tokens']:.1f}% |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
