"""docs/metrics.md's table is the one generated from the Scala metrics registry."""

from __future__ import annotations

from pathlib import Path

from support.metrics import BEGIN, END, generated_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


def test_metrics_table_is_current(spark):
    text = DOC.read_text()
    current = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert current == generated_table(spark).strip(), (
        "docs/metrics.md's table is stale: run `python scripts/metrics_table.py`")
