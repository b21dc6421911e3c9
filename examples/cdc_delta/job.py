"""The example's query and its batch twin.

Each source table's change data feed, read from its first version, is declared a changelog
(`changelog.delta_cdf`, its primary key the row id). Orders LEFT JOIN customers on the customer,
LEFT JOIN products on the product: two keys, so two changelog joins, the second taking the
first's changes as an input. A filter reads the order's status and the customer's tier, both of
which updates change (a row that stops passing is deleted from the output, and comes back when
it passes again), and the select keeps each input's row id, the output identity. The change
stream goes through `changelog.delta_merge` into the target Delta table, exactly once.

The batch twin is the same join over the tables' current rows, read as plain Delta tables: the
target must hold exactly its rows once the query has read every commit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark_multijoin import changelog

from .changes import TABLES

WHERE = "o.status <> 'cancelled' AND coalesce(c.tier, 'none') <> 'blocked'"
# The order's own customer and product ids, and each input's row id: an order, customer and
# product id, null where the LEFT JOIN padded its input.
OUTPUT = ["o.order_id", "o.customer_id", "o.product_id", "o.amount", "o.status",
          "c.customer_id AS cust_id", "c.name", "c.tier", "p.product_id AS prod_id", "p.title",
          "p.price"]
IDENTITY = ["order_id", "cust_id", "prod_id"]
QUERY_NAME = "orders_enriched"
# Without an interval an idle query asks each table's log for new commits every few
# milliseconds, which takes a core from whatever else runs.
POLL_INTERVAL = "1 second"


def enriched(orders: DataFrame, customers: DataFrame, products: DataFrame) -> DataFrame:
    return (orders.alias("o")
            .join(customers.alias("c"), F.col("o.customer_id") == F.col("c.customer_id"), "left")
            .join(products.alias("p"), F.col("o.product_id") == F.col("p.product_id"), "left")
            .where(WHERE).selectExpr(*OUTPUT))


def change_feed(spark: SparkSession, path: Path) -> DataFrame:
    return (spark.readStream.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 0).load(str(path)))


def streaming_enriched(spark: SparkSession, sources: Path) -> DataFrame:
    """The join of the tables' change feeds: its rows are the join's changes, `_change_type`
    saying which."""
    return enriched(*(changelog.delta_cdf(change_feed(spark, sources / table.name),
                                          row_id=table.key) for table in TABLES))


def start(spark: SparkSession, sources: Path, target: Path, checkpoint: Path,
          available_now: bool = False) -> StreamingQuery:
    """The query into `target`, on `checkpoint`; with `available_now`, it reads the commits
    there are when it starts and stops, else it looks for new ones every POLL_INTERVAL."""
    writer = (streaming_enriched(spark, sources).writeStream
              .foreachBatch(changelog.delta_merge(str(target), path=True))
              .option("checkpointLocation", str(checkpoint)).queryName(QUERY_NAME))
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=POLL_INTERVAL).start()


def batch_enriched(spark: SparkSession, sources: Path) -> DataFrame:
    return enriched(*(spark.read.format("delta").load(str(sources / table.name))
                      for table in TABLES))


@dataclass
class Comparison:
    expected: int        # rows of the batch join
    found: int           # rows of the target
    missing: int         # expected rows the target lacks
    unexpected: int      # target rows the batch join does not have (extra copies included)
    duplicate_ids: int   # output identities the target holds more than once
    padded: int          # expected rows with a null-padded customer or product
    samples: dict[str, list[tuple]] = field(default_factory=dict)  # a few of each difference

    @property
    def same(self) -> bool:
        return self.missing == self.unexpected == self.duplicate_ids == 0

    def line(self) -> str:
        return (f"rows expected {self.expected}, found {self.found}, missing {self.missing}, "
                f"unexpected {self.unexpected}, identities twice {self.duplicate_ids} "
                f"(null-padded: {self.padded})")


def compare(spark: SparkSession, sources: Path, target: Path) -> Comparison:
    """The target against the batch join over the tables' current rows, row by row."""
    batch = batch_enriched(spark, sources)
    expected = Counter(map(tuple, batch.collect()))
    found = Counter(map(tuple, spark.read.format("delta").load(str(target))
                        .select(*batch.columns).collect()))
    ids = [batch.columns.index(name) for name in IDENTITY]
    identities = Counter(tuple(row[i] for i in ids) for row in found.elements())
    missing, unexpected = expected - found, found - expected
    return Comparison(
        expected=sum(expected.values()), found=sum(found.values()),
        missing=sum(missing.values()), unexpected=sum(unexpected.values()),
        duplicate_ids=sum(count > 1 for count in identities.values()),
        padded=sum(count for row, count in expected.items()
                   if row[ids[1]] is None or row[ids[2]] is None),
        samples={"missing": sorted(missing, key=repr)[:5],
                 "unexpected": sorted(unexpected, key=repr)[:5]})
