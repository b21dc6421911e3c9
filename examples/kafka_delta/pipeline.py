"""The example's query: Kafka topics in, one multi-join, a Delta table out; and the batch query
it must equal.

Orders JOIN payments within 30 minutes of the order, LEFT JOIN shipments within the hour, LEFT
JOIN reviews within two hours: one inner join and two time-bounded outer joins on the order id,
which the extension fuses into one StreamingMultiJoin. Each joined input's event time is dropped
after its join, so that the order's is the only one left: Spark's own chain of joins then runs
the query too (it refuses a join whose input has two event times), which is what a query being
moved from Spark's chain to the multi-join looks like (kafka_delta/move.py).

The Delta sink writes each micro-batch once: it records the query's id and the batch's id in
the table's log with the batch's files, in one commit, and skips a batch it has already
committed when a restarted query runs it again.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import configure_spark_with_multijoin, multi_join

from .events import LATE_HEADER, TOPICS

ROOT = Path(__file__).resolve().parents[2]
WATERMARK_DELAY = "15 minutes"
# How long after its order each input's rows join it (the query's time bounds).
BOUNDS_SECONDS = {"payments": 30 * 60, "shipments": 3600, "reviews": 2 * 3600}
SCHEMAS = {
    "orders": "order_id bigint, customer string, amount double, order_time timestamp",
    "payments": "payment_id bigint, pay_order bigint, paid double, pay_time timestamp",
    "shipments": "shipment_id bigint, ship_order bigint, carrier string, ship_time timestamp",
    "reviews": "review_id bigint, review_order bigint, stars int, review_time timestamp",
}
EVENT_TIMES = {"orders": "order_time", "payments": "pay_time", "shipments": "ship_time",
               "reviews": "review_time"}
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def connector_jars() -> list[str]:
    """Spark's Kafka connector and Delta Lake for the running pyspark, as scripts/kafka_jars.py
    fetched them at set-up."""
    import pyspark

    folder = ROOT / "target" / "jars" / f"kafka-delta-spark-{pyspark.__version__}"
    jars = sorted(str(jar) for jar in folder.glob("*.jar"))
    if not jars:
        raise SystemExit(f"no Kafka connector or Delta jars in {folder}: run scripts/setup-kafka "
                         "first (it fetches them with Maven)")
    return jars


def spark_session(app: str, shuffle_partitions: int = 2) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]").appName(app)
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .config("spark.jars", ",".join(connector_jars()))
        .config("spark.sql.extensions", DELTA_EXTENSION)
        .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        # A small table's log state in one partition, not Delta's default 50 tasks per commit.
        .config("spark.databricks.delta.snapshotPartitions", "1"))
    # Appends the extension's jar and class after Delta's, and sets the state store, changelog
    # checkpointing and the checkpoint file manager (see docs/kafka-delta.md for what was checked
    # of them with the Delta sink).
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    multi_join(spark).enabled = True
    return spark


def parsed(frame: DataFrame, topic: str) -> DataFrame:
    return (frame.select(F.from_json(F.col("value").cast("string"), SCHEMAS[topic]).alias("e"))
            .select("e.*"))


def read_topic(spark: SparkSession, bootstrap: str, topic: str, max_offsets: int | None,
               starting_offsets: str = "earliest") -> DataFrame:
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", starting_offsets))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return parsed(reader.load(), topic)


def batch_topic(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The topic's full contents, less the rows produced late."""
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("includeHeaders", "true")
             .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    late = F.exists(F.coalesce(F.col("headers"), F.array()),
                    lambda header: header["key"] == F.lit(LATE_HEADER))
    return parsed(frame.where(~late), topic)


