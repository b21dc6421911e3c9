"""The change data feed example's query and its batch twin.

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

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark_multijoin import changelog

from .changes import TABLES
from .comparison import Comparison, compare_rows

WHERE = "o.status <> 'cancelled' AND coalesce(c.tier, 'none') <> 'blocked'"
# The order's own customer and product ids, and each input's row id: an order, customer and
# product id, null where the LEFT JOIN padded its input.
OUTPUT = ["o.order_id", "o.customer_id", "o.product_id", "o.amount", "o.status",
          "c.customer_id AS cust_id", "c.name", "c.tier", "p.product_id AS prod_id", "p.title",
          "p.price"]
IDENTITY = ["order_id", "cust_id", "prod_id"]
QUERY_NAME = "orders_enriched"


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


def start(spark: SparkSession, sources: Path, target: Path, checkpoint: Path) -> StreamingQuery:
    """The query into `target`, on `checkpoint`: it reads the commits there are when it starts,
    and stops."""
    return (streaming_enriched(spark, sources).writeStream
            .foreachBatch(changelog.delta_merge(str(target), path=True))
            .option("checkpointLocation", str(checkpoint)).queryName(QUERY_NAME)
            .trigger(availableNow=True).start())


def batch_enriched(spark: SparkSession, sources: Path) -> DataFrame:
    return enriched(*(spark.read.format("delta").load(str(sources / table.name))
                      for table in TABLES))


def compare(spark: SparkSession, sources: Path, target: Path) -> Comparison:
    """The target against the batch join over the tables' current rows, row by row."""
    return compare_rows(batch_enriched(spark, sources),
                        spark.read.format("delta").load(str(target)), IDENTITY, IDENTITY[1:])
