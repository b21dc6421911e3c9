"""The state each peer of the CDC sweep (sweep.py) holds when its timed run stops, measured one way
on both engines, beside the logical bytes of the rows any engine must keep.

- Ours: the last micro-batch's state operators: their rows, the bytes their store reports in
  memory and, on RocksDB, the bytes of its live SST files (compressed with LZ4, Spark's default).
- Flink: its latest completed checkpoint's full state size (flink/rest.py): on RocksDB its SST
  files, compressed with LZ4 as ours are (flink/tuning.py); on the heap its serialized rows,
  uncompressed.
- Logical bytes: the inputs' current rows (the workload's live rows when the run stopped, the
  latency markers among them) times each table's row bytes: 8 a number, a string's UTF-8
  length. Every engine's state holds at least these rows; how far above them each sits is its
  layout's cost.

Pure functions, tested without an engine (the multi-join's metric names come from its registry,
core/metrics.py).
"""

from __future__ import annotations

from multijoin_bench.cdc.model import Table
from multijoin_bench.core import metrics

SST = "rocksdbSstFileSize"  # Spark's RocksDB store's custom metric
ROW_SAMPLE = 1000  # rows of a table whose mean width is its row bytes


def row_bytes(table: Table) -> float:
    """The mean bytes of `table`'s rows over a sample of ids and versions."""
    def width(value: object) -> int:
        return len(value.encode()) if isinstance(value, str) else 8

    rows = [table.row(row_id, row_id % 97, row_id % 5) for row_id in range(ROW_SAMPLE)]
    return sum(width(v) for row in rows for v in row.values()) / len(rows)


def logical_bytes(tables: list[Table], live_rows: dict[str, int]) -> dict:
    """Each table's live rows and their bytes, and the total bytes."""
    per_table = {t.name: {"rows": live_rows[t.name],
                          "bytes": round(live_rows[t.name] * row_bytes(t))} for t in tables}
    return {"tables": per_table, "bytes": sum(t["bytes"] for t in per_table.values())}


def spark_state(progress: list[dict]) -> dict:
    """Our state after the last micro-batch that reports its state operators."""
    reported = [p for p in progress if p.get("stateOperators")]
    if not reported:
        return {"not_read": "no micro-batch reported its state operators"}
    last = reported[-1]
    on_rocksdb = all(SST in op.get("customMetrics", {}) for op in last["stateOperators"])
    return {"rows": metrics.state_rows(last),
            "memory_bytes": metrics.state_metric(last, metrics.STATE_MEMORY),
            "sst_bytes": metrics.state_metric(last, SST) if on_rocksdb else None}
