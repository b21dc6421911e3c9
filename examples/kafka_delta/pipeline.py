"""The example's query: Kafka topics in, one multi-join, a Delta table out; and the batch query
it must equal.

Orders JOIN payments within 30 minutes of the order, LEFT JOIN shipments within the hour, LEFT
JOIN reviews within two hours: one inner join and two time-bounded outer joins on the order id,
which the extension fuses into one StreamingMultiJoin. The Delta sink writes each micro-batch
once: it records the query's id and the batch's id in the table's log with the batch's files, in
one commit, and skips a batch it has already committed when a restarted query runs it again.
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
WATERMARK_DELAY = "10 minutes"
# The longest time bound of the query: how long an order waits for its last outer input.
LONGEST_BOUND_SECONDS = 2 * 3600
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
            "order_time + INTERVAL 30 MINUTES"))
        .join(watermarked(shipments, "shipments"), F.expr(
            "order_id = ship_order AND ship_time BETWEEN order_time AND "
            "order_time + INTERVAL 1 HOUR"), "left_outer")
        .join(watermarked(reviews, "reviews"), F.expr(
            "order_id = review_order AND review_time BETWEEN order_time AND "
            "order_time + INTERVAL 2 HOURS"), "left_outer"))


def streaming_facts(spark: SparkSession, bootstrap: str,
                    max_offsets: int | None = None) -> DataFrame:
    return order_facts(*(read_topic(spark, bootstrap, topic, max_offsets) for topic in TOPICS))


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

    def line(self) -> str:
        return (f"rows expected {self.expected}, found {self.found}, duplicated "
                f"{self.duplicated}, missing {self.missing}, unexpected {self.unexpected} "
                f"(null-padded rows expected: {self.null_padded})")


def compare(spark: SparkSession, bootstrap: str, table: Path) -> Comparison:
    """The Delta table against the batch query over the topics' full contents, row by row."""
    expected = Counter(map(tuple, batch_facts(spark, bootstrap).collect()))
    found = Counter(map(tuple, spark.read.format("delta").load(str(table)).collect()))
    extra = found - expected
    return Comparison(
        expected=sum(expected.values()), found=sum(found.values()),
        duplicated=sum(count for row, count in extra.items() if row in expected),
        missing=sum((expected - found).values()),
        unexpected=sum(count for row, count in extra.items() if row not in expected),
        null_padded=sum(count for row, count in expected.items()
                        if row[SHIPMENT_ID] is None or row[REVIEW_ID] is None))


# The positions of the outer inputs' ids in an output row.
_COLUMNS = [c.split()[0] for topic in TOPICS for c in SCHEMAS[topic].split(", ")]
SHIPMENT_ID = _COLUMNS.index("shipment_id")
REVIEW_ID = _COLUMNS.index("review_id")


def dropped_by_watermark(progress: list[dict]) -> int:
    """numRowsDroppedByWatermark of every stateful operator, over every micro-batch once."""
    latest = {p["batchId"]: p for p in progress}
    return sum(op.get("numRowsDroppedByWatermark", 0)
               for p in latest.values() for op in p.get("stateOperators", []))


def read_progress(path: Path) -> list[dict]:
    """The progress lines a driver wrote; a line cut short by a kill is skipped."""
    progress = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            progress.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return progress
