"""Changelog inputs: streams of inserts, updates and deletes by row identity, which a multi-join
joins into the change stream of the join of their current rows (docs/changelog-joins.md).

One call per input declares one: `delta_cdf` (Delta's change data feed), `debezium`
(Debezium's change events), `upsert` (a stream of each key's new version, as a compacted Kafka
topic), `insert_only` (an append-only stream with an identity), or `declare` for change rows
already shaped. `delta_merge` is the foreachBatch function that keeps a Delta table the join's
current rows."""

from spark_multijoin.changelog._declare import CHANGE_TYPES, declare
from spark_multijoin.changelog._delta_sink import delta_merge
from spark_multijoin.changelog._formats import debezium, delta_cdf, insert_only, upsert

__all__ = ["CHANGE_TYPES", "debezium", "declare", "delta_cdf", "delta_merge", "insert_only",
           "upsert"]
