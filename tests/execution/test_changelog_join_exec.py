"""The changelog join's operator on hand-made changes: what it does with CDC's duplicate and
out-of-order deliveries, the errors that name a bad change, restarts with another declaration,
and its state as `read_state` shows it. The randomized differential test is
tests/changelog/test_changelog_joins.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import changelog, read_state
from spark_multijoin.testing import Inputs

# The net changes' step reads a shuffle by identity.
NET_CHANGES_SHUFFLED = r"ChangelogNetChanges .*\n\s*\+- Exchange hashpartitioning"
SCHEMAS = ["oid int, cid int, amount int, v long, _change_type string",
           "cid int, name string, v long, _change_type string"]


def _change(kind: str, version: int, **row) -> dict:
    return {**row, "v": version, "_change_type": kind}


def _joined(frames: list[DataFrame]) -> DataFrame:
    orders = changelog.declare(frames[0], "oid", "v").alias("o")
    customers = changelog.declare(frames[1], "cid", "v").alias("c")
    return orders.join(customers, F.col("o.cid") == F.col("c.cid"), "left").select(
        "o.oid", "o.amount", F.col("c.cid").alias("ccid"), "c.name")


def _run(spark: SparkSession, joined: DataFrame | Inputs, checkpoint: Path,
         plans: list[str] | None = None,
         applied: dict[tuple, tuple] | None = None) -> tuple[dict, dict]:
    """Runs `joined` (or `_joined` over the inputs' batches); returns the changes applied by
    identity (to `applied`, the table an earlier run left), and the stateful operators' custom
    metrics summed over the micro-batches; adds the last micro-batch's physical plan to
    `plans`."""
    if isinstance(joined, Inputs):
        joined = _joined(joined.streams(spark))
    applied = {} if applied is None else applied

    def apply(batch: DataFrame, _: int) -> None:
        for row in batch.collect():
            values = row.asDict()
            identity = (values["oid"], values["ccid"])
            if values.pop("_change_type") == "delete":
                applied.pop(identity, None)
            else:
                applied[identity] = tuple(values.values())

    query = (joined.writeStream.foreachBatch(apply)
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        query.processAllAvailable()
        if plans is not None:
            plans.append(query._jsq.explainInternal(False))
    finally:
        query.stop()
    totals: dict[str, int] = {}
    for progress in query.recentProgress:
        for operator in progress["stateOperators"]:
            for name, value in operator["customMetrics"].items():
                totals[name] = totals.get(name, 0) + value
    return applied, totals


def _batch_query(spark: SparkSession, orders: list[tuple], customers: list[tuple]) -> set:
    frames = [spark.createDataFrame(rows, schema.rsplit(", v long", 1)[0]) for rows, schema in
              zip((orders, customers), SCHEMAS)]
    o, c = frames[0].alias("o"), frames[1].alias("c")
    joined = o.join(c, F.col("o.cid") == F.col("c.cid"), "left")
    return set(map(tuple, joined.select("o.oid", "o.amount", "c.cid", "c.name").collect()))


@pytest.mark.line_shared
def test_duplicates_and_late_changes_apply_once(spark: SparkSession, tmp_path: Path) -> None:
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [_change("insert", 1, oid=1, cid=10, amount=5),
                              _change("insert", 2, oid=2, cid=20, amount=7)])
    inputs.write_batch(1, 0, [_change("insert", 1, cid=10, name="a"),
                              _change("delete", 5, cid=99, name=None)])   # never seen
    inputs.write_batch(0, 1, [_change("insert", 1, oid=1, cid=10, amount=5),   # duplicate
                              _change("insert", 3, oid=2, cid=20, amount=8),   # live: upsert
                              _change("delete", 0, oid=2, cid=20, amount=7)])  # late, older
    inputs.write_batch(1, 1, [_change("update_preimage", 2, cid=10, name="a"),
                              _change("update_postimage", 2, cid=10, name="b"),
                              _change("insert", 1, cid=99, name="z")])  # older than its delete
    applied, metrics = _run(spark, inputs, tmp_path / "checkpoint")
    expected = _batch_query(spark, [(1, 10, 5), (2, 20, 8)], [(10, "b")])
    assert set(applied.values()) == expected
    assert metrics["numOutdatedChanges"] == 3
    assert metrics["numIdempotentChanges"] == 2


@pytest.mark.line_shared
def test_an_upsert_moving_a_row_to_another_key(spark: SparkSession, tmp_path: Path) -> None:
    """An upsert has no old image: the row's old key is known only by its row id."""
    inputs = Inputs(tmp_path / "in", ["oid int, cid int, amount int, partition int, offset long",
                                      SCHEMAS[1]])
    inputs.write_batch(0, 0, [{"oid": 1, "cid": 10, "amount": 5, "partition": 0, "offset": 1}])
    inputs.write_batch(1, 0, [_change("insert", 1, cid=10, name="a"),
                              _change("insert", 1, cid=20, name="b")])
    inputs.write_batch(0, 1, [{"oid": 1, "cid": 20, "amount": 6, "partition": 0, "offset": 2},
                              {"oid": 1, "cid": 10, "amount": 5, "partition": 0, "offset": 1}])
    inputs.write_batch(1, 1, [])
    frames = inputs.streams(spark)
    orders = changelog.upsert(frames[0], "oid").alias("o")
    customers = changelog.declare(frames[1], "cid", "v").alias("c")
    joined = orders.join(customers, F.col("o.cid") == F.col("c.cid"), "left").select(
        "o.oid", "o.amount", F.col("c.cid").alias("ccid"), "c.name")
    plans: list[str] = []
    applied, metrics = _run(spark, joined, tmp_path / "checkpoint", plans)
    assert set(applied.values()) == _batch_query(spark, [(1, 20, 6)], [(10, "a"), (20, "b")])
    assert metrics["numOutdatedChanges"] == 1
    # The order's delete under one customer and its insert under the other meet by identity.
    assert re.search(NET_CHANGES_SHUFFLED, plans[0]), plans[0]


@pytest.mark.parametrize("change, says", [
    (_change("insert", 1, oid=None, cid=10, amount=1),
     r"The ordering by row id of o, a changelog: a change of o with row id \[oid=null\] has "
     r"a null in its row id"),
    (_change("merge", 1, oid=3, cid=10, amount=1), r"row id \[oid=3\] has the type 'merge'"),
    ({"oid": 4, "cid": 10, "_change_type": "insert"}, r"row id \[oid=4\] has a null row version"),
])
@pytest.mark.line_shared
def test_a_bad_change_fails_naming_it(spark: SparkSession, tmp_path: Path, change: dict,
                                      says: str) -> None:
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [change])
    inputs.write_batch(1, 0, [])
    with pytest.raises(StreamingQueryException, match=says):
        _run(spark, inputs, tmp_path / "checkpoint")


