"""Benchmark: the same streaming joins with multi-join off (Spark's chain) and on.

    python -m multijoin_bench [--workloads fanout,primary_key,time_bounded,outer_star,scale]
                            [--out benchmark-results] [--tiny] [--flink] [--breakdown]
                            [--cap-minutes 20] [--driver-memory 6g] [--soak N]
                            [--scale-peers chain,chain_v4,multi_join,flink_rocksdb]
                            [--latency 1000,10000 [--latency-seconds 20]]

It writes `results.json`, `results.md` (the tables the docs show) and
`state_and_batch_duration.png` (state rows and batch duration per batch, both modes) to --out.
`--tiny` divides the data by 50 (and the batches from 4 to 2, time_bounded's and outer_star's
from 20 to 4, outer_star's fan-out from 3 to 2), uses 2 shuffle partitions instead of 4, skips
the warm-up and times everything once, for a smoke run (the test suite runs it in its own
session through `run_benchmark`).

`--flink` (needs the benchmark's `flink` extra, which `scripts/benchmark --flink` installs) also
runs Flink on the same files of every workload, in a subprocess with its own JVM (flink/peer.py):
Flink's MultiJoin with its default state backend (on the heap) and with the embedded RocksDB one
(where the multi-join keeps its state), its binary joins and a scan-only job (Flink's fixed
cost), best of two each, and checks that Flink's output rows are Spark's and that only the
RocksDB mode ran RocksDB.

`--breakdown` runs, instead, where each micro-batch's time goes (core/breakdown.py), and writes
`breakdown.json` and `breakdown.md` to --out.

The scale workloads (scale_pk_1m, scale_pk_2m, scale_fanout_1m, scale_fanout_2m, hot_key) run
only by name, through scale/run.py: each peer capped at --cap-minutes, RocksDB on bounded memory;
they write `scale_results.json`, `scale_results.md` and `cost_growth.png`. The hot key's target
is to finish with `--driver-memory 4g`. `--scale-peers multi_join,flink_rocksdb` runs only those
peers (chain, chain_v4, multi_join, flink_rocksdb; the multi-join always runs), the others
reported as not run.

`--latency RATES` runs, instead, a 4-way inner multi-join fed at each rate (rows a second per
input) in Spark 4.3's real-time mode and in micro-batches (latency/run.py), on `local[8]`, and
writes `latency.json` and `latency.md`: each output row's time from its last input row's send to
the sink, p50, p99 and max, the pause at each real-time batch boundary, p99 after the first, and
the driver JVM's CPU while the rows are due (`--latency-batch` sets the real-time batch's length
in seconds, 10 by default; `--latency-time-bound S` joins the inputs within S seconds of event
time, for bounded state; `--latency-modes` picks runs among real_time_first_query (the driver's
first real-time query, which pays what its JVM does once), real_time, micro_batch_0s,
micro_batch_1s and real_time_deduplication, Spark's deduplication of the same inputs' union, and
real_time_source_only, the union alone into the sink, and real_time_shuffle_only, the union
shuffled by key into the sink; with `--flink`, Flink's MultiJoin too, flink/latency.py, with its
default network buffer timeout and with none).

`--cdc cdc_left10,cdc_star` runs, instead, the CDC benchmark (cdc/run.py): the changelog join of
tables' Debezium changes into a noop sink and into Delta, and the foreachBatch recipe, at each of
`--batch-sizes` (changes a micro-batch), over `--changes` changes, each run capped at
--cap-minutes, with `--flink` Flink's peer on the same changes (`--flink-modes`, `--flink-runs`
each, capped at --cap-minutes a run); it writes `cdc_results.json`,
`cdc_results.md` and `cdc_cost.png`. It needs Delta's jars: scripts/benchmark runs it in the
venv scripts/setup-kafka makes.

`--cdc-sweep cdc_left10,cdc_star,cdc_skew` runs, instead, the CDC sweep (cdc/sweep.py): each
peer at stages of offered load through a Kafka broker of its own, each stage --sweep-seconds
long, with the p99 latency of markers among the changes; with `--flink`, Flink's modes too
(`--sweep-peers` picks peers by name). Each peer's sweep is kept as it ends, so a run that is cut
off goes on where it stopped (`--again` runs them anew); it writes `cdc_sweep.json`,
`cdc_sweep.md` and `cdc_sweep.png`.

`--soak N` runs, instead, a time-bounded multi-join (and Spark's chain) over N small
micro-batches (soak/run.py), and writes `soak.json`, `soak.md` and `soak.png`.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from multijoin_bench.cdc.run import (BATCH_SIZES, CHANGES, NOOP_RUNS, TINY_BATCH_SIZES,
                                     TINY_CHANGES, FlinkPeer, cdc_session, rerun, run_cdc)
from multijoin_bench.core.benchmark import run_benchmark
from multijoin_bench.core.breakdown import run_breakdown
from multijoin_bench.core.workloads import NAMES, workloads
from multijoin_bench.latency.run import FLINK_MODES, compiled_writer, run_latency
from multijoin_bench.scale.run import SCALE_PEERS, run_scale
from multijoin_bench.scale.workloads import SCALE_NAMES
from multijoin_bench.soak.run import run_soak
from spark_multijoin import configure_spark_with_multijoin


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/benchmark",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(NAMES))
    parser.add_argument("--out", type=Path, default=Path("benchmark-results"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-benchmark"))
    parser.add_argument("--tiny", action="store_true",
                        help="1/50 of the data and one run of each timing, for a smoke run")
    parser.add_argument("--breakdown", action="store_true",
                        help="instead, where each micro-batch's time goes (multi-join, Spark's "
                        "deduplication, stateless query) on the chosen workloads")
    parser.add_argument("--cap-minutes", type=float, default=20,
                        help="the scale workloads: stop a peer after this long")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--scale-peers", default=",".join(SCALE_PEERS),
                        help="the scale workloads: the peers to run (the multi-join always runs)")
    parser.add_argument("--soak", type=int, default=0, metavar="N",
                        help="instead, the soak run over N micro-batches")
    parser.add_argument("--latency", default="", metavar="RATES",
                        help="instead, latency in real-time mode and micro-batches at these "
                        "rates (rows a second per input, comma-separated; needs Spark 4.3)")
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument("--latency-batch", type=int, default=10, metavar="SECONDS",
                        help="the length of a real-time batch in the latency runs")
    parser.add_argument("--latency-time-bound", type=int, default=None, metavar="SECONDS",
                        help="the latency runs' inputs join (and deduplicate) within this "
                        "bound of event time, with watermarks as far behind: bounded state")
    parser.add_argument("--latency-modes", default="real_time_first_query,real_time,"
                        "micro_batch_0s,micro_batch_1s,real_time_deduplication,"
                        "real_time_source_only,real_time_shuffle_only",
                        help="the latency runs to make, in this order")
    add_cdc_arguments(parser)
    add_sweep_arguments(parser)
    return parser.parse_args()


def add_cdc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cdc", default="", metavar="WORKLOADS",
                        help="instead, the CDC benchmark on these workloads (cdc_left10, "
                        "cdc_star), in Spark 4.1's venv with Delta's jars")
    parser.add_argument("--changes", type=int, default=None,
                        help=f"--cdc: changes per workload ({CHANGES:,}; --tiny {TINY_CHANGES:,})")
    parser.add_argument("--batch-sizes", default=None, metavar="SIZES",
                        help="--cdc: changes a micro-batch, comma-separated, each a multiple of "
                        f"the smallest ({','.join(map(str, BATCH_SIZES))}; --tiny "
                        f"{','.join(map(str, TINY_BATCH_SIZES))})")
    parser.add_argument("--flink", action="store_true",
                        help="also run Flink (MultiJoin on the heap and in RocksDB, binary "
                        "joins, scan only) on the keyed workloads' files (needs the flink extra)")
    parser.add_argument("--again", default="", metavar="PARTS",
                        help="--cdc: only these parts again (spark, state, flink), over the files the "
                        "run that wrote --out's results left in --work; rewrites those results")
    parser.add_argument("--flink-modes", default=None, metavar="MODES",
                        help="--cdc --flink: only these of Flink's modes, comma-separated "
                        "(multi_join_rocksdb for a long run; default: every mode)")
    parser.add_argument("--flink-runs", type=int, default=NOOP_RUNS, metavar="N",
                        help="--cdc: timed runs of each of Flink's modes, the best reported "
                        f"(default {NOOP_RUNS}; 1 for a long run)")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cdc-sweep", default="", metavar="WORKLOADS",
                        help="instead, the CDC sweep on these workloads (cdc_left10, cdc_star, "
                        "cdc_skew), in Spark 4.1's venv")
    parser.add_argument("--sweep-peers", default="", metavar="PEERS",
                        help="--cdc-sweep: only these peers, comma-separated (default: ours, and "
                        "with --flink every Flink mode)")
    parser.add_argument("--sweep-seconds", type=float, default=None, metavar="S",
                        help="--cdc-sweep: seconds a stage of offered load (60; --tiny 6)")
    parser.add_argument("--sweep-kept", action="store_true",
                        help="--cdc-sweep: run no peer; the report of the kept sweeps alone "
                        "(a run cut off mid-way)")


def main_sweep(args: argparse.Namespace) -> None:
    from multijoin_bench.cdc.sweep import peer_names, run_sweep
    from multijoin_bench.latency.run import compiled_writer

    spark = cdc_session(args.driver_memory, 2 if args.tiny else 4,
                        compiled_writer(args.work / "classes"))
    peers = args.sweep_peers.split(",") if args.sweep_peers else peer_names(args.flink)
    run_sweep(spark, args.cdc_sweep.split(","), peers,
              args.sweep_seconds or (6 if args.tiny else 60), args.out, args.work / "cdc_sweep",
              args.driver_memory, again=bool(args.again), tiny=args.tiny,
              kept_only=args.sweep_kept)
    spark.stop()


def scale_peers(names: str) -> set[str]:
    chosen = set(names.split(","))
    if unknown := chosen - set(SCALE_PEERS):
        raise SystemExit(f"--scale-peers: unknown peer(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(SCALE_PEERS)}")
    return chosen


def main_cdc(args: argparse.Namespace) -> None:
    sizes = args.batch_sizes or ",".join(map(str, TINY_BATCH_SIZES if args.tiny else BATCH_SIZES))
    spark = cdc_session(args.driver_memory, 2 if args.tiny else 4)
    peer = FlinkPeer(args.flink_modes.split(",") if args.flink_modes else None, args.flink_runs)
    if args.again:
        rerun(spark, args.cdc.split(","), args.again.split(","), args.out, args.work / "cdc",
              args.cap_minutes * 60, peer)
        return spark.stop()
    run_cdc(spark, args.cdc.split(","), args.changes or (TINY_CHANGES if args.tiny else CHANGES),
            [int(size) for size in sizes.split(",")], args.out, args.work / "cdc",
            args.cap_minutes * 60, flink=peer if args.flink else None, warm_up=not args.tiny)
    spark.stop()


def main_latency(spark: SparkSession, args: argparse.Namespace) -> None:
    modes = args.latency_modes.split(",") + (list(FLINK_MODES) if args.flink else [])
    run_latency(spark, [int(r) for r in args.latency.split(",")], args.latency_seconds,
                args.latency_batch, modes, args.out, args.work / "latency",
                args.latency_time_bound)


def main() -> None:
    args = arguments()
    if args.cdc:
        return main_cdc(args)
    if args.cdc_sweep:
        return main_sweep(args)
    chosen = workloads(args.workloads.split(","), shrink=50 if args.tiny else 1)
    builder = (SparkSession.builder.master("local[2]").appName("multijoin-benchmark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2" if args.tiny else "4")
               .config("spark.driver.memory", args.driver_memory))
    if args.latency:
        # Real-time mode runs every source task and every stateful task at once: a slot each.
        events = args.work / "latency" / "events"
        shutil.rmtree(events, ignore_errors=True)
        events.mkdir(parents=True)
        builder = builder.master("local[8]").config(
            "spark.driver.extraClassPath", str(compiled_writer(args.work / "classes")))
        # Spark's event log, for where each batch boundary's pause goes (latency/boundaries.py).
        for key, value in {"enabled": "true", "dir": str(events), "compress": "false",
                           "rolling.enabled": "false"}.items():
            builder = builder.config(f"spark.eventLog.{key}", value)
    spark = configure_spark_with_multijoin(builder, real_time=bool(args.latency)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    at_scale = [w for w in chosen if w.name in SCALE_NAMES]
    others = [w for w in chosen if w.name not in SCALE_NAMES]
    if args.latency:
        main_latency(spark, args)
    elif args.soak:
        run_soak(spark, args.soak, args.out, args.work / "soak", args.cap_minutes * 60)
    elif args.breakdown:
        run_breakdown(spark, chosen, args.out, args.work)
    else:
        if others:
            run_benchmark(spark, others, args.out, args.work, tiny=args.tiny,
                          with_flink=args.flink)
        if at_scale:
            run_scale(spark, at_scale, args.out, args.work / "scale", args.cap_minutes * 60,
                      with_flink=args.flink, peers=scale_peers(args.scale_peers))
    spark.stop()


if __name__ == "__main__":
    main()
