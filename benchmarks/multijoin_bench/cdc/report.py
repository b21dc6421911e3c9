"""The CDC runs' results (run.py) as files: cdc_results.json, cdc_results.md and cdc_cost.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from multijoin_bench.core import metrics
from multijoin_bench.core.machine import write_with_machine
from multijoin_bench.core.runs import ratio

RUN_TITLES = {"multi_join": "multi-join, noop sink", "multi_join_delta": "multi-join, Delta MERGE",
              "recipe": "foreachBatch recipe, Delta MERGE"}
# Flink's modes as its peer names them in its result, and their titles.
FLINK_TITLES = {"multi_join_rocksdb": "Flink MultiJoin, RocksDB",
                "multi_join": "Flink MultiJoin, heap",
                "binary_joins_rocksdb": "Flink binary joins, RocksDB",
                "binary_joins": "Flink binary joins, heap",
                "multi_join_rocksdb_dedup": "Flink MultiJoin, RocksDB, duplicates dropped"}
# The split of the multi-join's mean micro-batch after the first (breakdown.batch_cost's keys).
PROFILE = ("trigger_ms", "latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch",
           "commitOffsets", "other")


def write_cdc(results: list[dict], out: Path, spark_version: str) -> None:
    write_with_machine(out / "cdc_results.json", results, spark=spark_version)
    (out / "cdc_results.md").write_text(cdc_markdown(results))
    cost_chart(results, out / "cdc_cost.png")


def cdc_markdown(results: list[dict]) -> str:
    lines = targets_markdown(results) + runs_markdown(results) + flink_markdown(results)
    lines += settings_markdown(results) + profile_markdown(results)
    lines += parameters_markdown(results)
    return "\n".join(lines) + "\n"


def flink_throughput(result: dict, mode: str) -> float | None:
    peer = (result.get("flink") or {}).get(mode) or {}
    if peer.get("throughput_changes_per_second"):
        return peer["throughput_changes_per_second"]
    seconds = peer.get("seconds")
    return result["parameters"]["changes"] / seconds if seconds else None


def flink_state_bytes(peer: dict) -> int | None:
    """The join operators' state in the peer's checkpoint (flink/cdc_state.py)."""
    return (peer.get("state") or {}).get("state_bytes")


def compacted_state_bytes(result: dict) -> int | None:
    """The multi-join's SST files in its state run (cdc.compacted_state), where it finished."""
    state = result.get("compacted_state") or {}
    return state.get("state_sst_bytes") if state.get("finished") else None


def targets(result: dict, size: str) -> dict:
    """The issue's targets at one batch size: the multi-join's throughput over the recipe's (into
    Delta both) and over Flink's MultiJoin in RocksDB (the noop sink against Flink's blackhole),
    and its state bytes (the compacted state run's) over Flink's, and over Flink's with the same
    guard against duplicates. None where a side did not run or finish."""
    runs = result["batch_sizes"][size]
    multi, delta, recipe = runs["multi_join"], runs["multi_join_delta"], runs.get("recipe")
    return {
        "over_recipe": ratio(delta["changes_per_second"], recipe["changes_per_second"])
        if delta["finished"] and recipe else None,
        "over_flink": ratio(multi["changes_per_second"],
                            flink_throughput(result, "multi_join_rocksdb") or 0)
        if multi["finished"] and flink_throughput(result, "multi_join_rocksdb") else None,
        "state_over_flink": state_over(result, "multi_join_rocksdb"),
        "state_over_flink_dedup": state_over(result, "multi_join_rocksdb_dedup"),
    }


def state_over(result: dict, mode: str) -> float | None:
    flink = flink_state_bytes((result.get("flink") or {}).get(mode) or {})
    ours = compacted_state_bytes(result)
    return ratio(ours, flink) if flink and ours else None


def state_cell(result: dict, mode: str, over: float | None) -> str:
    """The multi-join's state over Flink's in `mode` (`over`, from `targets`), and both in MB."""
    if over is None:
        return cell(over)
    flink = flink_state_bytes(result["flink"][mode])
    return f"{cell(over)} ({megabytes(compacted_state_bytes(result))} / {megabytes(flink)})"


