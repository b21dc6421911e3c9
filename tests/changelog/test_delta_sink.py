"""delta_merge, the Delta sink of a changelog join, against Delta Lake's own MERGE: a streaming
query of change rows (a left join's output, with null-padded rows) goes through foreachBatch
into a Delta table, which must hold, after each batch, the current rows that applying the
changes in Python gives; a batch a restarted query runs again is skipped; and the transaction
settings never outlive a call.

Delta's jars resolve on one Spark line only (scripts/kafka_jars.py), where scripts/setup-kafka
fetches them; scripts/test runs this file there, in a process of its own, because a session's
jars are fixed when the first session of the process starts. Elsewhere the tests are skipped.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pyspark
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scripts.kafka_jars import DELTA_BY_LINE
from support.delta_session import delta_spark_session
from spark_multijoin import changelog, read_state
from spark_multijoin.changelog import delta_merge
from spark_multijoin.changelog._delta_sink import ROW_ID_METADATA, TXN_APP_ID, TXN_VERSION
from spark_multijoin.testing import Inputs

LINE = ".".join(pyspark.__version__.split(".")[:2])
pytestmark = pytest.mark.skipif(
    LINE not in DELTA_BY_LINE,
    reason=f"Delta's jars resolve for Spark {', '.join(DELTA_BY_LINE)} only (this is "
           f"{pyspark.__version__}); scripts/test runs these tests there")

# A left join of orders with customers: an order without its customer is null-padded, and the
# output identity is both inputs' row ids, the customer's null in a padded row.
COLUMNS = ["order_id", "customer_id", "amount", "name"]
IDENTITY = ["order_id", "customer_id"]
SCHEMA = "order_id int, customer_id int, amount int, name string, _change_type string"
# The change stream, one micro-batch a list. Each edge comes up: a padded row that its match
# replaces, a padded row updated (an `=` match would insert a second one) and deleted, a row
# deleted and its identity inserted again.
BATCHES = [
    [(1, None, 10, None, "insert"), (2, 7, 20, "ann", "insert"), (3, None, 30, None, "insert")],
    [(1, None, 10, None, "delete"), (1, 8, 10, "bob", "insert"),
     (2, 7, 25, "ann", "update_postimage"), (3, None, 35, None, "update_postimage")],
    [(2, 7, 25, "ann", "delete"), (1, 8, 10, "bobby", "update_postimage"),
     (4, None, 40, None, "insert")],
    [(2, 7, 50, "ann", "insert"), (3, None, 35, None, "delete")],
]
FIRST_RUN = 3  # batches; the last one comes after the restart


@pytest.fixture(scope="module")
def delta_spark() -> Iterator[SparkSession]:
    yield from delta_spark_session("delta-sink-tests")


def current_rows(batches: list[list[tuple]]) -> list[tuple]:
    """The join's current rows: the changes applied by identity, in Python."""
    rows: dict[tuple, tuple] = {}
    for batch in batches:
        for *values, change in batch:
            identity = tuple(values[COLUMNS.index(name)] for name in IDENTITY)
            if change == "delete":
                del rows[identity]
            else:
                rows[identity] = tuple(values)
    return ordered(rows.values())


def ordered(rows) -> list[tuple]:
    return sorted((tuple(row) for row in rows), key=repr)


def table_rows(spark: SparkSession, table: Path) -> list[tuple]:
    return ordered(spark.read.format("delta").load(str(table)).select(*COLUMNS).collect())


def with_identity(frame: DataFrame) -> DataFrame:
    """The change rows as a changelog join emits them: the identity in `_change_type`'s
    metadata."""
    change = F.col("_change_type").alias("_change_type", metadata={ROW_ID_METADATA: IDENTITY})
    return frame.select(*COLUMNS, change)


