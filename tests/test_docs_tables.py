"""The docs' generated tables are the ones the jar's conf object and metrics registry give (the
docs' other checks are in test_docs.py)."""

from __future__ import annotations

import pytest

from scripts.docs_tables import TABLES


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.doc.name)
def test_generated_table_is_current(spark, table):
    assert table.current() == table.generate(spark).strip(), (
        f"{table.doc.name}'s generated table is stale: run "
        "`.venv/bin/python -m scripts.docs_tables`")
