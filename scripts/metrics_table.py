"""Rewrites the metrics table in docs/metrics.md from the Scala registry (MultiJoinMetrics).

Run after changing a metric: `python scripts/metrics_table.py`. tests/test_metrics_doc.py fails
while the file's table differs from the generated one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.metrics import BEGIN, END, generated_table  # noqa: E402

DOC = ROOT / "docs" / "metrics.md"


def main() -> None:
    spark = configure_spark_with_multijoin(
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")).getOrCreate()
    table = generated_table(spark)
    spark.stop()
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table + "\n" + text[end:])


if __name__ == "__main__":
    main()
