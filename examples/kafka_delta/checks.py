"""What the example checks once its query has stopped, as numbers (`summary`) and as the lines
it prints (`report`).

- The answer: the Delta table against the batch query over the topics' full contents (read back
  with `spark.read.format("kafka")`, less the rows marked late), row by row.
- The late rows: as many dropped by the watermark as were produced late.
- The Delta table's log: one commit per micro-batch that wrote rows, each naming the query and
  its batch once (how the sink skips a batch it already committed when a restart runs it again).
- The checkpoint: its state store wrote changelogs (changelog checkpointing).
- The edges: how many micro-batches the data took, how long the reviews topic stayed empty.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .driver import Files
from .events import LATE_HEADER, TOPICS
from .pipeline import compare, dropped_by_watermark, read_progress


def late_rows(spark: SparkSession, bootstrap: str) -> int:
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", ",".join(TOPICS)).option("includeHeaders", "true").load())
    return frame.where(F.exists(F.coalesce(F.col("headers"), F.array()),
                                lambda header: header["key"] == F.lit(LATE_HEADER))).count()


def commits(table: Path) -> list[list[dict]]:
    """The actions of each of the table's commits, in order."""
    return [[json.loads(line) for line in commit.read_text().splitlines() if line]
            for commit in sorted((table / "_delta_log").glob("*.json"))]


def delta_log(table: Path) -> dict:
    """The table's commits: how many, how many added files, and the (query, batch) each names."""
    logged = commits(table)
    transactions, adding = [], 0
    for actions in logged:
        transactions += [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a]
        adding += any("add" in a for a in actions)
    return {"commits": len(logged), "commits_adding_files": adding,
            "transactions": len(transactions), "distinct_transactions": len(set(transactions)),
            "other_files": sorted(p.name for p in (table / "_delta_log").iterdir()
                                  if p.suffix not in (".json", ".crc") and p.is_file())}


def first_batch_with_rows(progress: list[dict], topic: str) -> int | None:
    for entry in sorted(progress, key=lambda p: p["batchId"]):
        for source in entry.get("sources", []):
            if f"[{topic}]" in source["description"] and source["numInputRows"] > 0:
                return entry["batchId"]
    return None


def summary(spark: SparkSession, bootstrap: str, files: Files) -> dict:
    comparison = compare(spark, bootstrap, files.table)
    progress = read_progress(files.progress)
    with_rows = {p["batchId"] for p in progress if p["numInputRows"] > 0}
    return {
        **comparison.__dict__, "same": comparison.same,
        "late_rows": late_rows(spark, bootstrap),
        "dropped_by_watermark": dropped_by_watermark(progress),
        "batches": len({p["batchId"] for p in progress}), "batches_with_rows": len(with_rows),
        "first_batch_with_reviews": first_batch_with_rows(progress, "reviews"),
        "runs": files.run_count(),
        "delta_log": delta_log(files.table),
        "changelog_files": len(list(files.checkpoint.glob("state/**/*.changelog"))),
    }


def report(numbers: dict, plan: str) -> list[str]:
    log = numbers["delta_log"]
    fused = plan.count("StreamingMultiJoin input0")
    return [
        f"plan: {fused} StreamingMultiJoin, {plan.count('StreamingSymmetricHashJoin')} of "
        "Spark's binary joins",
        "answer: " + ("same rows as the batch query; " if numbers["same"] else "DIFFERS: ")
        + f"rows expected {numbers['expected']}, found {numbers['found']}, duplicated "
          f"{numbers['duplicated']}, missing {numbers['missing']}, unexpected "
          f"{numbers['unexpected']} (null-padded: {numbers['null_padded']})",
        f"late rows: produced {numbers['late_rows']}, dropped by the watermark "
        f"{numbers['dropped_by_watermark']}",
        f"micro-batches: {numbers['batches']} ({numbers['batches_with_rows']} with rows) in "
        f"{numbers['runs']} query start(s); the reviews topic first had rows in batch "
        f"{numbers['first_batch_with_reviews']}",
        f"Delta log: {log['commits']} commits, {log['commits_adding_files']} adding files, "
        f"{log['transactions']} batch transactions ({log['distinct_transactions']} distinct)",
        f"checkpoint: {numbers['changelog_files']} state changelog files",
    ]


def passed(numbers: dict) -> bool:
    log = numbers["delta_log"]
    return (numbers["same"] and numbers["late_rows"] == numbers["dropped_by_watermark"]
            and log["transactions"] == log["distinct_transactions"])