def changes(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    return with_identity(spark.createDataFrame(rows, SCHEMA))


def transactions(table: Path) -> dict[int, dict]:
    """Each commit of the table's log that records a writer's transaction: its `txn` action."""
    found = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in map(json.loads, commit.read_text().splitlines()):
            if "txn" in action:
                found[int(commit.stem)] = action["txn"]
    return found


class Run:
    """The change stream from JSON files, one per micro-batch, into the sink; what the table
    and the session settings were after each call."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.inputs = Inputs(root / "changes", [SCHEMA])
        self.checkpoint = root / "checkpoint"
        self.table = root / "table"
        self.after: dict[int, list[tuple]] = {}  # batch id -> the table's rows
        self.calls: list[int] = []  # the batch id of each call
        self.settings: list[tuple] = []  # the transaction settings after each call
        self.query_ids: list[str] = []

    def add(self, batch_index: int) -> None:
        rows = [dict(zip(COLUMNS + ["_change_type"], row)) for row in BATCHES[batch_index]]
        self.inputs.write_batch(0, batch_index, rows)

    def run(self) -> None:
        """Runs every batch whose file is there (availableNow), as one run of the query."""
        sink = delta_merge(str(self.table), path=True)

        def write(batch: DataFrame, batch_id: int) -> None:
            sink(batch, batch_id)
            self.calls.append(batch_id)
            conf = batch.sparkSession.conf
            self.settings.append((conf.get(TXN_APP_ID, None), conf.get(TXN_VERSION, None)))
            self.after[batch_id] = table_rows(batch.sparkSession, self.table)

        query = (with_identity(self.inputs.streams(self.spark)[0]).writeStream
                 .foreachBatch(write).option("checkpointLocation", str(self.checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        self.query_ids.append(str(query.id))


@pytest.fixture(scope="module")
def first_run(delta_spark, tmp_path_factory) -> Run:
    run = Run(delta_spark, tmp_path_factory.mktemp("delta-sink"))
    for index in range(FIRST_RUN):
        run.add(index)
    run.run()
    return run


def test_after_each_batch_the_table_holds_the_joins_current_rows(first_run):
    assert first_run.calls[:FIRST_RUN] == list(range(FIRST_RUN))
    for batch_id, rows in first_run.after.items():
        assert rows == current_rows(BATCHES[:batch_id + 1]), f"after batch {batch_id}"
    # A padded row and its match, and an updated padded row, once each.
    assert (1, None, 10, None) not in first_run.after[1]
    assert [row for row in first_run.after[1] if row[0] == 3] == [(3, None, 35, None)]
    columns = first_run.spark.read.format("delta").load(str(first_run.table)).columns
    assert columns == COLUMNS


def test_the_settings_are_unset_after_every_call(first_run):
    assert len(first_run.settings) >= FIRST_RUN
    assert set(first_run.settings) == {(None, None)}


def test_a_batch_run_again_after_a_restart_is_skipped(first_run):
    """The last batch's commit is lost (the query died after the MERGE, before it noted the
    batch done): the restarted query runs it again, under the same query id, and Delta skips
    it; the batch after it is written."""
    before = transactions(first_run.table)
    last = FIRST_RUN - 1
    for name in (str(last), f".{last}.crc"):
        (first_run.checkpoint / "commits" / name).unlink(missing_ok=True)
    first_run.add(FIRST_RUN)
    first_run.run()

    assert first_run.calls == list(range(FIRST_RUN)) + [last, FIRST_RUN]
    assert first_run.query_ids[0] == first_run.query_ids[1]
    after = transactions(first_run.table)
    # The table's first commit creates it; each batch's MERGE is one commit, the re-run none.
    assert sorted(after) == list(range(1, FIRST_RUN + 2))
    assert {version: txn for version, txn in after.items() if version in before} == before
    assert [(txn["appId"], txn["version"]) for txn in after.values()] == \
        [(first_run.query_ids[0], batch_id) for batch_id in range(FIRST_RUN + 1)]
    assert table_rows(first_run.spark, first_run.table) == current_rows(BATCHES)

    # Batch 1 again, under the query's id: skipped. Under another writer's id it would bring
    # back the row batch 2 deleted (and batch 3 inserted anew), so the check can fail.
    spark, table = first_run.spark, first_run.table
    delta_merge(str(table), path=True, app_id=first_run.query_ids[0])(
        changes(spark, BATCHES[1]), 1)
    assert table_rows(spark, table) == current_rows(BATCHES)
    delta_merge(str(table), path=True, app_id="another writer")(changes(spark, BATCHES[1]), 1)
    assert (2, 7, 25, "ann") in table_rows(spark, table)


def test_a_later_write_of_the_session_lands(delta_spark, tmp_path):
    """Settings left set would skip the session's next write to the table without a word; a
    MERGE that fails unsets them too."""
    table = tmp_path / "table"
    sink = delta_merge(str(table), path=True, app_id="direct")
    sink(changes(delta_spark, BATCHES[0]), 0)
    assert (delta_spark.conf.get(TXN_APP_ID, None), delta_spark.conf.get(TXN_VERSION, None)) == \
        (None, None)
    delta_spark.sql(f"INSERT INTO delta.`{table}` VALUES (9, 9, 90, 'zed')")
    assert (9, 9, 90, "zed") in table_rows(delta_spark, table)

    twice = [(2, 7, 21, "ann", "update_postimage"), (2, 7, 22, "ann", "update_postimage")]
    with pytest.raises(Exception, match="multiple source rows"):
        sink(changes(delta_spark, twice), 1)
    assert delta_spark.conf.get(TXN_APP_ID, None) is None
    assert delta_spark.conf.get(TXN_VERSION, None) is None


def test_row_id_names_the_identity_the_metadata_does_not(delta_spark, tmp_path):
    """A rename after the join: the metadata names the old column, row_id the new one."""
    table = tmp_path / "table"
    sink = delta_merge(str(table), path=True, row_id=["order", "customer_id"], app_id="direct")
    for batch_id, batch in enumerate(BATCHES[:2]):
        sink(changes(delta_spark, batch).withColumnRenamed("order_id", "order"), batch_id)
    found = delta_spark.read.format("delta").load(str(table))
    assert found.columns == ["order"] + COLUMNS[1:]
    assert ordered(found.collect()) == current_rows(BATCHES[:2])


def test_a_table_named_is_created_in_the_catalog(delta_spark):
    name = "delta_sink_by_name"
    try:
        delta_merge(name, app_id="direct")(changes(delta_spark, BATCHES[0]), 0)
        assert ordered(delta_spark.table(name).collect()) == current_rows(BATCHES[:1])
        assert delta_spark.sql(f"DESCRIBE DETAIL {name}").first()["format"] == "delta"
    finally:
        delta_spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_batch_the_sink_cannot_write_is_refused_saying_why(delta_spark, tmp_path):
    sink = delta_merge(str(tmp_path / "table"), path=True, app_id="direct")
    plain = delta_spark.createDataFrame(BATCHES[0], SCHEMA)
    with pytest.raises(ValueError, match="has no _change_type column"):
        sink(plain.drop("_change_type"), 0)
    with pytest.raises(ValueError, match=r"no 'spark_multijoin.row_id' in its metadata"):
        sink(plain, 0)
    with pytest.raises(ValueError, match=r"names columns the batch does not have: order_id "
                                         r"\(it has order, customer_id, amount, name\)"):
        sink(with_identity(plain).withColumnRenamed("order_id", "order"), 0)
    with pytest.raises(ValueError, match="does not have: _change_type "):
        delta_merge("t", row_id=["order_id", "_change_type"])(plain, 0)
    with pytest.raises(RuntimeError, match="cannot read the streaming query's id"):
        delta_merge(str(tmp_path / "table"), path=True)(changes(delta_spark, BATCHES[0]), 0)
    assert not (tmp_path / "table").exists()


# A changelog join into the sink, for a crash between a MERGE's commit and the query's: orders
# LEFT JOIN customers on the customer's id, each input's changes one file per micro-batch.
ORDERS = "order_id int, customer_id int, amount int, v long, _change_type string"
CUSTOMERS = "customer_id int, name string, v long, _change_type string"
JOINED = ["order_id", "customer_id", "amount", "cust_id", "name"]
# [input][batch] -> (row values..., version, change), each row's versions rising. Every batch changes both inputs: a padded
# order matched, a customer renamed under matched orders, an order moved to another customer,
# a customer deleted (its orders padded again) and inserted anew.
CRASH_CHANGES = [
    [[(1, 10, 5, 1, "insert"), (2, 10, 7, 1, "insert"), (3, 20, 9, 1, "insert")],
     [(2, 10, 7, 1, "update_preimage"), (2, 10, 8, 2, "update_postimage"),
      (4, 30, 1, 1, "insert")],
     [(3, 20, 9, 1, "update_preimage"), (3, 10, 9, 2, "update_postimage"),
      (1, 10, 5, 2, "delete")],
     [(5, 20, 2, 1, "insert")]],
    [[(10, "ann", 1, "insert")],
     [(20, "bob", 1, "insert"), (10, "ann", 1, "update_preimage"),
      (10, "anna", 2, "update_postimage")],
     [(20, "bob", 2, "delete"), (30, "cy", 1, "insert")],
     [(20, "bo", 3, "insert")]],
]
CRASH_BATCH = 1


def crash_inputs(root: Path, batches: int) -> Inputs:
    names = [[field.split()[0] for field in schema.split(", ")] for schema in (ORDERS, CUSTOMERS)]
    inputs = Inputs(root, [ORDERS, CUSTOMERS])
    for i, changes in enumerate(CRASH_CHANGES):
        for b in range(batches):
            inputs.write_batch(i, b, [dict(zip(names[i], row)) for row in changes[b]])
    return inputs


def crash_current(input_index: int, batches: int) -> list[tuple]:
    """An input's current rows after `batches` batches (its changes applied in Python), without
    their version."""
    rows: dict[int, tuple] = {}
    for batch in CRASH_CHANGES[input_index][:batches]:
        for *values, _version, change in batch:
            if change in ("delete", "update_preimage"):
                rows.pop(values[0], None)
            else:
                rows[values[0]] = tuple(values)
    return ordered(rows.values())


def crash_expected(batches: int) -> list[tuple]:
    """The batch query, orders LEFT JOIN customers, over the current rows, in Python."""
    customers = {row[0]: row for row in crash_current(1, batches)}
    return ordered((order_id, customer_id, amount) + customers.get(customer_id, (None, None))
                   for order_id, customer_id, amount in crash_current(0, batches))


def crash_query(spark: SparkSession, inputs: Inputs) -> DataFrame:
    orders, customers = (changelog.declare(frame, row_id=key, row_version="v")
                         for frame, key in zip(inputs.streams(spark), ("order_id", "customer_id")))
    return (orders.alias("o").join(customers.alias("c"), F.expr("o.customer_id = c.customer_id"),
                                   "left")
            .selectExpr("o.order_id", "o.customer_id", "o.amount", "c.customer_id AS cust_id",
                        "c.name"))


def state_rows(spark: SparkSession, checkpoint: Path, batch_id: int) -> list[list[tuple]]:
    return [ordered(read_state(spark, str(checkpoint), i, batch_id=batch_id)
                    .drop("batch_id", "partition_id").collect()) for i in range(2)]


def test_a_batch_run_again_after_a_crash_past_its_merge_goes_on(delta_spark, tmp_path):
    """The driver dies after batch 1's MERGE has committed, before the query commits the batch
    (an exception raised right after the sink returns). The restarted query runs batch 1 again:
    Delta skips its MERGE, the batch still runs (its state stores commit, or Spark fails the
    query: STATE_STORE_COMMIT_VALIDATION_FAILED), the state it commits is the crashed run's,
    and the query goes on: each batch merged once, the table the batch query's after each."""
    spark, checkpoint, table = delta_spark, tmp_path / "checkpoint", tmp_path / "table"
    inputs = crash_inputs(tmp_path / "changes", CRASH_BATCH + 1)
    calls, after = [], {}

    def sink(crash: bool):
        merge = delta_merge(str(table), path=True)

        def write(batch: DataFrame, batch_id: int) -> None:
            merge(batch, batch_id)
            calls.append(batch_id)
            after[batch_id] = ordered(spark.read.format("delta").load(str(table))
                                      .select(*JOINED).collect())
            if crash and batch_id == CRASH_BATCH:
                raise RuntimeError("the driver dies after the MERGE")
        return write

    def run(crash: bool) -> None:
        query = (crash_query(spark, inputs).writeStream.foreachBatch(sink(crash))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .start())
        try:
            query.awaitTermination()
        finally:
            query.stop()

    with pytest.raises(Exception, match="the driver dies after the MERGE"):
        run(crash=True)
    assert not (checkpoint / "commits" / str(CRASH_BATCH)).exists()
    # The state the crashed run's stores committed for the batch: read from a copy of the
    # checkpoint in which the batch is marked committed (read_state reads committed batches).
    crashed = tmp_path / "crashed-checkpoint"
    shutil.copytree(checkpoint, crashed)
    shutil.copy(crashed / "commits" / str(CRASH_BATCH - 1), crashed / "commits" / str(CRASH_BATCH))
    crashed_state = state_rows(spark, crashed, CRASH_BATCH)
    assert crashed_state == [crash_current(i, CRASH_BATCH + 1) for i in range(2)]

    batches = len(CRASH_CHANGES[0])
    inputs = crash_inputs(tmp_path / "changes", batches)
    run(crash=False)

    assert calls == [0, 1, 1] + list(range(2, batches))
    for batch_id in range(batches):
        assert after[batch_id] == crash_expected(batch_id + 1), f"after batch {batch_id}"
    assert state_rows(spark, checkpoint, CRASH_BATCH) == crashed_state
    assert state_rows(spark, checkpoint, batches - 1) == \
        [crash_current(i, batches) for i in range(2)]
    written = transactions(table)
    assert [txn["version"] for _, txn in sorted(written.items())] == list(range(batches))
