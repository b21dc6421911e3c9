"""Input files and a join over them, shared by this project's tests and its benchmark.

As `pyspark.testing` is for PySpark's own tests, this is for spark-multijoin's: the one writer
of input tables as JSON files, one file per input and micro-batch (`Inputs`), event times as the
files carry them (`timestamp`), and the plain chain of joins on one key `k` (`join_on_k`). The
tests keep their own generators in tests/support; the benchmark (benchmarks/) builds its
workloads on these, so that both run queries over files written the same way.
"""

from spark_multijoin.testing.data import START, Inputs, timestamp, timestamp_value
from spark_multijoin.testing.queries import join_on_k

__all__ = ["START", "Inputs", "join_on_k", "timestamp", "timestamp_value"]
