"""The house rules that a reader of the code relies on, checked on every run: file and method
sizes, the optimizer's independence from execution, ARCHITECTURE.md's map of the tree, and
comments and docs that name only files that exist."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCALA_MAIN = ROOT / "scala" / "src" / "main" / "scala"
PACKAGE = SCALA_MAIN / "io" / "github" / "sparkmultijoin"


def size_breaches(root: Path) -> list[str]:
    checked = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_code_size.py"),
                              str(root)], capture_output=True, text=True)
    assert checked.returncode in (0, 1), checked.stderr
    return checked.stdout.splitlines()


def test_no_main_file_or_method_over_the_limits():
    assert size_breaches(ROOT) == []


def test_the_size_check_finds_what_is_over(tmp_path):
    """The check can fail: a Scala method, a Python function and a file one line over, in the
    product's main code and the benchmark's (not in its tests)."""
    body = "\n".join(f"    val x{i} = {i}" for i in range(39))
    scala = tmp_path / "scala" / "src" / "main" / "A.scala"
    scala.parent.mkdir(parents=True)
    scala.write_text(f"object A {{\n  def long(): Unit = {{\n{body}\n  }}\n  def short() = 1\n}}\n")
    python = tmp_path / "python" / "b.py"
    python.parent.mkdir()
    python.write_text("def long():\n" + "\n".join(f"    x{i} = {i}" for i in range(40)) + "\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "c.py").write_text("x = 1\n" * 351)
    benchmark = tmp_path / "benchmarks" / "multijoin_bench" / "d.py"
    benchmark.parent.mkdir(parents=True)
    benchmark.write_text("x = 1\n" * 351)
    (tmp_path / "benchmarks" / "tests").mkdir()
    (tmp_path / "benchmarks" / "tests" / "test_e.py").write_text("x = 1\n" * 351)
    assert size_breaches(tmp_path) == [
        "scala/src/main/A.scala:2: long is 41 lines (at most 40)",
        "python/b.py:1: long is 41 lines (at most 40)",
        "scripts/c.py: 351 lines (at most 350)",
        "benchmarks/multijoin_bench/d.py: 351 lines (at most 350)",
    ]


EXEC = PACKAGE / "execution" / "StreamingMultiJoinExec.scala"


def test_the_exec_keeps_room_for_another_mode():
    """The operator's largest method stays under 30 lines: what a mode adds goes in its own."""
    from scripts.check_code_size import scala_methods
    longest = max(scala_methods(EXEC.read_text().splitlines()), key=lambda method: method[2])
    assert longest[2] < 30, f"{longest[0]} at line {longest[1]} is {longest[2]} lines"


def test_optimizer_and_analysis_import_no_execution_code():
    for phase in ("optimizer", "analysis", "logical", "model", "restart"):
        for path in (PACKAGE / phase).rglob("*.scala"):
            imports = re.findall(r"^import io\.github\.sparkmultijoin\.execution", path.read_text(),
                                 re.M)
            assert not imports, f"{path.relative_to(ROOT)} imports execution code"


ARCHITECTURE = ROOT / "ARCHITECTURE.md"
SOURCE_ROOTS = ("scala/", "python/", "scripts/", "benchmarks/", "examples/", "tests/", "docs/",
                "project/")


def named_paths() -> set[Path]:
    """The files and folders ARCHITECTURE.md names in backticks: from the repository's root where
    the name starts with a top-level folder, by file name where it is a bare name, and from the
    Scala package otherwise."""
    named = set()
    for token in re.findall(r"`([^`\s]+)`", ARCHITECTURE.read_text()):
        if token.startswith(SOURCE_ROOTS):
            named.add(ROOT / token)
        elif "/" not in token and token.endswith((".scala", ".py")):
            matches = [p for p in (ROOT / "scala").rglob(token)] + \
                [p for p in (ROOT / "python").rglob(token)]
            assert len(matches) == 1, f"ARCHITECTURE.md names {token}: {len(matches)} files"
            named.add(matches[0])
        elif "/" in token and token.endswith((".scala", "/")):
            named.add(PACKAGE / token)
    return named


def test_architecture_names_only_what_exists():
    missing = [str(p.relative_to(ROOT)) for p in named_paths() if not p.exists()]
    assert missing == [], f"ARCHITECTURE.md names what is not in the tree: {missing}"


def test_architecture_names_every_main_source_file():
    named = named_paths()
    sources = [p for p in (ROOT / "scala" / "src" / "main").rglob("*.scala")] + \
        [p for p in (ROOT / "python").rglob("*.py")] + \
        [p for folder in ("scripts", "benchmarks/multijoin_bench")
         for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    unnamed = [str(p.relative_to(ROOT)) for p in sources
               if p not in named and not any(folder in p.parents for folder in named)]
    assert unnamed == [], f"ARCHITECTURE.md does not name: {unnamed}"


# A file named from the repository's root in a comment or a doc.
NAMED_FILE = re.compile(r"(?<![\w/.-])((?:scala|python|scripts|benchmarks|tests|docs|examples|"
                        r"project|\.ci)/"
                        r"[\w./+-]*\w\.(?:py|scala|md|java|json|sh|toml|sbt|conf))\b")


def _python_comments(text: str) -> str:
    """The comments and docstrings of Python source: what a reader is told, not what runs."""
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(text).readline)
                if token.type == tokenize.COMMENT]
    docstrings = [ast.get_docstring(node) or "" for node in ast.walk(ast.parse(text))
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))]
    return "\n".join(comments + docstrings)


def _scala_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines()
                     if line.strip().startswith(("//", "/*", "*")) or "// " in line)


def named_files(path: Path) -> list[str]:
    """The files from the repository's root that `path`'s comments, or the doc `path`, name."""
    text = path.read_text()
    if path.suffix == ".py":
        text = _python_comments(text)
    elif path.suffix in (".scala", ".java", ".sbt"):
        text = _scala_comments(text)
    return NAMED_FILE.findall(text)


def _commented_files() -> list[Path]:
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in tracked
            if name.endswith((".py", ".scala", ".java", ".sbt", ".md")) and
            not name.startswith("CHANGELOG") and (ROOT / name).is_file()]


def test_comments_and_docs_name_only_files_that_exist():
    missing = [f"{path.relative_to(ROOT)}: {name}" for path in _commented_files()
               for name in named_files(path) if not (ROOT / name).exists()]
    assert missing == [], f"named, but not in the tree: {missing}"


def test_the_file_name_check_finds_a_missing_file(tmp_path):
    """The check can fail: a comment of each kind naming a file the tree does not have."""
    python = tmp_path / "a.py"
    python.write_text('"""Kept in step by tests/test_gone.py."""\nx = "scripts/kept.py"  # docs/gone.md\n')
    scala = tmp_path / "B.scala"
    scala.write_text('/** See scala/src/main/Gone.scala. */\nval s = "python/kept.py"\n')
    assert sorted(named_files(python)) == ["docs/gone.md", "tests/test_gone.py"]
    assert named_files(scala) == ["scala/src/main/Gone.scala"]
    doc = tmp_path / "c.md"
    doc.write_text("Its runs are in benchmarks/multijoin_bench/gone.py.\n")
    assert named_files(doc) == ["benchmarks/multijoin_bench/gone.py"]


def test_no_code_changes_the_import_path():
    """Packages import each other by their names (pytest's pythonpath puts the root and tests/
    on the path); no module edits sys.path to reach one."""
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    editing = [name for name in tracked if name != "tests/test_house_rules.py"
               and re.search(r"sys\.path\.(insert|append)", (ROOT / name).read_text())]
    assert editing == []
