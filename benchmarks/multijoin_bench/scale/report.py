"""The scale runs' results (run.py) as files: scale_results.json and scale_results.md."""

from __future__ import annotations

import json
from pathlib import Path

from multijoin_bench.core.runs import ratio

PEERS = {"chain": "Spark's chain", "chain_v4": "Spark's chain, join state format 4",
         "multi_join": "multi-join", "flink_rocksdb": "Flink MultiJoin, RocksDB"}


def write_scale(results: list[dict], out: Path) -> None:
    (out / "scale_results.json").write_text(json.dumps(results, indent=2))
    (out / "scale_results.md").write_text(scale_markdown(results))


def scale_ratios(result: dict) -> dict:
    """Each peer's wall time (and, for Spark's chain, state bytes on disk) over the
    multi-join's: None where either side did not finish or did not run."""
    multi = result["multi_join"]
    ratios = {}
    for mode in ("chain", "chain_v4", "flink_rocksdb"):
        peer = result.get(mode)
        both = bool(peer and peer["finished"] and multi["finished"])
        ratios[f"{mode}_wall_time"] = ratio(peer["wall_seconds"],
                                            multi["wall_seconds"]) if both else None
        if mode != "flink_rocksdb":
            ratios[f"{mode}_state_bytes"] = ratio(peer["state_bytes_on_disk"],
                                                  multi["state_bytes_on_disk"]) if both else None
    return ratios


def scale_markdown(results: list[dict]) -> str:
    lines = ["| workload | peer | finished | wall s | data batches | input rows | output rows | "
             "peak state rows | state MB on disk | peak RSS MB |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        for mode, title in PEERS.items():
            lines.append(f"| {r['workload']} | {title} | {peer_cells(r, mode)} |")
    lines += ["", "Peers over the multi-join (- where a side did not finish or run):", "",
              "| workload | " + " | ".join(scale_ratios(results[0])) + " |",
              "| --- |" + " ---: |" * len(scale_ratios(results[0]))] if results else []
    for r in results:
        lines.append(f"| {r['workload']} | " + " | ".join(
            "-" if v is None else f"{v:.2f}x" for v in scale_ratios(r).values()) + " |")
    for r in results:
        lines += per_batch_markdown(r) + split_markdown(r)
    return "\n".join(lines) + "\n"


def peer_cells(r: dict, mode: str) -> str:
    """A peer's eight cells: finished, wall s, batches, input, output and peak state rows,
    state MB and peak RSS MB (Flink reports no progress: its wall time and rows only)."""
    run = r.get(mode)
    if run is None:
        return " | ".join([r.get(f"{mode}_not_available", "not run")] + [""] * 7)
    finished = "yes" if run["finished"] else "no, stopped at the cap"
    if "per_batch" not in run:
        return " | ".join([finished, f"{run['wall_seconds']:.1f}", "", "",
                           f"{run.get('output_rows', '')}", "", "", ""])
    return " | ".join([finished, f"{run['wall_seconds']:.1f}", f"{run['batches_done']}",
                       f"{run['input_rows_done']:,}", f"{run['output_rows']:,}",
                       f"{run['state_rows_peak']:,}", f"{run['state_bytes_on_disk'] / 1e6:,.1f}",
                       f"{run['peak_rss_mb']}"])


def per_batch_markdown(r: dict) -> list[str]:
    """Each Spark peer's micro-batches: what a batch's time grows with."""
    lines = []
    for mode in ("chain", "chain_v4", "multi_join"):
        if not r.get(mode):
            continue
        lines += ["", f"{r['workload']}, {PEERS[mode]}, per micro-batch:", "",
                  "| batch | ms | input rows | output rows | state rows | RocksDB gets | "
                  "multi-join key reads | state memory MB | SST MB | JVM RSS MB after |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for b in r[mode]["per_batch"]:
            lines.append(
                f"| {b['batch']} | {b['ms']:,} | {b['input_rows']:,} | {b['output_rows']:,} | "
                f"{b['state_rows']:,} | {b['stored_reads']:,} | {b['key_reads']:,} | "
                f"{b['state_memory_bytes'] / 1e6:,.1f} | {b['state_sst_bytes'] / 1e6:,.1f} | "
                f"{b['rss_mb'] if b['rss_mb'] is not None else '-'} |")
    return lines


def split_markdown(r: dict) -> list[str]:
    """The multi-join's micro-batches split (task ms, summed over partitions): reading stored
    rows, joining and emitting, the commit and its RocksDB parts; compaction beside them."""
    run = r.get("multi_join")
    if not run:
        return []
    columns = ("add_batch_ms", "key_read_ms", "join_and_emit_ms", "removals_ms", "commit_ms",
               "changelog_commit_ms", "flush_ms", "file_sync_ms", "checkpoint_ms", "compaction_ms",
               "compaction_bytes_written", "bytes_written")
    lines = ["", f"{r['workload']}, multi-join, where each micro-batch's time goes "
             "(addBatch: wall ms; the rest: task ms over partitions; compaction runs in the "
             "background):", "", "| batch | output rows | " + " | ".join(columns) + " |",
             "| ---: | ---: |" + " ---: |" * len(columns)]
    for b in run["per_batch"]:
        lines.append(f"| {b['batch']} | {b['output_rows']:,} | "
                     + " | ".join(f"{b.get(c, 0):,.0f}" for c in columns) + " |")
    return lines
