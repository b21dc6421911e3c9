"""Example: nested LEFT OUTER joins, time-bounded, in a shape Spark's own chain rejects.

Orders LEFT JOIN payments within an hour of the order, LEFT JOIN shipments within two days of
the order, LEFT JOIN delivery scans within a day of the *shipment*: scans hang off shipments,
themselves an outer input. Bounding the scan on the shipment's time (not the order's) makes
Spark's chain fail with MULTIPLE_EVENT_TIME_COLUMNS; one multi-join runs it, evicting state as
the watermark passes, and its output equals the batch query's once a final far-future batch has
moved the watermark past every row. Orders never paid within the hour, orders never shipped
within two days (and so never scanned), and shipments never scanned within the day come out
null-padded.

    python examples/time_bounded_orders.py [--work /tmp/multijoin-time-bounded]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import configure_spark_with_multijoin, multi_join

SCHEMAS = {
    "orders": "order_id int, order_time timestamp, amount double",
    "payments": "pay_order int, pay_time timestamp, paid double",
    "shipments": "ship_order int, ship_time timestamp, carrier string",
    "scans": "scan_order int, scan_time timestamp, depot string",
}
START = datetime(2026, 3, 1)


def generate(folder: Path, batches: int = 4, orders_per_batch: int = 150, seed: int = 3) -> None:
    """One file per stream and batch; a batch covers six hours of orders."""
    rng = random.Random(seed)
    rows = {name: [[] for _ in range(batches + 1)] for name in SCHEMAS}

    def at(hours: float) -> str:
        return (START + timedelta(hours=hours)).isoformat()

    for order_id in range(batches * orders_per_batch):
        batch = order_id // orders_per_batch
        placed = batch * 6 + rng.uniform(0, 6)
        rows["orders"][batch].append({"order_id": order_id, "order_time": at(placed),
                                      "amount": round(rng.uniform(5, 300), 2)})
        if rng.random() < 0.7:  # some paid late or never: null-padded
            rows["payments"][batch].append({"pay_order": order_id, "paid": 1.0,
                                            "pay_time": at(placed + rng.uniform(0, 1.5))})
        if rng.random() < 0.9:
            shipped = placed + rng.uniform(1, 30)
            rows["shipments"][batch].append({"ship_order": order_id, "ship_time": at(shipped),
                                             "carrier": rng.choice(["dhl", "ups"])})
            if rng.random() < 0.6:
                rows["scans"][batch].append({"scan_order": order_id, "depot": "d1",
                                             "scan_time": at(shipped + rng.uniform(0, 30))})
    # A final batch far in the future, joining nothing: it moves the watermark past everything.
    far = at(24 * 365)
    rows["orders"][batches].append({"order_id": -1, "order_time": far, "amount": 0.0})
    rows["payments"][batches].append({"pay_order": -2, "pay_time": far, "paid": 0.0})
    rows["shipments"][batches].append({"ship_order": -3, "ship_time": far, "carrier": "-"})
    rows["scans"][batches].append({"scan_order": -4, "scan_time": far, "depot": "-"})
    for name, per_batch in rows.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        for batch, batch_rows in enumerate(per_batch):
            path = folder / name / f"batch{batch:03d}.json"
            path.write_text("".join(json.dumps(row) + "\n" for row in batch_rows))
            os.utime(path, (1_700_000_000 + batch,) * 2)  # the file source reads by mtime


def order_tracking(orders: DataFrame, payments: DataFrame, shipments: DataFrame,
                   scans: DataFrame) -> DataFrame:
    return (
        orders.withWatermark("order_time", "2 hours")
        .join(payments.withWatermark("pay_time", "2 hours"),
              F.expr("order_id = pay_order AND pay_time BETWEEN order_time AND "
                     "order_time + INTERVAL 1 HOUR"), "left_outer")
        .join(shipments.withWatermark("ship_time", "2 hours"),
              F.expr("order_id = ship_order AND ship_time BETWEEN order_time AND "
                     "order_time + INTERVAL 2 DAYS"), "left_outer")
        .join(scans.withWatermark("scan_time", "2 hours"),
              F.expr("ship_order = scan_order AND scan_time BETWEEN ship_time AND "
                     "ship_time + INTERVAL 1 DAY"), "left_outer"))


@dataclass
class Report:
    plan: str          # the streaming query's physical plan
    lines: list[str]   # what the example found
    same: bool         # whether the streaming answer is the batch query's


def run_example(spark: SparkSession, work: Path) -> Report:
    """Generates the streams under `work`, runs the join as one multi-join into parquet, and
    compares the output with the batch query's."""
    generate(work / "input")
    multi_join(spark).enabled = True
    streams = [spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
               .json(str(work / "input" / name)) for name, schema in SCHEMAS.items()]
    query = (order_tracking(*streams).writeStream.format("parquet")
             .option("path", str(work / "output"))
             .option("checkpointLocation", str(work / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    state = [sum(e["numRowsTotal"] for e in p["stateOperators"]) for p in query.recentProgress]

    tables = [spark.read.schema(schema).json(str(work / "input" / name))
              for name, schema in SCHEMAS.items()]
    # The far-future order is still waiting for its payment: leave it out of the batch answer.
    expected = order_tracking(*tables).where("order_id >= 0")
    output = spark.read.parquet(str(work / "output"))
    same = output.exceptAll(expected).isEmpty() and expected.exceptAll(output).isEmpty()
    return Report(query._jsq.explainInternal(False), [
        f"output rows: {output.count()}, batch answer: {expected.count()}, same rows: {same}",
        f"rows without a payment: {output.where('pay_order IS NULL').count()}, "
        f"without a shipment: {output.where('ship_order IS NULL').count()}, "
        f"without a scan: {output.where('scan_order IS NULL').count()}",
        f"state rows after each batch: {state}",
    ], same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-time-bounded"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)

    builder = (SparkSession.builder.master("local[2]").appName("multijoin-time-bounded")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2"))
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    report = run_example(spark, args.work)
    print(report.plan)
    print("\n".join(report.lines))
    spark.stop()
    if not report.same:
        raise SystemExit("the streaming answer differs from the batch answer")


if __name__ == "__main__":
    main()
