"""The Flink latency peer's SQL text, configuration and summary, without Flink (the peer itself
runs only under /work/venv-flink's PyFlink)."""

from __future__ import annotations

from multijoin_bench.flink import latency as flink_latency


def test_join_takes_the_last_rows_production_and_the_joins_output_time():
    assert flink_latency.join_select(3) == (
        "SELECT t0.`k` AS k, CAST(GREATEST(t0.`ts`, t1.`ts`, t2.`ts`) AS TIMESTAMP(3)) "
        "AS produced, CAST(CURRENT_TIMESTAMP AS TIMESTAMP(3)) AS joined FROM input0 t0 "
        "JOIN input1 t1 ON t0.`k` = t1.`k` JOIN input2 t2 ON t0.`k` = t2.`k`")
    assert flink_latency.join_select().count(" JOIN ") == flink_latency.INPUTS - 1


def test_config_turns_on_the_multi_join_and_nothing_that_batches_rows():
    config = flink_latency.job_config()
    assert config["table.optimizer.multi-join.enabled"] == "true"
    assert config["table.exec.mini-batch.enabled"] == "false"
    assert not any("checkpoint" in key for key in config)
    assert "execution.buffer-timeout.interval" not in config
    assert flink_latency.job_config(0)["execution.buffer-timeout.interval"] == "0 ms"


def test_summary_counts_duplicates_and_missing_keys_as_latency_py_does():
    rows = [(0, 10.0), (1, 30.0), (1, 31.0), (3, 20.0)]
    out = flink_latency.summary(500, 4, rows)
    assert out == {"mode": "flink_multi_join", "rate_per_input": 500, "keys_sent": 4,
                   "rows_out": 4, "duplicated": 1, "not_out": 1, "p50_ms": 30.0,
                   "p99_ms": 31.0, "max_ms": 31.0, "mean_ms": 22.8,
                   "p99_after_first_boundary_ms": None, "boundary_pauses_ms": []}