def order_facts(orders: DataFrame, payments: DataFrame, shipments: DataFrame,
                reviews: DataFrame) -> DataFrame:
    def watermarked(frame: DataFrame, topic: str) -> DataFrame:
        return frame.withWatermark(EVENT_TIMES[topic], WATERMARK_DELAY)

    return (
        watermarked(orders, "orders")
        .join(watermarked(payments, "payments"), F.expr(
            "order_id = pay_order AND pay_time BETWEEN order_time AND "
            "order_time + INTERVAL 30 MINUTES")).drop("pay_time")
        .join(watermarked(shipments, "shipments"), F.expr(
            "order_id = ship_order AND ship_time BETWEEN order_time AND "
            "order_time + INTERVAL 1 HOUR"), "left_outer").drop("ship_time")
        .join(watermarked(reviews, "reviews"), F.expr(
            "order_id = review_order AND review_time BETWEEN order_time AND "
            "order_time + INTERVAL 2 HOURS"), "left_outer").drop("review_time"))


def streaming_facts(spark: SparkSession, bootstrap: str, max_offsets: int | None = None,
                    starting_offsets: dict[str, str] | None = None,
                    orders_from: str | None = None) -> DataFrame:
    """The query over the topics, each read from the earliest offset unless `starting_offsets`
    gives the topic's (Spark's JSON of partitions and offsets); with `orders_from` (an SQL
    timestamp), over the orders placed from then on."""
    orders, *others = (read_topic(spark, bootstrap, topic, max_offsets,
                                  (starting_offsets or {}).get(topic, "earliest"))
                       for topic in TOPICS)
    if orders_from is not None:
        orders = orders.where(f"order_time >= {orders_from}")
    return order_facts(orders, *others)


def batch_facts(spark: SparkSession, bootstrap: str) -> DataFrame:
    return order_facts(*(batch_topic(spark, bootstrap, topic) for topic in TOPICS))


@dataclass
class Comparison:
    expected: int      # rows of the batch query
    found: int         # rows of the Delta table
    duplicated: int    # rows found more often than expected (counted once per extra copy)
    missing: int       # expected rows not found
    unexpected: int    # rows found that the batch query does not have
    null_padded: int   # expected rows with a null shipment or review

    @property
    def same(self) -> bool:
        return self.duplicated == self.missing == self.unexpected == 0


def compare(spark: SparkSession, bootstrap: str, table: Path) -> Comparison:
    """The Delta table against the batch query over the topics' full contents, row by row."""
    batch = batch_facts(spark, bootstrap)
    expected = Counter(map(tuple, batch.collect()))
    found = Counter(map(tuple, spark.read.format("delta").load(str(table))
                        .select(*batch.columns).collect()))
    outer_ids = [batch.columns.index("shipment_id"), batch.columns.index("review_id")]
    extra = found - expected
    return Comparison(
        expected=sum(expected.values()), found=sum(found.values()),
        duplicated=sum(count for row, count in extra.items() if row in expected),
        missing=sum((expected - found).values()),
        unexpected=sum(count for row, count in extra.items() if row not in expected),
        null_padded=sum(count for row, count in expected.items()
                        if any(row[i] is None for i in outer_ids)))


def dropped_by_watermark(progress: list[dict]) -> int:
    """numRowsDroppedByWatermark of every stateful operator, over every micro-batch once."""
    latest = {p["batchId"]: p for p in progress}
    return sum(op.get("numRowsDroppedByWatermark", 0)
               for p in latest.values() for op in p.get("stateOperators", []))


def offsets_read(progress: list[dict]) -> dict[tuple[str, int], int]:
    """Per topic and partition, the highest end offset of the progress' Kafka sources."""
    read: dict[tuple[str, int], int] = {}
    for entry in progress:
        for source in entry.get("sources", []):
            end = source.get("endOffset") or {}
            for topic, partitions in (json.loads(end) if isinstance(end, str) else end).items():
                for partition, offset in partitions.items():
                    where = (topic, int(partition))
                    read[where] = max(read.get(where, 0), offset)
    return read


def read_progress(path: Path) -> list[dict]:
    """The progress lines a driver wrote; a line cut short by a kill is skipped."""
    progress = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            progress.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return progress
