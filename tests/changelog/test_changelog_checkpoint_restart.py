"""A changelog join's checkpoint written by an earlier version restarts with this one, and the
query's whole change stream still applies to the batch query's answer, as
scala/src/test/scala/io/github/sparkmultijoin/execution/state/StateFormatUpgradeSuite.scala
checks for the multi-join.

The checkpoint in tests/fixtures/changelog-state-format-2 was written by spark-multijoin at
154fd6e (changelog state format 2) on Spark 4.1.1, with local[2] Spark, 2 shuffle partitions
and the session `configure_spark_with_multijoin` builds (RocksDB, changelog checkpointing): the
query and the changes of tests/support/changelog_fixture.py, which wrote it (its docstring says
how to write it again), over BEFORE's two micro-batches. It holds the state of both stateful
operators: the ordering of the orders' changes by row id (changelogNormalize, operator
2147483648) and the changelog join (changelogJoin, operator 2147483649). `emitted.txt` holds what
the two micro-batches emitted.

It runs on every Spark line at or above the one that wrote the fixture (4.1, the oldest): not
`line_shared`, as the same code on each line reads the checkpoint through that line's own state
store, operator metadata and state schema files, and a checkpoint restarts on the line that wrote
it or a newer one, not an older one. It is one short restart per line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from spark_multijoin import read_state
from support.changelog_fixture import (AFTER, BATCHES_BEFORE, BEFORE, FIXTURE, TABLES, joined,
                                       moved_checkpoint, read_emitted)
from support.changelog_runs import (check_changes, declared_streams, expected_tables,
                                    run_changelog_join, write_changes)
from support.changelogs import CHANGE_TYPE, current_rows

# The inputs' current rows after the fixture's micro-batches, and after the restart's.
STORED_BEFORE = [{(1, 10, 110), (2, 10, 200), (3, 30, 300), (5, 40, 500)},
                 {(10, "ann"), (20, "bobby"), (30, "cy")}]
STORED_AFTER = [{(2, 30, 250), (3, 20, 300), (4, 30, 450), (5, 40, 500)},
                {(10, "anna"), (30, "cy"), (40, "dee")}]


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _writer_line() -> tuple[int, int]:
    """The Spark line that wrote the fixture, as emitted.txt's header names it."""
    header = (FIXTURE / "emitted.txt").read_text().splitlines()[0]
    return _line(re.search(r"on Spark (\S+)", header).group(1))


def _stored(spark: SparkSession, checkpoint: Path, input_index: int) -> set[tuple]:
    """The current rows the changelog join's state holds of an input, as read_state reads them."""
    columns = TABLES[input_index].columns
    return set(map(tuple, read_state(spark, checkpoint, input_index).select(*columns).collect()))


def test_a_changelog_checkpoint_of_state_format_2_restarts_with_the_batch_answer(
        spark: SparkSession, tmp_path: Path) -> None:
    writer = _writer_line()
    if _line(pyspark.__version__) < writer:
        pytest.skip(f"the fixture was written on Spark {writer[0]}.{writer[1]}, and a checkpoint "
                    f"restarts on the line that wrote it or a newer one, not on "
                    f"{pyspark.__version__}")
    checkpoint = moved_checkpoint(tmp_path)
    columns, emitted_before = read_emitted(FIXTURE / "emitted.txt")
    # The files of the micro-batches before the restart stand where the source's log names them,
    # so the restarted stream reads only the files after them.
    changes = [before + after for before, after in zip(BEFORE, AFTER)]
    inputs = write_changes(tmp_path / "inputs", TABLES, changes)
    assert [_stored(spark, checkpoint, i) for i in range(len(TABLES))] == STORED_BEFORE

    run = run_changelog_join(joined(declared_streams(spark, TABLES, inputs)), checkpoint,
                             first_batch=BATCHES_BEFORE)

    assert run.columns + [CHANGE_TYPE] == columns
    current = [current_rows(table, batches) for table, batches in zip(TABLES, changes)]
    expected = expected_tables(spark, joined, TABLES, current, run.columns)
    check_changes(run.columns, run.identity, emitted_before + run.batches, expected,
                  "restarted from the fixture")
    # Both operators ran from the checkpoint's state, in the format it recorded.
    assert "ChangelogNormalize" in run.plan and "state format 2" in run.plan, run.plan
    assert run.operator_count == 1 and "in format 2" in run.plan, run.plan
    names = {entry["operatorName"] for entry in run.progress[-1]["stateOperators"]}
    assert names == {"changelogNormalize", "changelogJoin"}
    # Ignored by versions the state holds: order 4's insert of version 1, delivered again after
    # the restart, by its delete of version 2 from before it; customer 40's delete of version 2
    # by its insert of version 3.
    assert run.metric_total("numOutdatedChanges") == 2
    assert [_stored(spark, checkpoint, i) for i in range(len(TABLES))] == STORED_AFTER
    assert [{tuple(row.values()) for row in rows[-1]} for rows in current] == STORED_AFTER
