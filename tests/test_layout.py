"""The floor plan holds: each floor imports only the ones below it, and the library runs without the app's packages.

A module's floor is the folder it sits in, lowest first:

transformer/paper/     the paper's model: configuration, model, loss, schedule, tokenizer, data
transformer/search/    greedy and beam search, and the fast engine they run on
transformer/formats/   a model's files: native checkpoints, runs and export, Hugging Face folders, CTranslate2
transformer/features/  messages in each language, lessons, the tiny model, the one-file explorer
transformer/analysis/  what the heads do, measured
transformer/serving/   the app's model sharing: the translation queue and its child process
transformer/plots/     figures
transformer/cli/       every command line (training with its parts in training/)
pages/, app.py         the Streamlit app

Every command has one door, ``python -m transformer <command>`` (``transformer/__main__.py``), beside a few console
scripts. No other module runs as a command; the exceptions are the app's own child processes in transformer/serving.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
APP_PACKAGES = ("streamlit", "plotly", "bertviz", "mpld3", "xstatic", "orjson")
ORDER = ["paper", "search", "formats", "features", "analysis", "serving", "plots", "cli", "app"]
LIBRARY = ORDER[:6]  # the floors that run without the app's packages


def wing(module: str) -> str:
    """The floor a module sits on; ``transformer`` itself holds only a docstring, and ``transformer.__main__`` is the
    commands' door, above every command line."""
    parts = module.split(".")
    if parts[0] in ("pages", "app"):
        return "app"
    if parts[0] != "transformer":
        return "outside"
    if len(parts) == 1:
        return "paper"
    if parts[1] == "__main__":
        return "app"
    assert parts[1] in ORDER, f"{module} sits on no floor: transformer/ holds only the floors' folders"
    return parts[1]


def runs_as_a_command(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') == '__name__ == "__main__"'


def imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions (not in its ``__main__`` block)."""
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tree.body = [node for node in tree.body if not runs_as_a_command(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPOSITORY).with_suffix("").parts).removesuffix(".__init__")


SOURCES = sorted([*REPOSITORY.glob("transformer/**/*.py"), *REPOSITORY.glob("pages/**/*.py"), REPOSITORY / "app.py"])


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_each_wing_imports_only_the_ones_below_it(path: Path):
    own = wing(module_name(path))
    for name in imports(path):
        other = wing(name)
        if other != "outside":
            assert ORDER.index(other) <= ORDER.index(own), f"{own} imports {name} ({other})"
        elif own in LIBRARY:
            assert name.split(".")[0] not in APP_PACKAGES, f"{own} imports the app's package {name}"


BLOCKER = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is an app package, not installed here")
        return None

sys.meta_path.insert(0, Blocker())
import transformer.cli.train, transformer.cli.translate, transformer.cli.evaluate, transformer.formats.checkpoint
import transformer.analysis.attention, transformer.analysis.heads, transformer.analysis.figures
import transformer.analysis.timeline, transformer.analysis.precompute, transformer.analysis.health
import transformer.analysis.input_check
print("library imported without", sorted({blocked!r}))
"""


def test_the_library_works_without_the_app_packages():
    script = BLOCKER.format(blocked=set(APP_PACKAGES))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPOSITORY)
    assert result.returncode == 0, result.stderr
    assert "library imported without" in result.stdout
    # And the command-line tools start: their help needs nothing from the app either.
    for tool in ("train", "translate", "evaluate"):
        command = [
            sys.executable,
            "-c",
            script + f"\nimport runpy, sys\nsys.argv = ['x', {tool!r}, '--help']\n"
            "runpy.run_module('transformer', run_name='__main__')",
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPOSITORY)
        assert done.returncode == 0 and "usage" in done.stdout, done.stderr


