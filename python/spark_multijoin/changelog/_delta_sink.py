"""The Delta sink of a changelog join: a foreachBatch function that MERGEs each micro-batch of the
change stream into a Delta table, so that the table holds the join's current rows.

    from spark_multijoin.changelog import delta_merge

    (joined.writeStream.foreachBatch(delta_merge("orders_current"))
     .option("checkpointLocation", checkpoint).start())

A change stream's rows are the join's columns and `_change_type` (`insert`, `update_postimage`
or `delete`, at most one row per output identity per micro-batch; a delete carries the old
row's values). The output identity is a list of columns, null where an input is null-padded,
that the `_change_type` field's metadata names under `spark_multijoin.row_id`.

Each micro-batch is written once however often a restarted query runs it again: Delta records
the writer's id (the streaming query's id, which its checkpoint keeps across restarts) and the
batch id with the MERGE's commit, and skips a MERGE whose batch id is at or below the one it
recorded for that writer. A skipped MERGE reads none of its source, so the batch is then run
into Spark's `noop` sink: the query's stateful operators must commit every batch they run (a
batch that runs again after a crash between the MERGE's commit and the query's), or Spark fails
the query (`STATE_STORE_COMMIT_VALIDATION_FAILED`).
"""

from __future__ import annotations

import uuid
from typing import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from spark_multijoin.changelog._declare import CHANGE_TYPE_COLUMN, _names

# Where a changelog join's output names its identity: the `_change_type` field's metadata, which
# a foreachBatch DataFrame's schema keeps.
ROW_ID_METADATA = "spark_multijoin.row_id"
# Delta's idempotent DML: a write made with both set is skipped when the table has recorded a
# version at or above txnVersion for txnAppId. They are session settings (MERGE takes no writer
# options), read by every later write of the session too: set them for the MERGE alone.
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
# Spark sets it on the thread that runs a query's micro-batches; PySpark's pinned threads (on by
# default) run the foreachBatch function's calls into the JVM on that thread.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
DELETE = "delete"


def delta_merge(target: str, *, path: bool = False, row_id: str | Sequence[str] | None = None,
                app_id: str | None = None) -> Callable[[DataFrame, int], None]:
    """A foreachBatch function that MERGEs each micro-batch of a changelog join's change stream
    into the Delta table `target`, a table name or, with `path=True`, a path.

    Rows match by the output identity, null-safely: a `delete` removes the matched row, any other
    change updates it (every column but `_change_type`) or inserts it. The first batch creates
    the table, with the batch's columns but `_change_type`, if it does not exist.

    `row_id` names the identity's columns where the batch's `_change_type` field does not (the
    metadata is lost when a query rebuilds that column, and names the join's columns, not those
    of a rename after it). `app_id` is the id Delta records the batches under; by default the
    streaming query's id, which stays the same for the life of its checkpoint. Give one where
    that id cannot be read (Spark Connect, or PYSPARK_PIN_THREAD=false), and a new one whenever
    the checkpoint is started anew: batch ids start again from 0, and Delta would skip them.
    """
    table = f"delta.{_quoted(target)}" if path else target
    explicit = None if row_id is None else _names("row_id", row_id)
    created = False

    def write(batch: DataFrame, batch_id: int) -> None:
        nonlocal created
        identity = output_identity(batch.schema, explicit)
        writer = app_id or _query_id(batch.sparkSession)
        if not created:  # once per start of the query: it asks the catalog or the log
            _create_if_absent(batch, target, path)
            created = True
        _merge_once(batch, table, identity, writer, batch_id)

    return write


