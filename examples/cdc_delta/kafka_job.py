"""The CDC example on Kafka: its query over the Debezium topics, and its batch twin.

Each topic is read from its earliest offset, its values parsed into Debezium's envelope, and
declared a changelog with `changelog.debezium` (the table's primary key the row id, the log
position `source.lsn` the row version; tombstones are dropped). The topics carry whole `before`
images (REPLICA IDENTITY FULL) and each row's messages in order (keyed by the row id), so each
is declared a full changelog (`full_before=True`). Orders JOIN order items, LEFT JOIN payments,
LEFT JOIN shipments on the order id: one changelog join; that LEFT JOIN customers on the
order's customer: a second, stacked on the first and taking its changes. An item, a payment or
a shipment can move to another order: its update's `before` names the order it leaves. The
select keeps every input's row id, the output identity that `changelog.delta_merge` MERGEs the
change stream into the Delta table by, exactly once.

The batch twin reads each topic whole, keeps each row id's last message by `source.lsn` (the
row as it is, or gone if that message deletes it: the table's final snapshot) and runs the same
join: the target must hold exactly its rows once the query has read every message.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark_multijoin import changelog

from .comparison import Comparison, compare_rows
from .topics import TABLES, Table, envelope_schema, topic

OUTPUT = ["o.order_id", "o.customer_id", "o.status", "o.amount", "i.item_id", "i.sku",
          "i.quantity", "p.payment_id", "p.method", "p.paid", "s.shipment_id", "s.carrier",
          "c.customer_id AS cust_id", "c.name", "c.tier"]
# Each input's row id; the payment's, the shipment's and the customer's null where the LEFT
# JOINs padded them.
IDENTITY = ["order_id", "item_id", "payment_id", "shipment_id", "cust_id"]
QUERY_NAME = "order_lines"
# Without an interval an idle query asks the broker for the topics' latest offsets every few
# milliseconds, which takes a core from whatever else runs.
POLL_INTERVAL = "1 second"


def order_lines(orders: DataFrame, items: DataFrame, payments: DataFrame, shipments: DataFrame,
                customers: DataFrame) -> DataFrame:
    def on_order(alias: str) -> Column:
        return F.col("o.order_id") == F.col(f"{alias}.order_id")

    return (orders.alias("o")
            .join(items.alias("i"), on_order("i"))
            .join(payments.alias("p"), on_order("p"), "left")
            .join(shipments.alias("s"), on_order("s"), "left")
            .join(customers.alias("c"), F.col("o.customer_id") == F.col("c.customer_id"), "left")
            .selectExpr(*OUTPUT))


def envelopes(messages: DataFrame, table: Table) -> DataFrame:
    """The messages' values as Debezium's envelope; a tombstone's columns are all null."""
    value = F.from_json(F.col("value").cast("string"), envelope_schema(table))
    return messages.select(value.alias("m")).select("m.*")


def changes(spark: SparkSession, bootstrap: str, table: Table,
            max_offsets: int | None) -> DataFrame:
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic(table)).option("startingOffsets", "earliest"))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return changelog.debezium(envelopes(reader.load(), table), row_id=table.key,
                              full_before=True)


def start(spark: SparkSession, bootstrap: str, target: Path, checkpoint: Path,
          max_offsets: int | None = None) -> StreamingQuery:
    """The query into `target`, on `checkpoint`, each topic read in steps of `max_offsets`."""
    joined = order_lines(*(changes(spark, bootstrap, table, max_offsets) for table in TABLES))
    return (joined.writeStream.foreachBatch(changelog.delta_merge(str(target), path=True))
            .option("checkpointLocation", str(checkpoint)).queryName(QUERY_NAME)
            .trigger(processingTime=POLL_INTERVAL).start())


def messages(spark: SparkSession, bootstrap: str, table: Table) -> DataFrame:
    """Every message of the table's topic, as a batch."""
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic(table)).option("startingOffsets", "earliest")
            .option("endingOffsets", "latest").load())


def final_snapshot(spark: SparkSession, bootstrap: str, table: Table) -> DataFrame:
    """The table's rows after its last message: each row id's last change by `source.lsn`,
    unless it deletes the row."""
    changed = envelopes(messages(spark, bootstrap, table), table).where("op IS NOT NULL")
    row_id = F.coalesce(F.col("after"), F.col("before")).getField(table.key)
    last = (changed.groupBy(row_id.alias("row_id"))
            .agg(F.max_by(F.struct("op", "after"), F.col("source.lsn")).alias("last")))
    return last.where("last.op <> 'd'").select("last.after.*")


def batch_order_lines(spark: SparkSession, bootstrap: str) -> DataFrame:
    return order_lines(*(final_snapshot(spark, bootstrap, table) for table in TABLES))


def compare(spark: SparkSession, bootstrap: str, target: Path) -> Comparison:
    """The target against the batch join of the topics' final snapshots, row by row."""
    return compare_rows(batch_order_lines(spark, bootstrap),
                        spark.read.format("delta").load(str(target)), IDENTITY, IDENTITY[2:])


def topic_sizes(spark: SparkSession, bootstrap: str) -> dict[str, int]:
    """How many messages each topic holds, tombstones included."""
    return {topic(table): messages(spark, bootstrap, table).count() for table in TABLES}
