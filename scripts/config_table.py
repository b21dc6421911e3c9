"""Rewrites the config table in README.md from the Scala conf object (MultiJoinConf).

Run after changing a config: `python scripts/config_table.py`. tests/test_readme.py fails while
the README's table differs from the generated one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.readme_table import BEGIN, END, generated_table  # noqa: E402


def main() -> None:
    spark = configure_spark_with_multijoin(
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")).getOrCreate()
    table = generated_table(spark)
    spark.stop()
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    readme.write_text(text[:start] + "\n" + table + "\n" + text[end:])


if __name__ == "__main__":
    main()