def output_identity(schema: StructType, row_id: list[str] | None = None) -> list[str]:
    """The identity's columns: `row_id` if given, else those `_change_type`'s metadata names."""
    fields = {field.name: field for field in schema.fields}
    if CHANGE_TYPE_COLUMN not in fields:
        raise ValueError(f"the batch has no {CHANGE_TYPE_COLUMN} column (it has "
                         f"{', '.join(fields)}): delta_merge writes a changelog join's change "
                         f"stream, whose rows say their change in {CHANGE_TYPE_COLUMN}")
    identity = row_id if row_id is not None else \
        fields[CHANGE_TYPE_COLUMN].metadata.get(ROW_ID_METADATA)
    if identity is None:
        raise ValueError(f"the batch's {CHANGE_TYPE_COLUMN} column carries no output identity "
                         f"(no {ROW_ID_METADATA!r} in its metadata: a query that rebuilds the "
                         f"column drops it); name its columns with delta_merge(..., row_id=[...])")
    identity = _names(ROW_ID_METADATA, identity)
    absent = [name for name in identity if name not in fields or name == CHANGE_TYPE_COLUMN]
    if absent:
        data = [name for name in fields if name != CHANGE_TYPE_COLUMN]
        raise ValueError(f"the output identity names columns the batch does not have: "
                         f"{', '.join(absent)} (it has {', '.join(data)}); name the identity "
                         f"with delta_merge(..., row_id=[...])")
    return identity


def _query_id(session: SparkSession) -> str:
    try:
        context = session.sparkContext
    except NotImplementedError:  # Spark Connect has no SparkContext on the client
        context = None
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    if not query_id:
        raise RuntimeError("delta_merge cannot read the streaming query's id in this call (it "
                           "is read on the query's thread, which Spark Connect and "
                           "PYSPARK_PIN_THREAD=false do not give): pass "
                           "delta_merge(..., app_id=...), an id that stays the same for the "
                           "life of the query's checkpoint")
    return query_id


def _create_if_absent(batch: DataFrame, target: str, path: bool) -> None:
    """Creates the table empty, before the MERGE and outside its transaction settings: a
    creating commit would record the batch as written, and the MERGE would be skipped."""
    schema = StructType([field for field in batch.schema.fields
                         if field.name != CHANGE_TYPE_COLUMN])
    writer = batch.sparkSession.createDataFrame([], schema).write.format("delta").mode("ignore")
    if path:
        writer.save(target)
    else:
        writer.saveAsTable(target)


def _merge_once(batch: DataFrame, table: str, identity: list[str], app_id: str,
                batch_id: int) -> None:
    # Delta's MERGE reads its source twice; by default it first materializes a source that is
    # not a Delta scan, so the batch's plan (the stateful join) runs once.
    session = batch.sparkSession
    view = f"spark_multijoin_changes_{uuid.uuid4().hex}"
    batch.createOrReplaceTempView(view)
    columns = [name for name in batch.columns if name != CHANGE_TYPE_COLUMN]
    try:
        session.conf.set(TXN_APP_ID, app_id)
        session.conf.set(TXN_VERSION, str(batch_id))
        metrics = session.sql(merge_statement(table, view, identity, columns)).collect()
    finally:
        session.conf.unset(TXN_APP_ID)
        session.conf.unset(TXN_VERSION)
        session.catalog.dropTempView(view)
    if not metrics:  # Delta answers a MERGE it skips with no row of metrics
        batch.write.format("noop").mode("overwrite").save()


def merge_statement(table: str, source: str, identity: list[str], columns: list[str]) -> str:
    """The MERGE of the change rows in `source` into `table`, matched by `identity`."""
    matched = " AND ".join(f"t.{_quoted(name)} <=> s.{_quoted(name)}" for name in identity)
    change = f"s.{_quoted(CHANGE_TYPE_COLUMN)}"
    updates = ", ".join(f"t.{_quoted(name)} = s.{_quoted(name)}" for name in columns)
    names = ", ".join(map(_quoted, columns))
    values = ", ".join(f"s.{_quoted(name)}" for name in columns)
    return (f"MERGE INTO {table} AS t USING {source} AS s ON {matched} "
            f"WHEN MATCHED AND {change} = '{DELETE}' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED AND {change} <> '{DELETE}' THEN INSERT ({names}) VALUES ({values})")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