@pytest.mark.line_shared
def test_an_upsert_in_a_full_changelog_keyed_outside_its_row_id_fails(
        spark: SparkSession, tmp_path: Path) -> None:
    """A full changelog skips the ordering by row id, which alone finds an upsert's old key."""
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [_change("upsert", 1, oid=1, cid=10, amount=5)])
    inputs.write_batch(1, 0, [])
    frames = inputs.streams(spark)
    orders = changelog.declare(frames[0], "oid", "v", full_changelog=True).alias("o")
    customers = changelog.declare(frames[1], "cid", "v").alias("c")
    joined = orders.join(customers, F.col("o.cid") == F.col("c.cid"), "left").select(
        "o.oid", "o.amount", F.col("c.cid").alias("ccid"), "c.name")
    with pytest.raises(StreamingQueryException, match=r"is an upsert, which has no old image"):
        _run(spark, joined, tmp_path / "checkpoint")


def test_a_restart_with_another_row_id_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [_change("insert", 1, oid=1, cid=10, amount=5)])
    inputs.write_batch(1, 0, [_change("insert", 1, cid=10, name="a")])
    _run(spark, inputs, tmp_path / "checkpoint")
    inputs.write_batch(0, 1, [_change("insert", 2, oid=2, cid=10, amount=5)])
    redeclared = ["oid int, cid int, amount int, v long, _change_type string",
                  "cid int, name string, v long, _change_type string"]
    frames = Inputs(tmp_path / "in", redeclared).streams(spark)
    orders = changelog.declare(frames[0], ["oid", "amount"], "v").alias("o")
    customers = changelog.declare(frames[1], "cid", "v").alias("c")
    joined = orders.join(customers, F.col("o.cid") == F.col("c.cid"), "left")
    query = (joined.writeStream.foreachBatch(lambda *_: None)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    with pytest.raises(StreamingQueryException,
                       match=r"the row id of its input 0 \(o\) was oid, now oid, amount"):
        query.processAllAvailable()


@pytest.mark.line_shared
def test_read_state_shows_the_live_rows(spark: SparkSession, tmp_path: Path) -> None:
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [_change("insert", 1, oid=1, cid=10, amount=5),
                              _change("insert", 2, oid=2, cid=20, amount=7)])
    inputs.write_batch(1, 0, [_change("insert", 1, cid=10, name="a")])
    inputs.write_batch(0, 1, [_change("update_preimage", 3, oid=1, cid=10, amount=5),
                              _change("update_postimage", 3, oid=1, cid=20, amount=6),
                              _change("delete", 4, oid=2, cid=20, amount=7)])
    inputs.write_batch(1, 1, [_change("delete", 2, cid=10, name="a")])
    _run(spark, inputs, tmp_path / "checkpoint")
    orders = read_state(spark, tmp_path / "checkpoint", 0).select("oid", "cid", "amount")
    customers = read_state(spark, tmp_path / "checkpoint", 1)
    assert set(map(tuple, orders.collect())) == {(1, 20, 6)}
    assert customers.count() == 0


