"""Checks the house limits on main code: no file over 350 lines, no method or function over 40.

Main code is what ships or runs the product: scala/src/main, python/ and scripts/, and the
benchmark's package, benchmarks/multijoin_bench. Tests are exempt. A method's length runs from its `def` line to its last line, blank lines and
comments included, as a reader sees it on the screen.

    python scripts/check_code_size.py [ROOT]   # prints each breach, exits 1 if there is one
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN_CODE = ("scala/src/main", "python", "scripts", "benchmarks/multijoin_bench")
MAX_FILE_LINES = 350
MAX_METHOD_LINES = 40

# A Scala `def` line: modifiers, then `def name`.
SCALA_DEF = re.compile(
    r"^(\s*)(?:(?:override|private|protected|final|implicit|lazy|inline)(?:\[\w+\])?\s+)*"
    r"def\s+([\w$]+|`[^`]+`|[^\s(\[:]+)")


def scala_methods(lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, first line, length) of each method: its body is every line after the `def` that is
    indented deeper than it, and a closing brace or parenthesis at the `def`'s own indentation
    (scalafmt keeps the layout regular enough for this to hold)."""
    methods = []
    for start, line in enumerate(lines):
        match = SCALA_DEF.match(line)
        if match:
            end = _scala_method_end(lines, start, len(match.group(1)))
            methods.append((match.group(2), start + 1, end - start + 1))
    return methods


def _scala_method_end(lines: list[str], start: int, indent: int) -> int:
    end = start
    for index in range(start + 1, len(lines)):
        text = lines[index]
        if not text.strip():
            continue
        depth = len(text) - len(text.lstrip())
        if depth > indent:
            end = index
        elif depth == indent and text.lstrip()[:1] in ("}", ")"):
            return index
        else:
            break
    return end


def python_functions(source: str) -> list[tuple[str, int, int]]:
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def main_code_files(root: Path = ROOT) -> list[Path]:
    files = []
    for folder in MAIN_CODE:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".scala", ".py") and "__pycache__" not in path.parts:
                files.append(path)
    return files


def breaches(root: Path = ROOT) -> list[str]:
    found = []
    for path in main_code_files(root):
        text = path.read_text()
        lines = text.splitlines()
        name = path.relative_to(root)
        if len(lines) > MAX_FILE_LINES:
            found.append(f"{name}: {len(lines)} lines (at most {MAX_FILE_LINES})")
        methods = scala_methods(lines) if path.suffix == ".scala" else python_functions(text)
        for method, line, length in methods:
            if length > MAX_METHOD_LINES:
                found.append(f"{name}:{line}: {method} is {length} lines "
                             f"(at most {MAX_METHOD_LINES})")
    return found


def main() -> int:
    found = breaches(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    for breach in found:
        print(breach)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
