"""Docs that stay true: every command the README, the docs, the lessons' guide and the model card tell a reader to
type (``python -m transformer…``, ``python benchmarks/….py``) exists and answers ``--help`` with its usage, and so
does each subcommand they name (``python -m transformer.whatif ablate``). A renamed module or a door that does
nothing when run fails here, not in a reader's terminal."""

from __future__ import annotations

import concurrent.futures
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted(
    [
        REPOSITORY / "README.md",
        *(REPOSITORY / "docs").glob("*.md"),
        *(REPOSITORY / "lessons").glob("*.md"),
        *(REPOSITORY / "checkpoints").glob("*/MODEL_CARD*.md"),
    ]
)
# `python -m transformer.x [word]` or `python benchmarks/x.py`; a word right after the module may be a subcommand
COMMAND = re.compile(
    r"python3? (?:-m ((?:transformer|benchmarks)(?:\.\w+)*)|((?:benchmarks|scripts)/\w+\.py))(?: ([a-z]\w*))?"
)
CHOICES = re.compile(r"\{([\w,-]+)\}")


def documented_commands() -> dict[tuple[str, ...], list[str]]:
    """(the command's words, …) → where the documents name it; a subcommand is kept with its module."""
    found: dict[tuple[str, ...], list[str]] = {}
    for document in DOCUMENTS:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for module, script, word in COMMAND.findall(line):
                base = ("-m", module) if module else (script,)
                where = f"{document.relative_to(REPOSITORY)}:{number}"
                found.setdefault(base, []).append(where)
                if word:
                    found.setdefault((*base, word), []).append(where)
    return found


def help_of(command: tuple[str, ...]) -> subprocess.CompletedProcess:
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
    for command in (("-m", "transformer.train"), ("-m", "transformer.checkpoint", "average"), ("benchmarks/load.py",)):
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


def test_commands_are_named_by_their_doors():
    """A command is named by its one door, ``python -m transformer.<name>`` (for each ``transformer/cli/<name>.py``),
    never by a library or command-line module (``python -m transformer.analysis.precompute``,
    ``python -m transformer.cli.train``): those run nothing (``tests/test_layout.py``)."""
    doors = {f"transformer.{path.stem}" for path in (REPOSITORY / "transformer" / "cli").glob("*.py")} - {
        "transformer.__init__"
    }
    named, wrong = 0, []
    for document in [*DOCUMENTS, *READ_TOO]:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for module, _, _ in COMMAND.findall(line):
                if module.startswith("transformer"):
                    named += 1
                    if module not in doors and module not in CHILD_PROCESSES:
                        wrong.append(f"{document.relative_to(REPOSITORY)}:{number}: python -m {module}")
    assert named > 50, "the scan finds the commands"
    assert not wrong, "name the door python -m transformer.<name> instead:\n" + "\n".join(wrong)


@pytest.mark.slow
def test_every_documented_command_and_subcommand_answers_help():
    found = documented_commands()
    bases = sorted(command for command in found if len(command) == 1 or (command[0] == "-m" and len(command) == 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        helps = dict(zip(bases, pool.map(help_of, bases), strict=True))
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
