"""The benchmark's results as files: results.json and results.md (the tables the docs show), and
the breakdown's breakdown.json and breakdown.md."""

from __future__ import annotations

import json
from pathlib import Path

from multijoin_bench.core import metrics
from multijoin_bench.core.machine import write_with_machine
from multijoin_bench.flink.launch import HEAP_MODES, JOIN_MODES

# Flink's modes set against the multi-join like for like: state on the heap against Spark's
# in-memory store, in RocksDB against RocksDB (keys of `flink.ratios`, less the trigger).
LIKE_FOR_LIKE = {"multi_join_over_in_memory": "Flink MultiJoin (heap) over multi-join (in-memory)",
                 "multi_join_rocksdb_over": "Flink MultiJoin (RocksDB) over multi-join (RocksDB)"}


def write_results(results: list[dict], out: Path) -> None:
    """results.json (with the machine they ran on) and results.md in `out`."""
    write_with_machine(out / "results.json", results)
    (out / "results.md").write_text(markdown(results))


def write_breakdown(breakdown: list[dict], out: Path) -> None:
    (out / "breakdown.json").write_text(json.dumps(breakdown, indent=2))
    (out / "breakdown.md").write_text(breakdown_markdown(breakdown))


def markdown(results: list[dict]) -> str:
    """The tables: the headline, both modes side by side, then the floor, the in-memory store
    and Flink."""
    lines = (summary_markdown(results) + modes_markdown(results) + chain_v4_markdown(results)
             + floor_markdown(results)
             + in_memory_markdown(results) + flink_markdown(results))
    return "\n".join(lines) + "\n"


def summary_markdown(results: list[dict]) -> list[str]:
    """The headline: the multi-join against Spark's chain on its default join state format and
    on format 4 (its time against the median of the multi-join's warm runs), and against Flink's
    MultiJoin like for like where Flink ran, in micro-batches / one trigger (best runs; - where
    a side did not run)."""
    with_flink = any("flink_ratios" in r for r in results)
    heads = ["peak state rows, Spark's chain over multi-join (default / format 4)",
             "state bytes on disk, Spark's chain over multi-join (default / format 4)",
             "wall time, Spark's chain over multi-join, micro-batches (default / format 4)"]
    heads += [f"{title}, micro-batches / one trigger"
              for title in LIKE_FOR_LIKE.values()] if with_flink else []
    lines = ["| workload | " + " | ".join(heads) + " |", "| --- |" + " ---: |" * len(heads)]
    for r in results:
        cells = chain_cells(r)
        for mode in LIKE_FOR_LIKE if with_flink else ():
            ratios = r.get("flink_ratios", {})
            cells.append(" / ".join(
                "-" if ratios.get(f"{mode}_{trigger}") is None
                else f"{ratios[f'{mode}_{trigger}']:.2f}x"
                for trigger in ("micro_batches", "one_trigger")))
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    return lines + [""]


def chain_cells(r: dict) -> list[str]:
    """Spark's chain over the multi-join in peak state rows, state bytes and wall time, on the
    default join state format / format 4 (- where format 4 did not run)."""
    multi = r["multi_join"]
    ours = {"state_rows_peak": max(multi["state_rows_peak"], 1),
            "state_bytes_on_disk": max(multi["state_bytes_on_disk"], 1),
            "wall_seconds": r["multi_join_micro_batches_seconds"]}
    return [" / ".join("-" if not r.get(mode) else f"{r[mode][field] / ours[field]:,.{digits}f}x"
                       for mode in ("chain", "chain_v4"))
            for field, digits in (("state_rows_peak", 1), ("state_bytes_on_disk", 1),
                                  ("wall_seconds", 2))]


