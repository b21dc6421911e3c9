"""The benchmark's shared core: what a workload is and the default workloads, running and
timing queries, Spark's chain, the multi-join and the floors, the progress metrics, the
results and the chart, and `--breakdown`."""