def test_a_checkpoint_in_state_format_1_resumes_in_it(spark: SparkSession,
                                                      tmp_path: Path) -> None:
    """A checkpoint written in the first state format (as versions before format 2 wrote it)
    resumes in it, in the join and in the ordering by row id of the orders, whose key is not
    their row id; its answer and `read_state` are the same as a new checkpoint's in format 2."""
    inputs = Inputs(tmp_path / "in", SCHEMAS)
    inputs.write_batch(0, 0, [_change("insert", 1, oid=1, cid=10, amount=5),
                              _change("insert", 2, oid=2, cid=20, amount=7)])
    inputs.write_batch(1, 0, [_change("insert", 1, cid=10, name="a")])
    old, plans = tmp_path / "format1", []
    spark.conf.set("multi-join.changelog-state-format", "1")
    try:
        applied, _ = _run(spark, inputs, old, plans)
    finally:
        spark.conf.unset("multi-join.changelog-state-format")
    inputs.write_batch(0, 1, [_change("update_preimage", 3, oid=1, cid=10, amount=5),
                              _change("update_postimage", 3, oid=1, cid=20, amount=6),
                              _change("insert", 1, oid=2, cid=20, amount=7),  # late, older
                              _change("insert", 4, oid=3, cid=10, amount=9)])
    inputs.write_batch(1, 1, [_change("insert", 1, cid=20, name="b"),
                              _change("delete", 2, cid=10, name="a")])
    applied, _ = _run(spark, inputs, old, plans, applied)
    new, new_plans = tmp_path / "format2", []
    fresh, _ = _run(spark, inputs, new, new_plans)
    assert [re.findall(r"state=operator \d+ in format (\d)", plan) for plan in plans] == \
        [["1"]] * 2, plans
    assert all("ChangelogNormalize" in plan and "state format 1" in plan for plan in plans)
    assert "in format 2" in new_plans[-1] and "state format 2" in new_plans[-1], new_plans[-1]
    expected = _batch_query(spark, [(1, 20, 6), (2, 20, 7), (3, 10, 9)], [(20, "b")])
    assert set(applied.values()) == set(fresh.values()) == expected
    for checkpoint in (old, new):
        orders = read_state(spark, checkpoint, 0).select("oid", "cid", "amount")
        assert set(map(tuple, orders.collect())) == {(1, 20, 6), (2, 20, 7), (3, 10, 9)}
