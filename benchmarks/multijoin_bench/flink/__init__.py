"""Flink as the benchmark's peer (`--flink`): launch.py runs each Flink job in a process of its
own (PyFlink starts its own JVM, which never shares one with Spark's), on the default
workloads' files (peer.py), on the CDC workloads' changes (cdc_peer.py) and at a paced rate
(latency.py)."""
