"""A smoke run of the benchmark on tiny data, in the tests' session (its numbers are not
checked here; `main()` only builds a session around `run_benchmark`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from random import Random

import pytest

from multijoin_bench.core import metrics
from multijoin_bench.core.benchmark import chain_ratios, run_benchmark
from multijoin_bench.core.breakdown import batch_cost
from multijoin_bench.core.chart import orders_of_magnitude_apart
from multijoin_bench.core.report import breakdown_markdown, chain_cells, chain_v4_markdown
from multijoin_bench.core.runners import run_mode
from multijoin_bench.core.workload import inputs
from multijoin_bench.core.workloads import outer_star, workloads
from multijoin_bench.latency import boundaries
from multijoin_bench.core.cpu import CpuSplit, CpuWindow
from multijoin_bench.latency.run import INPUTS, query_frame, summary, timed
from multijoin_bench.scale.report import scale_markdown, scale_ratios
from multijoin_bench.soak.report import decile_summary, flatness
from spark_multijoin._session_conf import ENABLED_KEY
from support.metrics import progress_key
from support.runs import session_conf

PACKAGE = Path(metrics.__file__).resolve().parents[1]

pytestmark = pytest.mark.one_line  # the benchmark is the same Python on every line


@pytest.mark.slow
def test_benchmark_runs_both_modes_and_writes_its_results(spark, tmp_path):
    with session_conf(spark, {ENABLED_KEY: None}):
        run_benchmark(spark, workloads(["time_bounded"], shrink=50),
                      tmp_path / "out", tmp_path / "work", tiny=True)
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert [r["workload"] for r in results] == ["time_bounded"]
    format_4 = tuple(int(part) for part in spark.version.split(".")[:2]) >= (4, 3)
    for result in results:
        assert result["chain"]["output_rows"] == result["multi_join"]["output_rows"] > 0
        assert result["multi_join"]["multi_join_in_plan"]
        # Spark's chain on join state format 4 where the line has it, else said to be missing.
        if format_4:
            assert result["chain_v4"]["output_rows"] == result["multi_join"]["output_rows"]
        else:
            assert result["chain_v4"] is None and result["chain_v4_not_available"]
    # Both ran on Spark's in-memory store too, to the same rows (the benchmark checks them).
    assert all(r["in_memory_store"]["output_rows"] == r["multi_join"]["output_rows"]
               for r in results)
    assert (tmp_path / "out" / "state_and_batch_duration.png").stat().st_size > 0
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| time_bounded |" in table


def _progress(batch_id: int, input_rows: int, trigger_ms: int, add_batch_ms: int,
              operators: list[dict]) -> dict:
    return {"batchId": batch_id, "numInputRows": input_rows,
            "durationMs": {"triggerExecution": trigger_ms, "addBatch": add_batch_ms},
            "stateOperators": operators}


def test_batch_cost_averages_the_data_batches_after_the_first_and_sums_the_operators(spark):
    commit, key_reads = progress_key(spark, "COMMIT_TIME_MS"), progress_key(spark, "NUM_KEY_READS")
    operator = {commit: 10, "customMetrics": {key_reads: 4}}
    progress = [
        _progress(0, 100, 5000, 4000, [operator, operator]),  # the first: reported on its own
        _progress(1, 100, 1000, 600, [operator, {commit: 30, "customMetrics": {}}]),
        _progress(2, 100, 3000, 1400, [operator, operator]),
        _progress(3, 0, 9000, 0, [operator, operator]),  # no data: not a batch's cost
    ]
    cost = batch_cost(progress)
    assert cost["batches"] == 3 and cost["first_batch_ms"] == 5000
    assert cost["trigger_ms"] == 2000 and cost["addBatch"] == 1000
    assert cost["other"] == 1000, "the trigger's time outside the engine's phases"
    assert cost[commit] == 30, "(10 + 30 + 10 + 10) / 2"
    assert cost[key_reads] == 6, "(4 + 0 + 4 + 4) / 2"
    table = breakdown_markdown([{"workload": "w", "query": "q", **cost}])
    assert table.splitlines()[2].startswith("| w | q | 5,000 | 2,000 |")


def test_the_chart_is_on_a_log_scale_only_where_the_series_are_orders_of_magnitude_apart():
    assert orders_of_magnitude_apart([1, 5000, 20], [1, 400, 10])
    assert not orders_of_magnitude_apart([1, 3000], [2, 400])
    assert not orders_of_magnitude_apart([0, 0], [5, 10])


@pytest.mark.slow
def test_outer_star_fuses_into_one_multi_join_with_the_batch_querys_answer(spark, tmp_path):
    workload = outer_star(keys=1, n_batches=2, fan_out=2)
    inputs(workload, tmp_path).write()
    with session_conf(spark, {ENABLED_KEY: None}):
        multi = run_mode(spark, workload, tmp_path, enabled=True)
    assert multi["multi_join_in_plan"]
    batch_rows = workload.query(inputs(workload, tmp_path).tables(spark)).collect()
    assert multi["output_rows"] == len(batch_rows) > 0
    assert any(value is None for row in batch_rows for value in row), "some are null-padded"


def test_the_benchmark_reads_the_multi_join_names_from_the_registry(spark):
    """The benchmark's package spells none of the names the registry gives (the operator's and its
    metrics' progress keys): it reads them through the session's JVM, so that renaming a metric
    there changes what the benchmark reads rather than blanking a column."""
    registry = metrics.read_registry(spark)
    assert metrics.registry() == registry
    assert metrics.key(metrics.KEY_READS) == progress_key(spark, "NUM_KEY_READS")
    jvm_registry = spark._jvm.io.github.sparkmultijoin.execution.MultiJoinMetrics
    every_metric = jvm_registry.all()
    keys = {every_metric.apply(i).progressKey().get() for i in range(every_metric.size())
            if every_metric.apply(i).progressKey().isDefined()}
    assert set(registry.keys.values()) <= keys
    sources = {str(path.relative_to(PACKAGE)): path.read_text()
               for path in PACKAGE.rglob("*.py")}
    spelled = [(name, word) for name, text in sources.items()
               for word in keys | {registry.operator} if f'"{word}"' in text]
    assert sources and spelled == []


def _mode(state_rows_peak: int, state_bytes: int, wall_seconds: float) -> dict:
    return {"state_rows_peak": state_rows_peak, "state_bytes_on_disk": state_bytes,
            "wall_seconds": wall_seconds, "batch_ms_p50": 1, "batch_ms_p95": 2}


def test_the_chain_on_both_join_state_formats_is_set_against_the_multi_join():
    result = {"multi_join": _mode(100, 1000, 2.0), "chain": _mode(800, 9000, 9.0),
              "chain_v4": _mode(500, 5000, 5.0), "multi_join_micro_batches_seconds": 2.5}
    assert chain_ratios(result) == {"state_rows_peak": 8.0, "state_bytes": 9.0, "wall_time": 4.5,
                                    "state_rows_peak_v4": 5.0, "state_bytes_v4": 5.0,
                                    "wall_time_v4": 2.5}
    assert chain_cells(result) == ["8.0x / 5.0x", "9.0x / 5.0x", "3.60x / 2.00x"]


def test_format_4_not_available_is_reported_and_not_a_ratio():
    result = {"workload": "w", "multi_join": _mode(100, 1000, 2.0), "chain": _mode(800, 9000, 9.0),
              "chain_v4": None, "chain_v4_not_available": "Spark 4.1.1 has no join state format 4",
              "multi_join_micro_batches_seconds": 2.5}
    assert chain_ratios(result)["wall_time_v4"] is None
    assert chain_cells(result)[0] == "8.0x / -"
    assert "not available: Spark 4.1.1" in "\n".join(chain_v4_markdown([result]))


def test_scale_ratios_only_where_both_sides_finished():
    multi = {"finished": True, "wall_seconds": 10.0, "state_bytes_on_disk": 100}
    result = {"multi_join": multi,
              "chain": {"finished": True, "wall_seconds": 25.0, "state_bytes_on_disk": 300},
              "chain_v4": {"finished": False, "wall_seconds": 1200.0, "state_bytes_on_disk": 50},
              "flink_rocksdb": {"finished": True, "wall_seconds": 15.0}}
    assert scale_ratios(result) == {"chain_wall_time": 2.5, "chain_state_bytes": 3.0,
                                    "chain_v4_wall_time": None, "chain_v4_state_bytes": None,
                                    "flink_rocksdb_wall_time": 1.5}
    assert "no, stopped at the cap" in scale_markdown([{
        "workload": "w", **result, "chain": None, "chain_not_available": "n/a",
        "multi_join": {**multi, "batches_done": 3, "input_rows_done": 9, "output_rows": 4,
                       "state_rows_peak": 7, "peak_rss_mb": 512, "per_batch": []},
        "chain_v4": {**result["chain_v4"], "batches_done": 1, "input_rows_done": 3,
                     "output_rows": 0, "state_rows_peak": 2, "peak_rss_mb": 400,
                     "per_batch": []}}])


def test_generated_inputs_hold_every_key_once_per_copy_in_batches_of_their_own():
    workload = workloads(["scale_fanout_1m"], shrink=100_000)[0]  # 10 keys, 3 batches
    for i, fan_out in enumerate([1, 2, 2, 1, 1]):
        keys = sorted(row["k"] for batch in workload.batches[i] for row in batch)
        assert keys == sorted(list(range(10)) * fan_out)
        assert sum(len(batch) for batch in workload.batches[i]) == len(keys)
    first_batches = [{row["k"] for row in workload.batches[i][0]} for i in range(5)]
    assert len({frozenset(keys) for keys in first_batches}) > 1, "inputs differ per batch"


def test_soak_deciles_and_whether_each_measure_stays_flat():
    per_batch = [{"batch": b, "ms": 100 + (b % 10 == 9) * 900, "state_rows": min(b, 15) * 10}
                 for b in range(100)]
    samples = [{"batch": b, "checkpoint_bytes": 1_000_000 + b * 10_000,
                **({"heap_after_gc_mb": 80.0} if b % 10 == 0 else {})} for b in range(100)]
    deciles = decile_summary(per_batch, samples, 100)
    assert [d["state_rows"] for d in deciles] == [90] + [150] * 9
    assert deciles[0]["batch_ms_p50"] == 100 and deciles[0]["batch_ms_p99"] == 1000
    verdicts = flatness(deciles)
    assert verdicts["state_rows"]["flat"] and verdicts["heap_after_gc_mb"]["flat"]
    assert verdicts["state_rows"]["second_half_slope"] == 0
    assert not verdicts["checkpoint_mb"]["flat"], "from 1.19 MB to 1.99 MB"
    assert verdicts["checkpoint_mb"]["second_half_slope"] > 0
    assert flatness(deciles[:2])["state_rows"] is None


def test_latency_reports_each_boundarys_pause_and_p99_after_the_first():
    # One key due every 100 ms for 10 s, each out 50 ms after, but those due in the 500 ms
    # before a batch that starts at 4.5 s wait until 4.9 s, and those in the 200 ms before one at
    # 8 s until 8.2 s.
    due = [(key, key / 10) for key in range(100)]
    waits = {4.5: 4.9, 8.0: 8.2}

    def arrival(at: float) -> float:
        return next((out for start, out in waits.items() if start - 0.5 <= at < start
                     and (start == 4.5 or at >= start - 0.2)), at + 0.05)
    arrived = [(key, at, arrival(at)) for key, at in due]
    result = summary("real_time", 10, 100, arrived, boundaries=list(waits))
    assert result["boundary_pauses_ms"] == [900, 400]
    after = sorted((arrival(at) - at) * 1000 for _, at in due if at > 4.5 + 1.0)
    assert result["p99_after_first_boundary_ms"] == round(after[int(0.99 * len(after))], 1)
    assert result["p99_after_first_boundary_ms"] < result["max_ms"] == 900
    # Key 0 was due before the first row came out (itself): not timed.
    assert (result["duplicated"], result["not_out"], result["untimed"]) == (0, 0, 1)


def test_latency_leaves_out_the_rows_due_before_the_first_came_out_and_counts_copies():
    # Keys 0 and 1 were due before the query's first row came out at 0.3 s; key 3 twice, key 4
    # never; a union of two inputs gives each key twice.
    arrived = [(0, 0.0, 0.3), (1, 0.1, 0.31), (2, 0.35, 0.4), (3, 0.4, 0.45), (3, 0.4, 0.5)]
    result = summary("real_time", 10, 5, arrived, boundaries=[])
    assert (result["untimed"], result["duplicated"], result["not_out"]) == (2, 1, 1)
    assert result["max_ms"] == 100
    twice = summary("real_time_source_only", 10, 1, [(0, 0.0, 0.1), (0, 0.0, 0.2)], [], copies=2)
    assert (twice["duplicated"], twice["not_out"]) == (0, 0)


def test_latency_times_every_row_due_once_the_querys_first_tasks_read():
    # The first tasks read from 0.2 s: keys 0 and 1 are not timed, key 2 is, though the first
    # row came out at 0.5 s; of key 2's two copies the first came out after 200 ms, the last
    # after 600 ms.
    arrived = [(0, 0.1, 0.95), (1, 0.1, 0.9), (1, 0.1, 0.9), (2, 0.3, 0.5), (2, 0.3, 0.9)]
    result = summary("real_time_shuffle_only", 10, 3, arrived, [], copies=2, clock_start=0.2)
    assert (result["untimed"], result["not_out"]) == (3, 1)
    assert (result["first_copy_p50_ms"], result["last_copy_p50_ms"]) == (200, 600)
    assert (result["first_copy_p99_ms"], result["last_copy_p99_ms"]) == (200, 600)


def test_latency_time_bound_joins_within_it_and_deduplicates_on_key_and_time(spark):
    # Per input, one row a key, sent up to 15 s from 100 s: with a bound of 10 s a key joins
    # where each input's row is within 10 s of input 0's; the deduplication keeps one row per
    # distinct (key, send time). The queries run here as batch queries over the same frames.
    random = Random(4949)
    sent = {key: [100_000 + random.randint(-15, 15) * 1000 for _ in range(INPUTS)]
            for key in range(40)}
    frames = [timed(spark.createDataFrame([(key, times[i]) for key, times in sent.items()],
                                          f"k{i} long, sent{i} long"), i, 10)
              for i in range(INPUTS)]
    expected_joined = sorted((key, max(times)) for key, times in sent.items()
                             if all(abs(t - times[0]) <= 10_000 for t in times))
    assert 0 < len(expected_joined) < len(sent)
    joined_rows = query_frame("real_time", frames, time_bound=10).collect()
    assert sorted((r.k0, r.sent) for r in joined_rows) == expected_joined
    distinct = query_frame("real_time_deduplication", frames, time_bound=10).collect()
    assert len(distinct) == sum(len(set(times)) for times in sent.values())
    assert sorted({r.k0 for r in distinct}) == sorted(sent)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_cpu_window_gives_the_cores_a_process_used_between_its_marks():
    # This process spins through the window, then idles after it: the window gives what
    # Python's own clock of its CPU time says the spin used (a core on an idle machine, less
    # beside other work), and nothing of the idle time after the end.
    began = time.time()
    window = CpuWindow(os.getpid(), began, began + 0.5)
    window.check()
    cpu_before = time.process_time()
    while time.time() < began + 0.5:
        pass
    spun = time.process_time() - cpu_before
    window.check()
    time.sleep(0.3)
    window.check()
    assert len(window.readings) == 2
    elapsed = window.readings[1][0] - window.readings[0][0]
    assert window.cores() == pytest.approx(spun / elapsed, abs=0.1)
    assert window.cores() > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_cpu_split_gives_a_process_its_cores_and_the_machine_at_least_those():
    # A spin of this process: its share is what Python's own clock says it used, and the
    # machine was busy at least that much; a process that is gone reads as None.
    split = CpuSplit({"spinner": os.getpid(), "gone": None})
    before, cpu_before = split.read(), time.process_time()
    while time.time() < before["at"] + 0.5:
        pass
    spun = time.process_time() - cpu_before
    cores = split.cores_since(before)
    assert cores["spinner_cores"] == pytest.approx(spun / (time.time() - before["at"]), abs=0.1)
    assert cores["machine_cores"] >= cores["spinner_cores"] - 0.05 > 0
    assert cores["gone_cores"] is None


def test_boundary_parts_split_the_pause_from_the_event_log(tmp_path):
    # Batch 0's sources end at 10,000 ms and its stateful tasks at 10,030; its job ends at
    # 10,040, batch 1's is submitted at 10,140 (planned in 60 ms), its sources run from 10,160;
    # a row due at 10,050 comes out at 10,230.
    def job(job_id, start, end, stages):
        return [{"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": start,
                 "Stage IDs": stages, "Properties": {"sql.streaming.queryId": "q"}},
                {"Event": "SparkListenerJobEnd", "Job ID": job_id, "Completion Time": end}]

    def task(stage, launch, finish, deserialize=0):
        return {"Event": "SparkListenerTaskEnd", "Stage ID": stage,
                "Task Info": {"Launch Time": launch, "Finish Time": finish},
                "Task Metrics": {"Executor Deserialize Time": deserialize}}

    def progress(planning):
        return {"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent",
                "progress": {"id": "q", "durationMs": {"queryPlanning": planning}}}
    events = (job(0, 0, 10_040, [0, 1]) + job(1, 10_140, 20_000, [2, 3])
              + [task(0, 5, 10_000), task(0, 5, 10_010), task(1, 5, 10_030),
                 task(2, 10_150, 19_990, 10), task(2, 10_145, 19_990), task(3, 10_150, 19_995),
                 progress(500), progress(60)])
    log = tmp_path / "events"
    log.write_text("\n".join(json.dumps(event) for event in events))
    rows = [(9_990.0, 10_001.0), (10_050.0, 10_230.0), (10_170.0, 10_200.0)]
    jobs = boundaries.read_jobs(log)["q"]
    parts = boundaries.summary(jobs, rows)
    assert parts["boundaries"] == 1
    assert parts["first"] == {"batch end": 30, "driver": 100, "planning": 60, "task start": 20,
                              "first row out": 70}
    assert boundaries.reading_from(jobs[0]) == 5


def test_boundary_parts_of_a_query_without_a_shuffle(tmp_path):
    # One stage a job (the union alone into the sink): its sources are its last stage too.
    events = [{"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 0,
               "Stage IDs": [0], "Properties": {"sql.streaming.queryId": "q"}},
              {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 1_000},
              {"Event": "SparkListenerTaskEnd", "Stage ID": 0,
               "Task Info": {"Launch Time": 3, "Finish Time": 990}, "Task Metrics": {}}]
    log = tmp_path / "events"
    log.write_text("\n".join(json.dumps(event) for event in events))
    jobs = boundaries.read_jobs(log)["q"]
    assert boundaries.reading_from(jobs[0]) == 3
    assert boundaries.summary(jobs, []) == {}
