"""Changelog inputs: streams of inserts, updates and deletes by row identity, which a multi-join
joins into the change stream of the join of their current rows (docs/changelog-joins.md); and
`delta_merge`, the foreachBatch function that keeps a Delta table the join's current rows."""

from spark_multijoin.changelog._declare import CHANGE_TYPES, declare
from spark_multijoin.changelog._delta_sink import delta_merge

__all__ = ["CHANGE_TYPES", "declare", "delta_merge"]
