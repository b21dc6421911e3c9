"""The benchmark proper: every chosen workload in both modes, with its floors, checked against
the batch query (and against Flink where it runs), its ratios, and the results written."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from multijoin_bench.core import report
from multijoin_bench.core.chart import chart
from multijoin_bench.core.runners import (batch_query_and_one_trigger, multi_join_micro_batches,
                                          on_in_memory_store, run_mode, streaming_floor)
from multijoin_bench.core.runs import ratio
from multijoin_bench.core.workload import Workload, inputs
from multijoin_bench.core.workloads import workloads
from multijoin_bench.flink import launch as flink


def run_benchmark(spark: SparkSession, chosen: list[Workload], out: Path, work: Path,
                  tiny: bool = False, with_flink: bool = False) -> None:
    """Runs `chosen` in both modes with their floors, and writes the results to `out`; with
    `with_flink`, Flink's peer too (skipped, with a message, when Flink is not installed)."""
    if with_flink and not flink.installed():
        print(flink.MISSING, flush=True)
        with_flink = False
    shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    warm_up(spark, work / "warm_up", tiny)
    results = []
    for index, workload in enumerate(chosen, start=1):
        folder = work / workload.name
        inputs(workload, folder).write()
        print(f"[{index}/{len(chosen)}] {workload.name}: {workload.description}, "
              f"{workload.input_rows} input rows", flush=True)
        result = measured_workload(spark, workload, folder, tiny)
        if with_flink:
            flink.add_peer(result, workload, folder)
        print(f"    ratios chain/multi: {result['ratios']}", flush=True)
        results.append(result)
    report.write_results(results, out)
    chart(results, out / "state_and_batch_duration.png")
    print(f"wrote results.json, results.md and state_and_batch_duration.png to {out}")


def warm_up(spark: SparkSession, folder: Path, tiny: bool) -> None:
    """Both modes once on tiny data, so that neither pays for warming up the JVM (a smoke run
    measures nothing, and skips them)."""
    workload = workloads(["fanout"], shrink=50)[0]
    inputs(workload, folder).write()
    for enabled in () if tiny else (False, True):
        run_mode(spark, workload, folder, enabled)


def measured_workload(spark: SparkSession, workload: Workload, folder: Path, tiny: bool) -> dict:
    """Both modes of `workload` over the files in `folder`, with their floors and ratios; fails
    where the modes' output rows differ from each other or from the batch query's."""
    result = {"workload": workload.name, "description": workload.description,
              "input_rows": workload.input_rows, **peers_not_available(spark)}
    for mode, enabled, join_format in SPARK_PEERS:
        if mode in result:
            print(f"    {mode:<10} not available: {result[mode + '_not_available']}")
            continue
        print(f"    {mode:<10} running ...", end="", flush=True)
        result[mode] = run_mode(spark, workload, folder, enabled, join_format)
        print(f"\r    {mode:<10} {result[mode]['wall_seconds']:>7.1f} s, "
              f"{result[mode]['output_rows']} output rows, "
              f"{result[mode]['state_rows_peak']} peak state rows", flush=True)
    result.update(timings(spark, workload, folder, tiny))
    result["batch_query_rows"] = workload.query(inputs(workload, folder).tables(spark)).count()
    check(workload, result)
    result["ratios"] = ratios(result)
    if workload.check_flat_state:
        result["multi_join_state_flat"] = state_flat(result["multi_join"])
    return result


# Spark's runs of a workload: mode, multi-join on, Spark's join state format (None: the
# session's, Spark's default). Format 4 (SPARK-55144) is what a user of Spark 4.2 and later
# would turn on for the chain.
SPARK_PEERS = (("chain", False, None), ("chain_v4", False, "4"), ("multi_join", True, None))


def peers_not_available(spark: SparkSession) -> dict:
    """The Spark peers this Spark line has not, as None with the reason beside them: join state
    format 4 runs from Spark 4.3 (Spark 4.1 refuses the setting, and 4.2 takes it but fails its
    first micro-batch: "State format version 4 is under development")."""
    major, minor = (int(part) for part in spark.version.split(".")[:2])
    if (major, minor) >= (4, 3):
        return {}
    return {"chain_v4": None, "chain_v4_not_available":
            f"Spark {spark.version} runs no join state format 4 (from Spark 4.3)"}


