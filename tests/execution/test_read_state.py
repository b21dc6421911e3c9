"""read_state reads each input's stored rows from the checkpoint of a stopped multi-join."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.errors import IllegalArgumentException

from spark_multijoin import read_state
from spark_multijoin._session_conf import STATE_TTL_KEY
from spark_multijoin.testing import join_on_k
from support.generators import keyed_inputs
from support.runs import STATE_STORES, run_to_parquet, session_conf
from support.spark_lines import skip_without_checkpoint_format_v2

N_INPUTS = 3
N_BATCHES = 2


@pytest.fixture(scope="module", params=[(store, None) for store in sorted(STATE_STORES)] +
                [("in-memory", "1h")], ids=lambda param: "-".join(filter(None, param)))
def checkpoint(spark, tmp_path_factory, request):
    """An inner chain without time bounds, stopped after its micro-batches, on each state store,
    and on the in-memory one with a state TTL (whose rows keep their store times): every row with
    a non-null key is stored, in the micro-batch of its file (one file per trigger)."""
    store, ttl = request.param
    skip_without_checkpoint_format_v2(spark, STATE_STORES[store])
    root = tmp_path_factory.mktemp("read_state")
    inputs = keyed_inputs(root / "inputs", N_INPUTS, seed=3, n_batches=N_BATCHES)
    for i in range(N_INPUTS):
        inputs.batches[i][1].append({"k": None, f"v{i}": 7})  # never stored
        inputs.write_batch(i, 1, inputs.batches[i][1])
    with session_conf(spark, {**STATE_STORES[store], STATE_TTL_KEY: ttl}):
        run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=root / "ckpt",
                       output=root / "out")
    return root / "ckpt", inputs


def stored(inputs, i, up_to_batch=N_BATCHES - 1):
    return Counter((row["k"], row[f"v{i}"], batch)
                   for batch, rows in enumerate(inputs.batches[i][:up_to_batch + 1])
                   for row in rows if row["k"] is not None)


def test_read_state_returns_each_inputs_stored_rows(spark, checkpoint):
    location, inputs = checkpoint
    for i in range(N_INPUTS):
        state = read_state(spark, location, i)
        assert state.columns == ["k", f"v{i}", "batch_id", "partition_id"]
        rows = state.collect()
        assert Counter((r.k, r[f"v{i}"], r.batch_id) for r in rows) == stored(inputs, i)
        assert {r.partition_id for r in rows} <= {0, 1}
    operator_id = spark.read.format("state-metadata").load(str(location)).first().operatorId
    first = read_state(spark, str(location), 0, batch_id=0, operator_id=operator_id).collect()
    assert Counter((r.k, r.v0, r.batch_id) for r in first) == stored(inputs, 0, up_to_batch=0)


def test_read_state_errors_name_what_exists(spark, checkpoint):
    location, _ = checkpoint
    with pytest.raises(IllegalArgumentException,
                       match="has 3 inputs, 0 to 2; there is no input 3"):
        read_state(spark, location, 3)
    with pytest.raises(IllegalArgumentException, match="choose a batch from 0 to 1"):
        read_state(spark, location, 0, batch_id=5)
    with pytest.raises(IllegalArgumentException,
                       match=r"no multi-join with operator id 1: its stateful operators are "
                             r"\d+ \(multiJoin\)"):
        read_state(spark, location, 0, operator_id=1)
    with pytest.raises(TypeError, match="input takes a non-negative integer"):
        read_state(spark, location, -1)
