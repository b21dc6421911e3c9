"""spark-multijoin: run chains of streaming joins as one multi-way join operator in PySpark.

    from pyspark.sql import SparkSession
    from spark_multijoin import configure_spark_with_multijoin, multi_join

    spark = configure_spark_with_multijoin(SparkSession.builder.master("local[2]")).getOrCreate()
    multi_join(spark).enabled = True

Which joins of SQL text fuse, before deploying: `advise(sql)` (or `spark-multijoin advise
FILE.sql`), which plans it on a local session and reads the rule's verdicts; of a DataFrame:
`fusion_report(df)`.
"""

from spark_multijoin._advisor import Verdict, advise
from spark_multijoin._builder import (
    EXTENSION_CLASS,
    ROCKSDB_PROVIDER,
    configure_spark_with_multijoin,
    jar_path,
)
from spark_multijoin._fusion_report import fusion_report
from spark_multijoin._session_conf import MultiJoinConfig, multi_join
from spark_multijoin._state import read_state

__all__ = [
    "EXTENSION_CLASS",
    "ROCKSDB_PROVIDER",
    "MultiJoinConfig",
    "Verdict",
    "advise",
    "configure_spark_with_multijoin",
    "fusion_report",
    "jar_path",
    "multi_join",
    "read_state",
]
