"""Flink's MultiJoin as the latency run's peer (latency/run.py): a 4-way inner join on one integer
key, R keys a second per input, key n once in every input, so each key completes one row.

    python -m multijoin_bench.flink.latency --rate 1000 --seconds 40 --out OUT.json

PyFlink starts its own JVM, so this imports neither Spark nor the rest of the benchmark. Each
input is Flink's `DataGeneratorSource` (parallelism 1) emitting keys 0..R*seconds-1 paced by
its rate limiter, one row at a time at R a second, as a view with a computed column
`ts AS CURRENT_TIMESTAMP`: the planner evaluates it in a Calc chained to the source, so it is
each row's production time. (The SQL `datagen` connector emits each second's R rows as one burst
at the second's start, and the rows late in a burst then wait for the burst's other rows.) The
join's SELECT takes GREATEST of the four `ts` and `CURRENT_TIMESTAMP` again, in a Calc chained
to the MultiJoin operator: a key's latency is the second less the first, both in Flink
(millisecond resolution), so it ends at the join's output, and the collect sink (to_pandas) and
Python are not in it. The job ends by itself once the bounded sources have sent their last key
and the join has emitted; a job not done 30 s after that (plus time to start) counts every key
missing, and is left running until the process ends (to_pandas gives no handle to cancel it).
Streaming mode, `table.optimizer.multi-join.enabled`, no checkpointing, no mini-batch,
the default heap state backend and Flink's default network buffer timeout (unless
`--buffer-timeout-ms`). The SQL text is built by pure functions, tested without Flink.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

MULTI_JOIN_KEY = "table.optimizer.multi-join.enabled"
INPUTS = 4
PARALLELISM = 1
# As latency/run.py: keys not out this long after the last should have been produced are missing.
GRACE_SECONDS = 30
# How long the job may take to start (mini-cluster, planning) before its sources run; the
# sources end by themselves after their last key, and so does the job once it has joined them.
STARTUP_SECONDS = 30


def input_schema():
    """An input's columns: its key, and when the source produced the row."""
    from pyflink.table import Schema

    return (Schema.new_builder().column("f0", "BIGINT").column_by_expression("k", "f0")
            .column_by_expression("ts", "CURRENT_TIMESTAMP").build())


def add_inputs(env, tables, rate: int, keys: int) -> None:
    """Views input0.. over sources of keys 0..keys-1, each paced at `rate` rows a second."""
    from pyflink.datastream.data_stream import DataStream
    from pyflink.java_gateway import get_gateway

    jvm, j_env = get_gateway().jvm, env._j_stream_execution_environment
    flink, java_stream = jvm.org.apache.flink, jvm.java.util.stream
    long_type = flink.api.common.typeinfo.Types.LONG
    for i in range(INPUTS):
        elements = java_stream.LongStream.range(0, keys).boxed().collect(
            java_stream.Collectors.toList())
        generator = flink.connector.datagen.functions.FromElementsGeneratorFunction(
            long_type, j_env.getConfig(), elements)
        source = flink.connector.datagen.source.DataGeneratorSource(
            generator, keys,
            flink.api.connector.source.util.ratelimit.RateLimiterStrategy.perSecond(float(rate)),
            long_type)
        stream = j_env.fromSource(
            source, flink.api.common.eventtime.WatermarkStrategy.noWatermarks(), f"input{i}")
        tables.create_temporary_view(f"input{i}", DataStream(stream.setParallelism(1)),
                                     input_schema())


def join_select(inputs: int = INPUTS) -> str:
    """Every input joined on input 0's k; per key, when its last row was produced and when the
    join emitted it."""
    joined = "".join(f" JOIN input{i} t{i} ON t0.`k` = t{i}.`k`" for i in range(1, inputs))
    produced = ", ".join(f"t{i}.`ts`" for i in range(inputs))
    # TIMESTAMP_LTZ does not reach Python (PyFlink cannot pickle it); TIMESTAMP(3) does.
    return (f"SELECT t0.`k` AS k, CAST(GREATEST({produced}) AS TIMESTAMP(3)) AS produced, "
            f"CAST(CURRENT_TIMESTAMP AS TIMESTAMP(3)) AS joined FROM input0 t0{joined}")


