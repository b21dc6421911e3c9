"""docs/benchmarks.md types no figure: its tables are the result files' under benchmarks/results/
(benchmarks/multijoin_bench/results_tables.py copies them), and it points at those files."""

from __future__ import annotations

import re

import pytest

from multijoin_bench.results_tables import DOC, RESULTS, ROOT, TABLES


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_each_table_is_its_result_files(table):
    assert table.current(DOC.read_text()) == table.generate(), (
        f"{table.name} differs from benchmarks/results/{table.source}: run "
        "`.venv/bin/python -m multijoin_bench.results_tables`")


def test_no_figure_outside_the_generated_tables():
    """Outside the generated tables and code, no measured figure: a number with a unit or a
    ratio (`3.2x`, `120 ms`, `1.5 s`, `40%`)."""
    text = DOC.read_text()
    for table in TABLES:
        text = text.replace(table.current(text), "")
    text = re.sub(r"`[^`]*`", "", text)
    figures = re.findall(r"\b\d[\d,.]*\s*(?:x\b|ms\b|s\b|%|MB\b|GB\b|rows/s)", text)
    assert figures == []


def test_it_links_every_result_file():
    text = DOC.read_text()
    results = sorted(RESULTS.rglob("*.md"))
    unlinked = [str(path.relative_to(ROOT)) for path in results
                if f"../{path.relative_to(ROOT)}" not in text]
    assert unlinked == []
