"""Example: a Spark Declarative Pipeline whose SQL files join streams, run with spark-multijoin.

Writes JSON files for four streams (orders, payments, shipments, reviews), a pipeline spec and a
Spark conf folder (the extension's jar and class, the RocksDB state store, the rule's notes and
each query's prepared physical plan in the log), runs `spark-pipelines run` on this folder's
transformations/, and prints what the rule logged, the physical plans with a StreamingMultiJoin,
the rows each table got, and the fusion advisor's report on the same SQL files.

    python examples/sdp_pipeline/run.py [--work /tmp/multijoin-sdp]

Needs pyspark's pipelines extra (`scripts/setup-env pipelines`, or `pip install ".[pipelines]"`)
and runs the `spark-pipelines` next to this Python. The static confs go in a spark-defaults.conf
(SPARK_CONF_DIR) rather than `--conf`: pyspark 4.3's local Spark Connect server keeps only the
last part of the `--conf`s it gets when there are many, and the extension would be lost.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from spark_multijoin import ROCKSDB_PROVIDER, EXTENSION_CLASS, jar_path
from spark_multijoin._cli import main as advisor_main

HERE = Path(__file__).resolve().parent
START = datetime(2026, 1, 1)
TABLES = ["order_facts", "order_status", "reviewed_payments", "customer_totals"]

SPEC = """name: multijoin_orders
storage: {storage}
configuration:
  spark.multi-join.enabled: "true"
  spark.sql.shuffle.partitions: "2"
  spark.sql.planChangeLog.level: "info"
  spark.sql.planChangeLog.batches: "Preparations"
  spark.sql.planChangeLog.rules: "none"
  multijoin.example.data: {data}
libraries:
  - glob:
      include: transformations/**
"""

LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.multijoin.name = io.github.sparkmultijoin
logger.multijoin.level = info
logger.plans.name = org.apache.spark.sql.catalyst.rules.PlanChangeLogger
logger.plans.level = info
"""


def generate(data: Path, orders: int = 300, seed: int = 11) -> Counter:
    """One JSON file per stream: orders with 1-2 payments, 1-2 shipments and 0-3 reviews each,
    timed after the order; returns the joined rows order_facts gets per order."""
    rng = random.Random(seed)
    rows: dict[str, list[dict]] = {name: [] for name in
                                   ("orders", "payments", "shipments", "reviews")}
    facts: Counter = Counter()
    for order_id in range(orders):
        placed = START + timedelta(minutes=10 * order_id)
        rows["orders"].append({"order_id": order_id, "customer": f"c{rng.randrange(40)}",
                               "amount": round(rng.uniform(5, 500), 2),
                               "order_time": placed.isoformat()})
        counts = [rng.randint(1, 2), rng.randint(1, 2), rng.randint(0, 3)]
        for _ in range(counts[0]):
            rows["payments"].append({"order_id": order_id, "method": rng.choice(["card", "cash"]),
                                     "paid": 10.0, "pay_time": _later(rng, placed, 90)})
        for _ in range(counts[1]):
            rows["shipments"].append({"order_id": order_id, "carrier": rng.choice(["dhl", "ups"]),
                                      "ship_time": _later(rng, placed, 3 * 24 * 60)})
        for _ in range(counts[2]):
            rows["reviews"].append({"order_id": order_id, "stars": rng.randint(1, 5)})
        facts[order_id] = counts[0] * counts[1] * counts[2]
    for name, stream_rows in rows.items():
        (data / name).mkdir(parents=True, exist_ok=True)
        (data / name / "part0.json").write_text("".join(json.dumps(r) + "\n" for r in stream_rows))
    return facts


def _later(rng: random.Random, placed: datetime, minutes: int) -> str:
    return (placed + timedelta(minutes=rng.uniform(0, minutes))).isoformat()


def write_pipeline(work: Path) -> tuple[Path, Path]:
    """The spec (with this folder's transformations) and the Spark conf folder; their paths."""
    shutil.copytree(HERE / "transformations", work / "transformations",
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = work / "spark-pipeline.yml"
    spec.write_text(SPEC.format(storage=(work / "storage").as_uri(), data=work / "data"))
    conf = work / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("\n".join([
        f"spark.jars {jar_path()}",
        f"spark.sql.extensions {EXTENSION_CLASS}",
        f"spark.sql.streaming.stateStore.providerClass {ROCKSDB_PROVIDER}",
        f"spark.sql.warehouse.dir {work / 'warehouse'}",
        "spark.ui.enabled false",
        "spark.ui.showConsoleProgress false",
    ]) + "\n")
    (conf / "log4j2.properties").write_text(LOG4J)
    return spec, conf


def run_pipeline(spec: Path, conf: Path) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(bin_dir / "spark-pipelines"), "run", "--spec", str(spec)],
                          env=env, capture_output=True, text=True, check=False)


def rule_notes(log: str) -> list[str]:
    """What the rule logged, once each."""
    return list(dict.fromkeys(re.findall(r"(?:INFO|WARN) CollapseStreamingJoinChains: (.*)",
                                         log)))


def multi_join_plans(log: str) -> list[str]:
    """The prepared physical plans with a StreamingMultiJoin, once each: the right-hand side of
    the planChangeLog's before/after listing of the Preparations batch."""
    plans = []
    for block in re.findall(r"=== Result of Batch Preparations ===\n(.*?)\n\s*\n", log, re.S):
        lines = block.split("\n")
        column = _right_column(lines)
        plan = "\n".join(line[column:].rstrip() for line in lines if len(line) > column)
        if "StreamingMultiJoin" in plan and plan not in plans:
            plans.append(plan)
    return plans


def _right_column(lines: list[str]) -> int:
    """Where the right-hand side starts: Spark pads every left-hand line to the longest and
    adds three spaces."""
    width = max(map(len, lines))
    for column in range(4, width):
        if all(len(line) <= column or line[column - 3:column] == "   " for line in lines) and \
                lines[0][column:column + 1].strip():
            return column
    return 0


def table_rows(warehouse: Path) -> dict[str, int]:
    """The rows each table of the pipeline holds (its parquet files, read by pyarrow)."""
    import pyarrow.parquet as parquet  # pyspark's pipelines extra brings pyarrow

    return {table: parquet.read_table(warehouse / table).num_rows
            for table in TABLES if (warehouse / table).exists()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-sdp"))
    work = parser.parse_args().work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    facts = generate(work / "data")
    spec, conf = write_pipeline(work)
    print(f"Running spark-pipelines on {spec} (SPARK_CONF_DIR={conf}) ...", flush=True)
    completed = run_pipeline(spec, conf)
    log = completed.stdout + completed.stderr
    (work / "pipeline.log").write_text(log)
    print("\n".join(re.findall(r"^\S+ \S+: (?:Flow .*|Run is .*)$", log, re.M)))
    print("\nThe rule logged:\n" + "\n".join(f"  {note}" for note in rule_notes(log)))
    for plan in multi_join_plans(log):
        print("\nA prepared plan of the pipeline:\n" + plan)
    rows = table_rows(work / "warehouse")
    print("\nRows per table: " + ", ".join(f"{t} {n}" for t, n in rows.items()))
    print(f"order_facts, computed from the generated rows: {sum(facts.values())} rows")
    print("\nThe fusion advisor on the same SQL files:\n", flush=True)
    advisor_main(["advise", *map(str, sorted((work / "transformations").glob("*.sql")))])
    ok = completed.returncode == 0 and rows.get("order_facts") == sum(facts.values())
    print(f"\nFull log: {work / 'pipeline.log'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
