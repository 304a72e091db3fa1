"""Docs that stay true: every command the README, the docs, the lessons' guide and the model card tell a reader to
type (``python -m transformer…``, ``python benchmarks/….py``) exists and answers ``--help`` with its usage, and so
does each subcommand they name (``python -m transformer whatif ablate``). A renamed module or a door that does
nothing when run fails here, not in a reader's terminal."""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import re
import runpy
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted(
    [
        REPOSITORY / "README.md",
        *(REPOSITORY / "docs").glob("*.md"),
        *(REPOSITORY / "lessons").glob("*.md"),
        *(REPOSITORY / "checkpoints").glob("*/MODEL_CARD*.md"),
    ]
)
# `python -m transformer <command> [word]`, `python -m module [word]` or `python benchmarks/x.py [word]`: a word right
# after the command may be a subcommand
COMMAND = re.compile(
    r"python3? (?:-m ((?:transformer|benchmarks)(?:\.\w+)*)|((?:benchmarks|scripts)/\w+\.py))"
    r"(?: ([a-z]\w*))?(?: ([a-z]\w*))?"
)


def words(module: str, script: str, first: str, second: str) -> tuple[tuple[str, ...], str]:
    """A match of COMMAND → (the command, the word after it that may be a subcommand)."""
    if module == "transformer" and first:
        return ("-m", module, first), second
    return (("-m", module) if module else (script,)), first


CHOICES = re.compile(r"\{([\w,-]+)\}")


def documented_commands() -> dict[tuple[str, ...], list[str]]:
    """(the command's words, …) → where the documents name it; a subcommand is kept with its module."""
    found: dict[tuple[str, ...], list[str]] = {}
    for document in DOCUMENTS:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for match in COMMAND.findall(line):
                base, word = words(*match)
                where = f"{document.relative_to(REPOSITORY)}:{number}"
                found.setdefault(base, []).append(where)
                if word:
                    found.setdefault((*base, word), []).append(where)
    return found


def help_of(command: tuple[str, ...]) -> subprocess.CompletedProcess:
    """``python <command> --help``. A command of ``python -m transformer`` answers through the same door
    (``transformer.__main__.main``) and a benchmark script as ``python benchmarks/x.py`` runs it (``runpy``), in this
    process, where torch is imported once; anything else in a child process."""
    if command[:2] == ("-m", "transformer") or command[0].startswith("benchmarks/"):
        out, err = io.StringIO(), io.StringIO()
        arguments, path = sys.argv, list(sys.path)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if command[0] == "-m":
                    from transformer.__main__ import main

                    status = main([*command[2:], "--help"])
                else:
                    sys.argv = [command[0], *command[1:], "--help"]
                    sys.path.insert(0, str(REPOSITORY / "benchmarks"))  # as for a script: its folder first
                    runpy.run_path(str(REPOSITORY / command[0]), run_name="__main__")
                    status = 0
            except SystemExit as stopped:
                status = stopped.code
            finally:
                sys.argv, sys.path[:] = arguments, path
        return subprocess.CompletedProcess(command, status or 0, out.getvalue(), err.getvalue())
    return subprocess.run(
        [sys.executable, *command, "--help"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_the_documents_name_the_commands_a_reader_types():
    """The scan itself: it finds the commands the README shows (so an emptied pattern cannot pass the test below)."""
    found = documented_commands()
    for command in (
        ("-m", "transformer", "train"),
        ("-m", "transformer", "checkpoint", "average"),
        ("benchmarks/load.py",),
    ):
        assert command in found, sorted(found)


# Also read for the commands they name: the scripts, the benchmarks' help and the modules' docstrings.
READ_TOO = sorted(
    [
        *(REPOSITORY / "scripts").glob("*.sh"),
        *(REPOSITORY / "benchmarks").glob("*.py"),
        *(REPOSITORY / "transformer").rglob("*.py"),
    ]
)
CHILD_PROCESSES = ("transformer.serving.jobs", "transformer.serving.process")  # the app starts them (docs describe)


def test_commands_are_named_by_their_door():
    """A command is named by its one door, ``python -m transformer <command>``, never by a library or command-line
    module (``python -m transformer.analysis.precompute``, ``python -m transformer.cli.train``): those run nothing
    (``tests/test_layout.py``)."""
    from transformer.__main__ import COMMANDS

    named, wrong = 0, []
    for document in [*DOCUMENTS, *READ_TOO]:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for match in COMMAND.findall(line):
                module, _, first, _ = match
                if module == "transformer" and first:
                    named += 1
                    if first not in COMMANDS:
                        wrong.append(f"{document.relative_to(REPOSITORY)}:{number}: no command {first!r}")
                elif module.startswith("transformer.") and module not in CHILD_PROCESSES:
                    wrong.append(f"{document.relative_to(REPOSITORY)}:{number}: python -m {module}")
    assert named > 50, "the scan finds the commands"
    assert not wrong, "name the command python -m transformer <command> instead:\n" + "\n".join(wrong)


def test_every_documented_command_and_subcommand_answers_help():
    found = documented_commands()
    bases = [command for command in found if len(command) == 1 or (command[0] == "-m" and len(command) == 2)]
    bases += [command for command in found if command[:2] == ("-m", "transformer") and len(command) == 3]
    outside = sorted(command for command in bases if command[0] != "-m" and not command[0].startswith("benchmarks/"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # subprocesses, two at a time
        helps = dict(zip(outside, pool.map(help_of, outside), strict=True))
    helps.update((command, help_of(command)) for command in sorted(bases) if command not in helps)  # in this process
    failures = []
    for command, answer in helps.items():
        if answer.returncode != 0 or "usage:" not in answer.stdout:
            failures.append(
                f"{' '.join(command)} (named at {', '.join(found[command][:3])}): "
                f"exit {answer.returncode}, {(answer.stdout + answer.stderr)[-300:]!r}"
            )
    subcommands = sorted(command for command in found if command not in helps)
    for command in subcommands:
        base, word = command[:-1], command[-1]
        usage = helps[base].stdout.split("\n\n")[0]
        choices = {choice for group in CHOICES.findall(usage) for choice in group.split(",")}
        if not choices:  # a module without subcommands: the word is an argument (a path, a checkpoint), not a door
            continue
        if word not in choices:
            failures.append(f"{' '.join(command)} (named at {', '.join(found[command][:3])}): not one of {choices}")
            continue
        answer = help_of(command)
        if answer.returncode != 0 or "usage:" not in answer.stdout:
            failures.append(f"{' '.join(command)}: exit {answer.returncode}, {answer.stderr[-300:]!r}")
    assert not failures, "\n".join(failures)
