"""The floor plan holds: each layer imports only the ones below it, and the library runs without the app's packages.

A module's layer is the folder it sits in:

transformer/*.py       the core: configuration, tokenizer, model, data, decoding, schedule, checkpoints, runs, messages
transformer/analysis/  what the heads do, measured
transformer/serving/   the app's model sharing: the translation queue and its child process
transformer/plots/     figures
transformer/cli/       every command line (training with its parts in training/)
pages/, app.py         the Streamlit app

A module's ``if __name__ == "__main__":`` block may hand over to its command line in transformer/cli (so that
``python -m transformer.checkpoint`` and the other documented commands keep working): imports there do not count.
"""

from __future__ import annotations

import ast
import subprocess
import sys
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