def timings(spark: SparkSession, workload: Workload, folder: Path, tiny: bool) -> dict:
    """The multi-join's time in one trigger and in micro-batches (medians of warm runs, and
    best runs), its floors', and the same on Spark's in-memory store."""
    times, files = 1 if tiny else 3, workload.files
    timed = dict(zip(("batch_query_seconds", "multi_join_one_trigger_seconds",
                      "multi_join_one_trigger_best_seconds"),
                     batch_query_and_one_trigger(spark, workload, folder,
                                                 times=1 if tiny else 5)))
    timed.update(zip(("multi_join_micro_batches_seconds",
                      "multi_join_micro_batches_best_seconds"),
                     multi_join_micro_batches(spark, workload, folder, times=times)))
    timed["streaming_floor_seconds"] = streaming_floor(spark, workload, folder, times=times)
    timed["streaming_floor_one_trigger_seconds"] = streaming_floor(
        spark, workload, folder, files_per_trigger=files, times=times)
    timed["stored_rows_one_trigger_seconds"] = streaming_floor(
        spark, workload, folder, files_per_trigger=files, store_rows=True, times=times)
    timed["stored_rows_seconds"] = streaming_floor(spark, workload, folder, store_rows=True,
                                                   times=times)
    timed["in_memory_store"] = on_in_memory_store(spark, workload, folder, times=times)
    return timed


def check(workload: Workload, result: dict) -> None:
    """Fails where Spark's chain, the multi-join (in RocksDB and on the in-memory store) and the
    batch query disagree on the output rows, or where the plans are not the two modes'."""
    chain, multi = result["chain"], result["multi_join"]
    v4_rows = (result["chain_v4"] or chain)["output_rows"]
    if not chain["output_rows"] == v4_rows == multi["output_rows"] == result["batch_query_rows"]:
        raise SystemExit(f"{workload.name}: output rows differ: {chain['output_rows']} with "
                         f"Spark's chain ({v4_rows} on join state format 4), "
                         f"{multi['output_rows']} with the multi-join, "
                         f"{result['batch_query_rows']} with the batch query")
    in_memory = result["in_memory_store"]
    if in_memory and in_memory["output_rows"] != multi["output_rows"]:
        raise SystemExit(f"{workload.name}: output rows differ: {in_memory['output_rows']} with "
                         f"the multi-join on the in-memory store, {multi['output_rows']} in "
                         "RocksDB")
    if not multi["multi_join_in_plan"] or chain["multi_join_in_plan"] or (
            result["chain_v4"] or {}).get("multi_join_in_plan"):
        raise SystemExit(f"{workload.name}: the plans are not the two modes")


def state_flat(multi: dict) -> bool:
    """Whether, over the second half of the data batches, the state varies by under 50%."""
    states = multi["state_rows_per_data_batch"]
    later = states[len(states) // 2:]
    return max(later) <= 1.5 * max(1, min(later))


def chain_ratios(result: dict) -> dict:
    """Spark's chain on each join state format it ran against the multi-join: the default
    format's under their plain names, format 4's with `_v4` (None where it did not run)."""
    multi, ratios_of = result["multi_join"], {}
    for mode, suffix in (("chain", ""), ("chain_v4", "_v4")):
        chain = result.get(mode)
        ratios_of.update({
            f"state_rows_peak{suffix}": chain and ratio(chain["state_rows_peak"],
                                                        multi["state_rows_peak"]),
            f"state_bytes{suffix}": chain and ratio(chain["state_bytes_on_disk"],
                                                    multi["state_bytes_on_disk"]),
            f"wall_time{suffix}": chain and ratio(chain["wall_seconds"], multi["wall_seconds"])})
    return ratios_of


def ratios(result: dict) -> dict:
    """Spark's chain (on both formats) against the multi-join, and the multi-join against its
    floors."""
    return {
        **chain_ratios(result),
        # The floor target: the same join over the same rows, streaming against batch.
        "multi_join_one_trigger_over_batch_query": ratio(
            result["multi_join_one_trigger_seconds"], result["batch_query_seconds"]),
        "multi_join_one_trigger_over_stateless_one_trigger": ratio(
            result["multi_join_one_trigger_seconds"],
            result["streaming_floor_one_trigger_seconds"]),
        "multi_join_one_trigger_over_stored_rows_one_trigger": ratio(
            result["multi_join_one_trigger_seconds"],
            result["stored_rows_one_trigger_seconds"]),
        "multi_join_over_batch_query": ratio(result["multi_join_micro_batches_seconds"],
                                             result["batch_query_seconds"]),
        "multi_join_over_stateless_stream": ratio(result["multi_join_micro_batches_seconds"],
                                                  result["streaming_floor_seconds"]),
        "multi_join_over_stored_rows": ratio(result["multi_join_micro_batches_seconds"],
                                             result["stored_rows_seconds"]),
    }
