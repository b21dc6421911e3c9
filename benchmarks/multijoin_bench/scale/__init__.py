"""The scale workloads (`--workloads scale_pk_1m,...`), run only by name, each peer capped."""
