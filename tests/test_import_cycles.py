"""No module of the Python package, or of the benchmark, imports, at its top or in a function, a
module that imports it back: what two modules both need lives in a third that both import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each package, with the folder its modules are imported from.
PACKAGES = {"spark_multijoin": (ROOT / "python" / "spark_multijoin", ROOT / "python"),
            "multijoin_bench": (ROOT / "benchmarks" / "multijoin_bench", ROOT / "benchmarks")}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.Module, modules: set[str]) -> set[str]:
    """The package's modules that `tree` imports, outside `if TYPE_CHECKING:` blocks."""
    found: set[str] = set()
    type_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and ast.unparse(block.test) == "TYPE_CHECKING"
                 for statement in block.body for node in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found |= {node.module} | {name for name in names if name in modules}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found & modules


def import_graph(package: str) -> dict[str, set[str]]:
    folder, root = PACKAGES[package]
    paths = {module_name(path, root): path for path in folder.rglob("*.py")}
    return {name: imported(ast.parse(path.read_text()), set(paths)) - {name}
            for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, done = [], set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            found.append(path[path.index(name):] + [name])
            return
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, path + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_has_no_import_cycle(package):
    assert cycles(import_graph(package)) == []


def test_the_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