def chain_v4_markdown(results: list[dict]) -> list[str]:
    """Spark's chain on join state format 4 beside the default format, where it ran (or why
    not)."""
    lines = ["", "| workload | Spark's chain, format 4: wall s | p50 / p95 batch ms | peak state "
             "rows | state MB on disk | default format: wall s | peak state rows | state MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        v4, chain = r.get("chain_v4"), r["chain"]
        if not v4:
            lines.append(f"| {r['workload']} | not available: "
                         f"{r.get('chain_v4_not_available', 'not run')} | | | | | | |")
            continue
        lines.append(
            f"| {r['workload']} | {v4['wall_seconds']:.2f} | {v4['batch_ms_p50']:.0f} / "
            f"{v4['batch_ms_p95']:.0f} | {v4['state_rows_peak']:,} | "
            f"{v4['state_bytes_on_disk'] / 1e6:,.1f} | {chain['wall_seconds']:.2f} | "
            f"{chain['state_rows_peak']:,} | {chain['state_bytes_on_disk'] / 1e6:,.1f} |")
    return lines


def modes_markdown(results: list[dict]) -> list[str]:
    """Spark's chain and the multi-join side by side: rows, times, state."""
    def pair(result: dict, field: str, scale: float = 1, digits: int = 0) -> str:
        return " / ".join(f"{result[mode][field] / scale:,.{digits}f}"
                          for mode in ("chain", "multi_join"))

    lines = [
        "| workload | input rows | output rows | wall s, chain / multi | input rows/s, chain / "
        "multi | p50 / p95 batch ms, chain | p50 / p95 batch ms, multi | peak state rows, "
        "chain / multi | state MB on disk, chain / multi |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        chain, multi = r["chain"], r["multi_join"]
        lines.append(
            f"| {r['workload']} | {r['input_rows']:,} | {multi['output_rows']:,} | "
            f"{pair(r, 'wall_seconds', digits=2)} | {pair(r, 'input_rows_per_second')} | "
            f"{chain['batch_ms_p50']:.0f} / {chain['batch_ms_p95']:.0f} | "
            f"{multi['batch_ms_p50']:.0f} / {multi['batch_ms_p95']:.0f} | "
            f"{pair(r, 'state_rows_peak')} | {pair(r, 'state_bytes_on_disk', 1e6, 1)} |")
    return lines


def floor_markdown(results: list[dict]) -> list[str]:
    """The multi-join against the batch query, a stateless stream and Spark's deduplication."""
    lines = [
        "",
        "| workload | batch query s | multi-join, one trigger s | one trigger / batch query | "
        "stateless stream, one trigger s | rows stored by Spark's deduplication, one trigger s | "
        "multi-join, micro-batches s | stateless stream, micro-batches s | rows stored by "
        "Spark's deduplication, micro-batches s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['workload']} | {r['batch_query_seconds']:.2f} | "
            f"{r['multi_join_one_trigger_seconds']:.2f} | "
            f"{r['ratios']['multi_join_one_trigger_over_batch_query']:.2f}x | "
            f"{r['streaming_floor_one_trigger_seconds']:.2f} | "
            f"{r['stored_rows_one_trigger_seconds']:.2f} | "
            f"{r['multi_join_micro_batches_seconds']:.2f} | {r['streaming_floor_seconds']:.2f} | "
            f"{r['stored_rows_seconds']:.2f} |")
    return lines


def in_memory_markdown(results: list[dict]) -> list[str]:
    """The multi-join on Spark's in-memory store against RocksDB, where it ran on it."""
    on_it = [r for r in results if r.get("in_memory_store")]
    if not on_it:
        return []
    lines = [
        "",
        "| workload | multi-join, micro-batches s, in-memory / RocksDB | multi-join, one trigger "
        "s, in-memory / RocksDB | Spark's deduplication, micro-batches s, in-memory / RocksDB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in on_it:
        in_memory = r["in_memory_store"]
        lines.append(
            f"| {r['workload']} | {in_memory['micro_batches_seconds']:.2f} / "
            f"{r['multi_join_micro_batches_seconds']:.2f} | "
            f"{in_memory['one_trigger_seconds']:.2f} / "
            f"{r['multi_join_one_trigger_seconds']:.2f} | "
            f"{in_memory['stored_rows_seconds']:.2f} / {r['stored_rows_seconds']:.2f} |")
    return lines


def flink_markdown(results: list[dict]) -> list[str]:
    """The Flink peer's tables, when any workload ran one (--flink): none otherwise."""
    with_flink = [r for r in results if "flink" in r]
    if not with_flink:
        return []
    return flink_times_markdown(with_flink) + flink_ratios_markdown(with_flink)


def flink_times_markdown(with_flink: list[dict]) -> list[str]:
    """Flink's modes' seconds next to Spark's chain's and the multi-join's."""
    lines = [
        "",
        "| workload | output rows | Spark's chain s | multi-join, micro-batches s | "
        "Flink binary joins s | Flink MultiJoin s | Flink MultiJoin, RocksDB s | "
        "Flink scan only s | Flink MultiJoin minus scan s | Flink binary joins minus scan s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in with_flink:
        flink = r["flink"]
        scan = flink["scan_only"]["seconds"]
        lines.append(
            f"| {r['workload']} | {flink['output_rows']:,} | {r['chain']['wall_seconds']:.2f} | "
            f"{r['multi_join_micro_batches_seconds']:.2f} | "
            f"{flink['binary_joins']['seconds']:.2f} | "
            f"{flink['multi_join']['seconds']:.2f} | "
            f"{flink['multi_join_rocksdb']['seconds']:.2f} | {scan:.2f} | "
            f"{flink['multi_join']['seconds'] - scan:.2f} | "
            f"{flink['binary_joins']['seconds'] - scan:.2f} |")
    return lines


def flink_ratios_markdown(with_flink: list[dict]) -> list[str]:
    """Flink's time over the multi-join's, per Flink mode and trigger; against the in-memory
    store only for Flink's modes on the heap, and only where a workload ran there."""
    ours = {"micro_batches": "micro-batches", "one_trigger": "one trigger"}
    in_memory = {"in_memory_micro_batches": "micro-batches, multi-join in-memory",
                 "in_memory_one_trigger": "one trigger, multi-join in-memory"}
    if not any(r.get("in_memory_store") for r in with_flink):
        in_memory = {}
    columns = [(mode, name, title) for mode in JOIN_MODES
               for name, title in (ours | (in_memory if mode in HEAP_MODES else {})).items()]
    heads = [f"{JOIN_MODES[mode]}, {title}" for mode, _, title in columns]
    lines = ["", "Flink's time over the multi-join's, best runs (above 1: the multi-join is "
             "ahead; the multi-join in RocksDB, or on Spark's in-memory store where it says "
             "in-memory, - where it does not run there):", "",
             "| workload | " + " | ".join(heads) + " |",
             "| --- |" + " ---: |" * len(heads)]
    for r in with_flink:
        values = [r["flink_ratios"].get(f"{mode}_over_{name}") for mode, name, _ in columns]
        lines.append(f"| {r['workload']} | " + " | ".join(
            "-" if v is None else f"{v:.2f}x" for v in values) + " |")
    return lines


def breakdown_markdown(breakdown: list[dict]) -> str:
    """One row per workload and query: the mean micro-batch's phases and state metrics."""
    columns = ((("first_batch_ms", "first batch ms"), ("trigger_ms", "batch ms"))
               + tuple((phase, phase) for phase in metrics.ENGINE_PHASES)
               + (("other", "other"),) + metrics.BREAKDOWN_STATE_COLUMNS)
    lines = ["| workload | query | " + " | ".join(title for _, title in columns) + " |",
             "| --- | --- |" + " ---: |" * len(columns)]
    for row in breakdown:
        lines.append(f"| {row['workload']} | {row['query']} | "
                     + " | ".join(f"{row[metrics.key(key)]:,.0f}" for key, _ in columns) + " |")
    return "\n".join(lines) + "\n"
