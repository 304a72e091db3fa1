"""The floor plan holds: each layer imports only the ones below it, and the library runs without the app's packages.

A module's layer is the folder it sits in:

transformer/*.py       the core: configuration, tokenizer, model, data, decoding, schedule, checkpoints, runs, messages
transformer/analysis/  what the heads do, measured
transformer/serving/   the app's model sharing: the translation queue and its child process
transformer/plots/     figures
transformer/cli/       every command line (training with its parts in training/)
pages/, app.py         the Streamlit app

A command has one door, ``python -m transformer.<name>``: a short module in transformer/ whose
``if __name__ == "__main__":`` block only hands over to ``transformer.cli.<name>`` (imports there do not count), and,
for some, a console script. No other module runs as a command: not the library's, not transformer/cli's; the
exceptions are ``transformer.checkpoint`` (a library module whose name the documented ``python -m
transformer.checkpoint`` takes, so it hands over itself) and the app's own child processes in transformer/serving.
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
FOLDERS = ("analysis", "serving", "plots", "cli")
ORDER = ["core", "analysis", "serving", "plots", "cli", "app"]


def wing(module: str) -> str:
    parts = module.split(".")
    if parts[0] in ("pages", "app"):
        return "app"
    if parts[0] != "transformer":
        return "outside"
    return parts[1] if len(parts) > 1 and parts[1] in FOLDERS else "core"


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
        elif own != "app" and own != "plots":
            assert name.split(".")[0] not in APP_PACKAGES, f"{own} imports the app's package {name}"


BLOCKER = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is an app package, not installed here")
        return None

sys.meta_path.insert(0, Blocker())
import transformer.cli.train, transformer.cli.translate, transformer.cli.evaluate, transformer.checkpoint
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
            script + f"\nimport runpy, sys\nsys.argv = ['x', '--help']\n"
            f"runpy.run_module('transformer.{tool}', run_name='__main__')",
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


COMMAND_LINES = REPOSITORY / "transformer" / "cli"
# transformer.<name> → transformer.cli.<name>: one door per command line (checkpoint's is the library module itself)
DOORS = {
    f"transformer.{path.stem}": f"transformer.cli.{path.stem}"
    for path in sorted(COMMAND_LINES.glob("*.py"))
    if path.stem not in ("__init__", "checkpoint")
}
# The modules besides the doors that run when run, and why. transformer.checkpoint is the library module of the
# documented `python -m transformer.checkpoint average|export|info`: a door would need its very name, so its block
# hands over to the command line itself. The serving modules are child processes the app starts itself
# (`sys.executable -m …`), not commands a reader types.
RUN_BUT_ARE_NOT_DOORS = {
    "transformer.checkpoint": "transformer.cli.checkpoint",
    "transformer.serving.jobs": None,
    "transformer.serving.process": None,
}


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


def handover(block: ast.If) -> str | None:
    """The command line a ``__main__`` block hands over to, when that is all it does: ``from transformer.cli.<name>
    import main`` and ``raise SystemExit(main())``, nothing else; None for any other block."""
    if block.orelse or len(block.body) != 2:
        return None
    first, second = block.body
    if not (
        isinstance(first, ast.ImportFrom) and first.level == 0 and (first.module or "").startswith("transformer.cli.")
    ):
        return None
    if ast.unparse(first) != f"from {first.module} import main" or ast.unparse(second) != "raise SystemExit(main())":
        return None
    return first.module


def parsed(module: str) -> ast.Module:
    return ast.parse((REPOSITORY / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8"))


def test_only_the_doors_run_as_commands():
    """A library module (analysis, plots, the core) or a command line in transformer/cli that runs when run would be
    a second door to a command: none may, nor may a package's ``__main__.py``."""
    stray = [
        str(path.relative_to(REPOSITORY))
        for path in sorted(REPOSITORY.glob("transformer/**/*.py"))
        if module_name(path) not in DOORS
        and module_name(path) not in RUN_BUT_ARE_NOT_DOORS
        and (path.name == "__main__.py" or main_blocks(ast.parse(path.read_text(encoding="utf-8"))))
    ]
    assert stray == [], f"only the doors transformer/<name>.py may have a __main__ block: {stray}"
    assert handover(parsed("transformer.align").body[1]) == "transformer.cli.align"  # the check reads a door as one


@pytest.mark.parametrize("door", sorted(DOORS))
def test_each_door_only_hands_over_to_its_command_line(door: str):
    """``transformer/<name>.py`` exists for each ``transformer/cli/<name>.py`` and is a docstring and a ``__main__``
    block that calls that command line's ``main``: nothing of the library lives in a door."""
    tree = parsed(door)
    assert ast.get_docstring(tree), f"{door} says which command it is"
    assert len(tree.body) == 2, f"{door} holds more than a docstring and its __main__ block"
    block = tree.body[1]
    assert isinstance(block, ast.If) and names_main(block.test) and handover(block) == DOORS[door], (
        f"{door} must only run `from {DOORS[door]} import main; raise SystemExit(main())`"
    )


def test_the_exceptions_run_only_what_they_must():
    """transformer.checkpoint's one ``__main__`` block only hands over to its command line; the serving modules are
    still child processes the app starts with ``python -m`` (else they need no ``__main__`` either)."""
    for module, command_line in RUN_BUT_ARE_NOT_DOORS.items():
        tree = parsed(module)
        blocks = main_blocks(tree)
        assert len(blocks) == 1 and blocks[0] is tree.body[-1], f"{module}: one __main__ block, at its end"
        if command_line is not None:
            assert handover(blocks[0]) == command_line, f"{module} must only hand over to {command_line}"
        else:
            started = f'"-m", "{module}"'
            serving = (REPOSITORY / "transformer" / "serving").glob("*.py")
            assert any(started in path.read_text(encoding="utf-8") for path in serving), f"nothing starts {module}"


def test_console_scripts_call_the_command_lines():
    """Each console script is a command line's own ``main`` (the second door of a command, not a third)."""
    scripts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts, "the console scripts are read"
    for script, target in scripts.items():
        module, _, function = target.partition(":")
        assert function == "main" and module in {*DOORS.values(), "transformer.cli.checkpoint"}, f"{script} = {target}"
