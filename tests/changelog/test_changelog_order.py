"""A row's changes arriving out of order across join keys: the version rule orders an identity's
changes wherever they are, while a changelog join keeps rows under their join key. A key move or
a delete that arrives after a newer change under another key, or an insert of a live row under
another key, must not leave the row's older version under its old key (the ordering step by row
id: docs/changelog-joins.md). The random streams hold such cases too; these are them reduced."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from support.changelog_runs import (check_changes, declared_streams, expected_tables,
                                    run_changelog_join, write_changes)
from support.changelogs import CHANGE_TYPE, VERSION, ChangelogSpec, current_rows

INPUTS = [ChangelogSpec(0, "k"), ChangelogSpec(1, "k")]


def change(i: int, row_id: int, key: int, version: int, change_type: str) -> dict:
    return {f"id{i}": row_id, f"k{i}": key, f"p{i}": 0, f"w{i}": 0, f"v{i}": 0,
            VERSION: version, CHANGE_TYPE: change_type}


def inner_join(frames):
    return frames[0].join(frames[1], F.col("k0") == F.col("k1"))


# Input 0's rows 1, 2 and 3 under key 0, then changed out of order: row 1 moved to key 1 at
# version 2 and to key 2 at version 3, which arrives first; row 2 deleted at version 2, which
# arrives after its insert under key 1 at version 3; row 3 inserted under key 1 while live.
# Input 1 has a row under each key.
OUT_OF_ORDER = [
    [change(0, row, 0, 1, "insert") for row in (1, 2, 3)],
    [change(0, 1, 1, 3, "update_preimage"), change(0, 1, 2, 3, "update_postimage"),
     change(0, 2, 1, 3, "insert"), change(0, 3, 1, 2, "insert")],
    [change(0, 1, 0, 2, "update_preimage"), change(0, 1, 1, 2, "update_postimage"),
     change(0, 2, 0, 2, "delete")],
]


@pytest.mark.line_shared
def test_changes_out_of_order_across_keys_follow_the_version_rule(spark, tmp_path):
    changes = [OUT_OF_ORDER, [[change(1, key, key, 1, "insert") for key in range(3)], [], []]]
    inputs = write_changes(tmp_path / "inputs", INPUTS, changes)
    run = run_changelog_join(inner_join(declared_streams(spark, INPUTS, inputs)),
                             tmp_path / "checkpoint")
    current = [current_rows(spec, batches) for spec, batches in zip(INPUTS, changes)]
    expected = expected_tables(spark, inner_join, INPUTS, current, run.columns)
    check_changes(run.columns, run.identity, run.batches, expected, "changes out of order")
