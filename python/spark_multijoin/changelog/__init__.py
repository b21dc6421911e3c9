"""Changelog inputs: streams of inserts, updates and deletes by row identity, which a multi-join
joins into the change stream of the join of their current rows (docs/changelog-joins.md)."""

from spark_multijoin.changelog._declare import CHANGE_TYPES, declare

__all__ = ["CHANGE_TYPES", "declare"]
