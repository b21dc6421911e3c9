"""The benchmark: the same streaming joins with multi-join off (Spark's chain) and on.

Run from the repository's root as `scripts/benchmark [OPTIONS]` (which installs the extras it
needs) or `python -m scripts.bench [OPTIONS]` (see __main__.py).

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

Modules, by job: `workload` (what a workload is, and its input files), `workloads` (the workloads'
inputs and queries), `runs` (running a query to its end, timing), `runners` (Spark's chain, the
multi-join and the floors), `benchmark` (each workload measured, checked and written), `breakdown`
(`--breakdown`), `flink` and `flink_peer` (Flink as a peer, `--flink`), `metrics` (the names read
from Spark's progress), `report` (markdown and JSON) and `chart`; `scale_workloads`, `scale` and
`scale_report` (the workloads run only by name, each peer capped) and `soak` and `soak_report`
(`--soak N`).
"""
