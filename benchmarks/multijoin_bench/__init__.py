"""The benchmark: the same streaming joins with multi-join off (Spark's chain) and on.

Run from the repository's root as `scripts/benchmark [OPTIONS]` (which installs the benchmark and
what it needs) or `python -m multijoin_bench [OPTIONS]` (see __main__.py).

Each workload writes its input files once (one file per input and micro-batch), then runs the
query over them with multi-join off and on, in this order, in one Spark session. It reports, per
mode: output rows (which must agree), wall time, input rows per second, p50/p95 micro-batch
duration, state rows after the last batch (and their peak), and state bytes on disk in the
checkpoint.

The floor: the same join as a batch query over all files, against the multi-join over all files
in one trigger (the same work as one streaming query), five runs of each, alternating (medians).
A stateless streaming query over the same files, in the same micro-batches and in one trigger,
shows what streaming costs before any join; Spark's streaming deduplication of the same rows, in
both too, what storing them in Spark's own stateful operator costs (medians of three). The
multi-join's time in micro-batches, which the ratios set against those floors and against Flink,
is measured as they are (median of three warm runs), apart from its run above, which gives the
state metrics and Spark's chain's peer.

Where the rule runs a workload's join on Spark's in-memory state store (Spark's default
provider; every workload here), the multi-join is also timed on it, three warm runs each in
micro-batches and in one trigger, with Spark's deduplication of the same rows on that store; its
output rows must be the same.

Every workload's output rows must be the same with Spark's chain, the multi-join and the batch
query over all files (and Flink, with `--flink`).

Subpackages, by family: `core` (what a workload is and the default workloads, running and timing
queries, Spark's chain, the multi-join and the floors, the progress metrics, the results and the
chart, and `--breakdown`), `flink` (Flink as a peer, `--flink`: launched from Spark's side, each
job in a process of its own), `scale` (the workloads run only by name, each peer capped), `cdc`
(`--cdc`, tables that change), `soak` (`--soak N`) and `latency` (`--latency`, real-time mode).
`results_tables` copies the result files' tables into docs/benchmarks.md.
"""