def cell(value: float | None, suffix: str = "x") -> str:
    return "-" if value is None else f"{value:.2f}{suffix}"


def targets_markdown(results: list[dict]) -> list[str]:
    lines = ["| workload | changes a batch | multi-join over recipe, changes/s (Delta both; target "
             "5x) | recipe capped | final tables: multi-join / recipe against the batch join | "
             "multi-join over Flink MultiJoin RocksDB, changes/s (target 1.5x) | state bytes, "
             "multi-join (compacted) over Flink MultiJoin RocksDB, MB (target at most 1) | state "
             "bytes over Flink's with duplicates dropped, MB |",
             "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in results:
        for size, runs in r["batch_sizes"].items():
            t, checks = targets(r, size), runs["final_tables"]
            same = " / ".join(
                "-" if f"{run}_vs_batch" not in checks else
                "same" if tuple(checks[f"{run}_vs_batch"]) == (0, 0) else
                "differs ({:,} missing, {:,} extra)".format(*checks[f"{run}_vs_batch"][::-1])
                for run in ("multi_join", "recipe"))
            capped = ("not run: not every table joins on one key" if "recipe" not in runs
                      else "no" if runs["recipe"]["finished"]
                      else f"yes, at {r['cap_seconds'] / 60:.0f} min")
            lines.append(f"| {r['workload']} | {int(size):,} | {cell(t['over_recipe'])} | "
                         f"{capped} | {same} | {cell(t['over_flink'])} | "
                         f"{state_cell(r, 'multi_join_rocksdb', t['state_over_flink'])} | "
                         f"{state_cell(r, 'multi_join_rocksdb_dedup', t['state_over_flink_dedup'])}"
                         " |")
    return lines + [""]


def runs_markdown(results: list[dict]) -> list[str]:
    lines = ["| workload | changes a batch | run | finished | changes done | wall s | changes/s | "
             "batches | batch ms p50 | batch ms p95 | latency ms p50 | latency ms p99 | "
             "state MB | live SST MB | output change rows |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
             "---: | ---: | ---: |"]
    for r in results:
        for size, runs in r["batch_sizes"].items():
            for run, title in ran(runs):
                x = runs[run]
                finished = "yes" if x["finished"] else "no, capped"
                rows = "" if x["output_rows"] is None else f"{x['output_rows']:,}"
                lines.append(
                    f"| {r['workload']} | {int(size):,} | {title} | {finished} | "
                    f"{x['changes_done']:,} | {x['wall_seconds']:,.1f} | "
                    f"{x['changes_per_second']:,.0f} | {x['batches']} | {x['batch_ms_p50']} | "
                    f"{x['batch_ms_p95']} | {x['latency_ms_p50']} | {x['latency_ms_p99']} | "
                    f"{x['state_bytes'] / 1e6:,.1f} | {megabytes(x.get('state_sst_bytes'))} | "
                    f"{rows} |")
    return lines + [""]


def megabytes(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def flink_markdown(results: list[dict]) -> list[str]:
    """Flink's modes on the same changes, one stream each (or why Flink did not run)."""
    lines = ["| workload | Flink mode | finished | seconds | changes/s | state MB |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    for r in results:
        peer = r.get("flink")
        if not peer or "not_available" in peer:
            reason = (peer or {}).get("not_available", "not run (--flink)")
            lines.append(f"| {r['workload']} | {reason} | | | | |")
            continue
        for mode, title in FLINK_TITLES.items():
            run = peer.get(mode) or {}
            throughput = flink_throughput(r, mode)
            state = flink_state_bytes(run)
            finished = "yes" if run.get("seconds") else ""  # the peer fails as a whole
            lines.append(f"| {r['workload']} | {title} | {finished} | "
                         f"{run.get('seconds', '')} | "
                         f"{'' if throughput is None else f'{throughput:,.0f}'} | "
                         f"{'' if state is None else f'{state / 1e6:,.1f}'} |")
    return lines + [""]


def ran(runs: dict) -> list[tuple[str, str]]:
    """The runs a batch size ran (the recipe not everywhere: run.runs_of), with their titles."""
    return [(run, title) for run, title in RUN_TITLES.items() if run in runs]


def settings_markdown(results: list[dict]) -> list[str]:
    """Both engines' settings per workload, Flink's with what its task manager reported."""
    lines = ["| workload | Spark's settings | Flink's settings | Flink's task manager got |",
             "| --- | --- | --- | --- |"]
    for r in results:
        spark, peer = r.get("spark_settings"), r.get("flink") or {}
        flink = {k: v for k, v in peer.get("settings", {}).items() if k != "cluster"}
        got = next((peer[mode]["taskmanager_got"] for mode in FLINK_TITLES
                    if (peer.get(mode) or {}).get("taskmanager_got")), None)
        if got and peer.get("jvm_max_heap_bytes"):
            got = {**got, "jvm_max_heap_bytes": peer["jvm_max_heap_bytes"]}
        lines.append(f"| {r['workload']} | {settings_cell(spark)} | {settings_cell(flink)} | "
                     f"{settings_cell(got)} |")
    return lines + [""]


def settings_cell(settings: dict | None) -> str:
    return f"`{json.dumps(settings)}`" if settings else "not recorded"


def profile_markdown(results: list[dict]) -> list[str]:
    """Where the multi-join's micro-batch goes (noop sink, the mean batch after the first, wall
    ms by the engine's phases) and its state operators' task ms."""
    state = (metrics.key(metrics.UPDATES_MS), metrics.key(metrics.COMMIT_MS), "rocksdbGetCount",
             "rocksdbPutCount")
    lines = ["The multi-join's mean micro-batch after the first (noop sink; engine phases in wall "
             "ms, the state operators' metrics summed over partitions):", "",
             "| workload | changes a batch | " + " | ".join(PROFILE + state) + " |",
             "| --- | ---: |" + " ---: |" * len(PROFILE + state)]
    for r in results:
        for size, runs in r["batch_sizes"].items():
            profile = runs["multi_join"]["profile"]
            lines.append(f"| {r['workload']} | {int(size):,} | " + " | ".join(
                f"{profile.get(key, 0):,.0f}" for key in PROFILE + state) + " |")
    return lines + [""]


def parameters_markdown(results: list[dict]) -> list[str]:
    lines = ["| workload | parameters | query |", "| --- | --- | --- |"]
    for r in results:
        shown = {k: v for k, v in r["parameters"].items()
                 if k not in ("join_keys", "identity", "output_key", "one_join_key")}
        lines.append(f"| {r['workload']} | {json.dumps(shown)} | `{r['select']}` |")
    return lines + ["", f"Each run is capped at {results[0]['cap_seconds'] / 60:.0f} minutes."
                    if results else ""]


def cost_chart(results: list[dict], path: Path) -> None:
    """Cost against changes: per workload, each run's time so far against the changes read so
    far, one line per run and batch size."""
    def draw(axis, r: dict) -> None:
        for size, runs in r["batch_sizes"].items():
            for run, title in ran(runs):
                changes, seconds = [0], [0.0]
                for b in runs[run]["per_batch"]:
                    changes.append(changes[-1] + b["changes"])
                    seconds.append(seconds[-1] + b["ms"] / 1000)
                axis.plot(changes, seconds, label=f"{title}, {int(size):,} a batch")

    workload_chart(results, path, draw, "changes", "seconds (sum of micro-batches)")


def workload_chart(results: list[dict], path: Path, draw: Callable, xlabel: str,
                   ylabel: str) -> None:
    """A chart with a panel per workload, `draw(axis, result)` drawing each (the CDC runs' and
    the sweep's charts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, len(results)), figsize=(6 * max(1, len(results)), 4.5),
                             squeeze=False)
    for axis, r in zip(axes[0], results):
        draw(axis, r)
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        axis.set_title(r["workload"])
        axis.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