def job_config(buffer_timeout_ms: int | None = None) -> dict[str, str]:
    config = {"parallelism.default": str(PARALLELISM), MULTI_JOIN_KEY: "true",
              "table.exec.mini-batch.enabled": "false", "pipeline.name": "flink-latency"}
    if buffer_timeout_ms is not None:
        config["execution.buffer-timeout.interval"] = f"{buffer_timeout_ms} ms"
    return config


def _environments(buffer_timeout_ms: int | None):
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    config = Configuration()
    for key, value in job_config(buffer_timeout_ms).items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    return env, StreamTableEnvironment.create(env)


def collect_rows(rate: int, seconds: float,
                 buffer_timeout_ms: int | None) -> tuple[int, list[tuple[int, float]], str]:
    """Runs the join; (keys sent, (key, latency ms) per output row, the plan)."""
    keys = int(rate * seconds)
    streams, env = _environments(buffer_timeout_ms)
    add_inputs(streams, env, rate, keys)
    plan = env.explain_sql(join_select())
    if "MultiJoin" not in plan:
        raise RuntimeError(f"Flink's plan has no MultiJoin:\n{plan}")
    rows: list[tuple[int, float]] = []
    # to_pandas pulls the rows through Arrow batches built in the JVM; row by row (collect()),
    # Python reads fewer rows a second than the higher rate sends.
    reader = threading.Thread(target=lambda: rows.extend(latencies(
        env.sql_query(join_select()).to_pandas())), daemon=True)
    reader.start()
    reader.join(STARTUP_SECONDS + seconds + GRACE_SECONDS)
    if reader.is_alive():
        print("the job did not end in time: rows not out are counted missing", flush=True)
        return keys, [], plan
    return keys, rows, plan


def latencies(frame) -> list[tuple[int, float]]:
    """(key, ms from its last input row's production to the join's output) per output row."""
    millis = (frame["joined"] - frame["produced"]).dt.total_seconds() * 1000
    return list(zip(frame["k"].astype(int).tolist(), millis.tolist()))


def summary(rate: int, keys_sent: int, rows: list[tuple[int, float]]) -> dict:
    """The same counts and percentiles as latency/run.py's summary, for the rows out."""
    keys = [key for key, _ in rows]
    latencies = sorted(latency for key, latency in rows if 0 <= key < keys_sent)

    def pct(p: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) \
            if latencies else None

    return {"mode": "flink_multi_join", "rate_per_input": rate, "keys_sent": keys_sent,
            "rows_out": len(rows), "duplicated": len(keys) - len(set(keys)),
            "not_out": len(set(range(keys_sent)) - set(keys)),
            "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1.0),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
            "p99_after_first_boundary_ms": None, "boundary_pauses_ms": []}


def run_flink_latency(rate: int, seconds: float, work: Path,
                      buffer_timeout_ms: int | None = None) -> dict:
    """One run at `rate` keys a second per input for `seconds`; `work` receives the plan and
    each row's (key, latency ms)."""
    started = time.time()
    keys_sent, rows, plan = collect_rows(rate, seconds, buffer_timeout_ms)
    work.mkdir(parents=True, exist_ok=True)
    (work / f"flink-latency-{rate}-plan.txt").write_text(plan)
    (work / f"flink-latency-{rate}-rows.csv").write_text(
        "".join(f"{key},{latency:.0f}\n" for key, latency in rows))
    print(f"flink latency run at {rate}/s took {time.time() - started:.1f} s", flush=True)
    return summary(rate, keys_sent, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--buffer-timeout-ms", type=int, default=None,
                        help="Flink's network buffer timeout (default: Flink's own)")
    args = parser.parse_args()
    out = run_flink_latency(args.rate, args.seconds, args.work, args.buffer_timeout_ms)
    args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
