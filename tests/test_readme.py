"""The README's config table is the one generated from the Scala conf object (the docs' other
checks are in test_docs.py)."""

from __future__ import annotations

from pathlib import Path

from support.readme_table import BEGIN, END, generated_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_config_table_is_current(spark):
    text = README.read_text()
    current = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert current == generated_table(spark).strip(), (
        "README.md's config table is stale: run `python scripts/config_table.py`")