def import_graph() -> dict[str, set[str]]:
    """Each module of the project → the project's modules it imports (at the top or inside functions)."""
    modules = {module_name(path): path for path in SOURCES}
    graph = {}
    for name, path in modules.items():
        graph[name] = set()
        for imported in imports(path):
            parts = imported.split(".")
            known = next(
                (".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in modules), None
            )
            if known is not None and known != name and not name.startswith(f"{known}."):  # a package's own parent
                graph[name].add(known)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_round_a_circle():
    """Read in import order, every module stands on the ones below it: no circle, even through an import inside a
    function (which only hides a circle until the function runs)."""
    assert circles(import_graph()) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check sees one


def parsed(module: str) -> ast.Module:
    return ast.parse((REPOSITORY / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8"))


def test_the_top_floor_holds_only_the_floors_and_the_door():
    """transformer/ itself holds the floors' folders, its docstring and the commands' door: a module put there sits
    on no floor."""
    top = sorted(path.name for path in (REPOSITORY / "transformer").glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]
    floors = sorted(path.name for path in (REPOSITORY / "transformer").iterdir() if (path / "__init__.py").exists())
    assert floors == sorted(ORDER[:-1])


LONGEST = 450


def test_no_module_is_longer_than_a_reader_reads_at_once():
    """A module holds one concern: past 450 lines it is two."""
    long = {
        str(path.relative_to(REPOSITORY)): n for path in SOURCES if (n := len(path.read_text().splitlines())) > LONGEST
    }
    assert long == {}, f"split by concern: {long}"


COMMANDS = ast.literal_eval(
    next(
        node.value
        for node in parsed("transformer.__main__").body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "COMMANDS"
    )
)
COMMAND_LINES = sorted(
    path.stem for path in (REPOSITORY / "transformer" / "cli").glob("*.py") if path.stem != "__init__"
)
# The modules that run when run, and why: the serving modules are child processes the app starts itself
# (`sys.executable -m …`), not commands a reader types.
CHILD_PROCESSES = ("transformer.serving.jobs", "transformer.serving.process")


def names_main(test: ast.AST) -> bool:
    """Whether an ``if`` test compares ``__name__`` with ``"__main__"`` (either way round, alone or within a test)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Name) and o.id == "__name__" for o in operands) and any(
                isinstance(o, ast.Constant) and o.value == "__main__" for o in operands
            ):
                return True
    return False


def main_blocks(tree: ast.Module) -> list[ast.If]:
    """Every ``if __name__ == "__main__":`` of a module, at the top or nested anywhere."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.If) and names_main(node.test)]


def test_one_door_names_every_command_line():
    """``python -m transformer <command>`` reaches each ``transformer/cli/<command>.py``, and only those."""
    assert sorted(COMMANDS) == COMMAND_LINES
    assert all(summary and summary[0].islower() for summary in COMMANDS.values()), "each says what it does"


def test_only_the_door_runs_as_a_command():
    """A library module (analysis, plots, the floors below) or a command line in transformer/cli that runs when run
    would be a second door to a command: none may, nor may a package's ``__main__.py`` besides the one door."""
    stray = [
        str(path.relative_to(REPOSITORY))
        for path in sorted(REPOSITORY.glob("transformer/**/*.py"))
        if module_name(path) not in ("transformer.__main__", *CHILD_PROCESSES)
        and (path.name == "__main__.py" or main_blocks(ast.parse(path.read_text(encoding="utf-8"))))
    ]
    assert stray == [], f"only transformer/__main__.py may have a __main__ block: {stray}"
    assert main_blocks(ast.parse("if 'x' and __name__ == '__main__':\n    pass"))  # the check sees a hidden one


def test_the_child_processes_run_only_what_the_app_starts():
    """The serving modules' one ``__main__`` block each, at their end, is there because the app starts them with
    ``python -m``."""
    for module in CHILD_PROCESSES:
        tree = parsed(module)
        blocks = main_blocks(tree)
        assert len(blocks) == 1 and blocks[0] is tree.body[-1], f"{module}: one __main__ block, at its end"
        started = f'"-m", "{module}"'
        serving = (REPOSITORY / "transformer" / "serving").glob("*.py")
        assert any(started in path.read_text(encoding="utf-8") for path in serving), f"nothing starts {module}"


def test_console_scripts_call_the_command_lines():
    """Each console script is a command line's own ``main`` (the second door of a command, not a third)."""
    scripts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts, "the console scripts are read"
    for script, target in scripts.items():
        module, _, function = target.partition(":")
        assert function == "main" and module in {f"transformer.cli.{c}" for c in COMMANDS}, f"{script} = {target}"


def test_the_door_lists_the_commands_and_refuses_an_unknown_one(capsys: pytest.CaptureFixture):
    from transformer.__main__ import main

    assert main([]) == 2
    listed = capsys.readouterr().out
    assert listed.startswith("usage:") and all(f"  {command} " in listed for command in COMMANDS)
    assert main(["tarin"]) == 2
    assert "no command 'tarin'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main(["checkpoint", "--help"])
    assert stopped.value.code == 0 and "python -m transformer checkpoint" in capsys.readouterr().out
