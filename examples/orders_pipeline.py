"""Example: orders joined with their payments, shipments and reviews as streams of files.

Generates a few micro-batches of JSON files per stream under a work folder (or reads yours with
--input), runs the four-way join with spark-multijoin enabled into parquet, prints the plan and
compares the state it kept with Spark's own chain of joins over the same files.

    python examples/orders_pipeline.py [--work /tmp/multijoin-example] [--input FOLDER]

FOLDER holds one sub-folder per stream (orders, payments, shipments, reviews) of JSON files.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from spark_multijoin import configure_spark_with_multijoin, multi_join

SCHEMAS = {
    "orders": "order_id int, customer string, amount double",
    "payments": "order_id int, method string, paid double",
    "shipments": "order_id int, carrier string",
    "reviews": "order_id int, stars int",
}


def generate(folder: Path, batches: int = 4, orders_per_batch: int = 250, seed: int = 7) -> None:
    """Orders with 1-3 payments, 1-2 shipments and 0-4 reviews each, spread over batches."""
    rng = random.Random(seed)
    rows: dict[str, list[list[dict]]] = {name: [[] for _ in range(batches)] for name in SCHEMAS}
    for order_id in range(batches * orders_per_batch):
        placed = order_id // orders_per_batch
        def later() -> int:
            return min(batches - 1, placed + rng.randrange(2))
        rows["orders"][placed].append({"order_id": order_id, "customer": f"c{rng.randrange(90)}",
                                       "amount": round(rng.uniform(5, 500), 2)})
        for _ in range(rng.randint(1, 3)):
            rows["payments"][later()].append({"order_id": order_id, "paid": 10.0,
                                              "method": rng.choice(["card", "cash", "voucher"])})
        for _ in range(rng.randint(1, 2)):
            rows["shipments"][later()].append({"order_id": order_id,
                                               "carrier": rng.choice(["dhl", "ups", "post"])})
        for _ in range(rng.randint(0, 4)):
            rows["reviews"][later()].append({"order_id": order_id, "stars": rng.randint(1, 5)})
    for name, per_batch in rows.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        for batch, batch_rows in enumerate(per_batch):
            text = "".join(json.dumps(row) + "\n" for row in batch_rows)
            (folder / name / f"batch{batch:03d}.json").write_text(text)


def order_report(spark: SparkSession, input_folder: Path) -> DataFrame:
    streams = {name: spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
               .json(str(input_folder / name)) for name, schema in SCHEMAS.items()}
    return (streams["orders"]
            .join(streams["payments"], "order_id")
            .join(streams["shipments"], "order_id")
            .join(streams["reviews"], "order_id"))


def run(spark: SparkSession, input_folder: Path, work: Path, enabled: bool) -> dict:
    multi_join(spark).enabled = enabled
    name = "multi_join" if enabled else "spark_chain"
    query = (order_report(spark, input_folder).writeStream.format("parquet")
             .option("path", str(work / name / "output"))
             .option("checkpointLocation", str(work / name / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    state_rows = sum(entry["numRowsTotal"] for entry in query.lastProgress["stateOperators"])
    return {"state_rows": state_rows, "plan": query._jsq.explainInternal(False),
            "output": spark.read.parquet(str(work / name / "output"))}


@dataclass
class Report:
    plan: str          # the multi-join query's physical plan
    lines: list[str]   # what the example found
    same: bool         # whether the multi-join and Spark's chain gave the same rows


def run_example(spark: SparkSession, work: Path, input_folder: Path | None = None) -> Report:
    """Runs the join with the multi-join and as Spark's chain over the same files (generated
    under `work` unless `input_folder` is given) and compares them."""
    if input_folder is None:
        input_folder = work / "input"
        generate(input_folder)
    with_multi_join = run(spark, input_folder, work, enabled=True)
    with_spark_chain = run(spark, input_folder, work, enabled=False)
    input_rows = sum(spark.read.schema(schema).json(str(input_folder / name)).count()
                     for name, schema in SCHEMAS.items())
    output, chain_output = with_multi_join["output"], with_spark_chain["output"]
    same = output.exceptAll(chain_output).isEmpty() and chain_output.exceptAll(output).isEmpty()
    return Report(with_multi_join["plan"], [
        f"input rows:                    {input_rows}",
        f"output rows, multi-join:       {output.count()}",
        f"output rows, Spark's chain:    {chain_output.count()} (same rows: {same})",
        f"state rows, multi-join:        {with_multi_join['state_rows']}",
        f"state rows, Spark's chain:     {with_spark_chain['state_rows']}",
    ], same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-example"))
    parser.add_argument("--input", type=Path, help="folder of input streams (default: generated)")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    builder = (SparkSession.builder.master("local[2]").appName("multijoin-example")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2"))
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    report = run_example(spark, args.work, args.input)
    print(report.plan)
    print("\n".join(report.lines))
    spark.stop()
    if not report.same:
        raise SystemExit("the multi-join and Spark's chain disagree")


if __name__ == "__main__":
    main()
