"""The configs: validated by Spark when set, with the key and what is allowed in the error."""

from __future__ import annotations

import pytest
from pyspark.errors import IllegalArgumentException, SparkRuntimeException

from spark_multijoin import multi_join
from streaming_joins import Inputs, explain, session_conf

BAD_VALUES = [
    ("multi-join.max-tables", "1", "at least 2"),
    ("multi-join.max-tables", "0", "at least 2"),
    ("multi-join.max-tables", "many", "int"),
    ("multi-join.enabled", "maybe", "boolean"),
    ("spark.multi-join.max-tables", "1", "at least 2"),
    ("spark.multi-join.enabled", "yes please", "boolean"),
]


@pytest.mark.parametrize("key, value, allowed", BAD_VALUES)
def test_bad_value_names_key_and_what_is_allowed(spark, key, value, allowed):
    with pytest.raises((IllegalArgumentException, SparkRuntimeException)) as error:
        spark.conf.set(key, value)
    message = str(error.value)
    assert key in message and allowed in message, message
    assert spark.conf.get(key, None) in (None, "<undefined>", "false")


def test_python_values_set_exactly_as_documented(spark):
    with session_conf(spark, enabled=None):
        spark.conf.set("multi-join.enabled", True)
        assert multi_join(spark).enabled is True
        spark.conf.set("multi-join.enabled", False)
        assert multi_join(spark).enabled is False


def test_config_view_reads_and_sets(spark):
    config = multi_join(spark)
    with session_conf(spark, enabled=None, max_tables=None):
        assert config.enabled is False and config.max_tables is None
        config.enabled = True
        config.max_tables = 3
        assert spark.conf.get("multi-join.enabled") == "true"
        assert spark.conf.get("multi-join.max-tables") == "3"
        assert config.enabled is True and config.max_tables == 3
        config.max_tables = None
        assert config.max_tables is None
        with pytest.raises(TypeError, match="multi-join.enabled"):
            config.enabled = "yes"
        with pytest.raises(TypeError, match="multi-join.max-tables"):
            config.max_tables = 2.5
        with pytest.raises((IllegalArgumentException, SparkRuntimeException), match="at least 2"):
            config.max_tables = 1


def test_spark_prefixed_alias_enables_the_rewrite(spark, tmp_path):
    inputs = Inputs(tmp_path / "inputs", [f"k int, v{i} int" for i in range(3)])
    inputs.batches = [[[{"k": 1, f"v{i}": 1}]] for i in range(3)]
    inputs.write()
    frames = inputs.streams(spark)
    query = frames[0].join(frames[1], "k").join(frames[2], "k")
    with session_conf(spark, enabled=None):
        spark.conf.set("spark.multi-join.enabled", "true")
        try:
            assert explain(query).count("StreamingMultiJoin input0") == 1
        finally:
            spark.conf.unset("spark.multi-join.enabled")
