"""docs/benchmarks.md and docs/cdc-benchmark.md type no figure: their tables are the result files'
under benchmarks/results/ (benchmarks/multijoin_bench/results_tables.py copies them), and they
point at those files. The
latency section of docs/real-time-mode.md, which reads those results, types none either. A
figure is a measurement, in digits or in words: a number with a unit, a ratio or a fraction."""

from __future__ import annotations

import re

import pytest

from multijoin_bench.results_tables import DOCS, RESULTS, ROOT, TABLES

REAL_TIME_MODE = ROOT / "docs" / "real-time-mode.md"
# A number, in digits or in words.
NUMBER = (r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
          r"fifteen|twenty|thirty|forty|fifty|sixty|a hundred|a thousand)")
FRACTION = r"(?:half|third|quarter|fifth|sixth|eighth|tenth|twentieth|hundredth)s?"
FIGURES = [
    # 3.2x, 120 ms, 1.5 s, 40%, 12 MB, 10,000 rows/s
    rf"\b\d[\d,.]*\s*(?:x\b|ms\b|s\b|%|MB\b|GB\b|rows/s)",
    # 1/50 of the data
    r"\b\d+/\d+\b",
    # three to four times, one and a half times, ten times
    rf"\b{NUMBER}(?:\s+(?:to|or)\s+{NUMBER})?(?:\s+and\s+a\s+half)?\s+times\b",
    # twice, by half, half that, doubled
    r"\b(?:twice|thrice|half|halved|double[ds]?|triple[ds]?)\b",
    # a third, two thirds, a twentieth
    rf"\b(?:a|an|{NUMBER})\s+{FRACTION}\b",
    # a million changes, ten million, hundreds of micro-batches
    rf"\b(?:a|{NUMBER})\s+(?:hundred|thousand|million|billion)\b",
    r"\b(?:hundreds|thousands|millions|billions)\s+of\b",
    # twelve minutes, 10 seconds, 1,000 rows a second, five percent
    rf"\b{NUMBER}\s+(?:seconds|minutes|hours|percent|per\s+cent)\b",
    rf"\b{NUMBER}\s+(?:rows|changes|keys)\s+(?:a|per)\s+second\b",
]


def hand_typed_figures(text: str) -> list[str]:
    """The figures `text` types outside code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [match.group(0) for figure in FIGURES
            for match in re.finditer(figure, text, flags=re.I)]


def latency_section(page: str) -> str:
    start = page.index("\n## Latency\n")
    return page[start:page.index("\n## ", start + 1)]


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_each_table_is_its_result_files(table):
    assert table.current(table.doc.read_text()) == table.generate(), (
        f"{table.name} differs from benchmarks/results/{table.source}: run "
        "`.venv/bin/python -m multijoin_bench.results_tables`")


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_no_figure_outside_the_generated_tables(doc):
    text = doc.read_text()
    for table in (table for table in TABLES if table.doc == doc):
        text = text.replace(table.current(text), "")
    assert hand_typed_figures(text) == []


def test_the_latency_guide_types_no_figure():
    assert hand_typed_figures(latency_section(REAL_TIME_MODE.read_text())) == []


def test_the_check_finds_figures_in_digits_and_in_words():
    typed = ["3.2x faster", "120 ms in", "a 1.5 s batch", "40% of it", "1,000 rows a second",
             "1/50 of the data", "ten times the changes", "three to four times as long",
             "two to three times Flink's rate", "one and a half times the target",
             "missed by half", "a third of the state", "two thirds of its batch",
             "twice the rows", "a twentieth of the changes", "at a million changes",
             "ten million more", "after hundreds of micro-batches", "twelve minutes a run"]
    assert [phrase for phrase in typed if not hand_typed_figures(phrase)] == []
    plain = ("One trigger against micro-batches: the first boundary, one row per key, both halves "
             "of each update, each tenth of the run, a change delivered again, Spark 4.3, "
             "format 4, the `10 s` batches.")
    assert hand_typed_figures(plain) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_the_page_stays_a_reference(doc):
    """What each run measures, how to run and read it, and where a peer wins: what a run
    showed goes in its result folder's notes and its commit message."""
    assert len(doc.read_text().splitlines()) < 250


def test_they_link_every_result_file():
    text = "".join(doc.read_text() for doc in DOCS)
    results = sorted(RESULTS.rglob("*.md"))
    unlinked = [str(path.relative_to(ROOT)) for path in results
                if f"../{path.relative_to(ROOT)}" not in text]
    assert unlinked == []
