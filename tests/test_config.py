"""The configs: validated by Spark when set, with the key and what is allowed in the error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.errors import IllegalArgumentException, SparkRuntimeException

from spark_multijoin import MultiJoinConfig, multi_join
from spark_multijoin import _session_conf
from spark_multijoin._session_conf import ENABLED_KEY, MAX_TABLES_KEY, STATE_TTL_KEY
from spark_multijoin.testing import join_on_k
from support.generators import keyed_inputs
from support.modules import load_module
from support.runs import explain, session_conf

CONF_VIEW = load_module(Path(__file__).resolve().parent.parent / "scripts" / "conf_view.py")

BAD_VALUES = [
    (MAX_TABLES_KEY, "2", "at least 3"),
    (MAX_TABLES_KEY, "0", "at least 3"),
    (MAX_TABLES_KEY, "many", "int"),
    (STATE_TTL_KEY, "0s", "positive duration"),
    (STATE_TTL_KEY, "soon", "such as '1 day', '90 minutes' or '10 seconds'"),
    (STATE_TTL_KEY, "-1 day", "positive duration"),
    (ENABLED_KEY, "maybe", "boolean"),
    (f"spark.{MAX_TABLES_KEY}", "2", "at least 3"),
    (f"spark.{ENABLED_KEY}", "yes please", "boolean"),
]


def test_python_keys_are_the_extensions_keys(spark):
    entries = spark._jvm.org.apache.spark.sql.multijoin.MultiJoinConf.entries()
    keys = [entries.apply(index).key() for index in range(entries.size())]
    assert keys == [ENABLED_KEY, MAX_TABLES_KEY, STATE_TTL_KEY]


def test_the_installed_view_is_generated_from_the_jars_conf_object(spark):
    """The build generated the typed view from the conf object of the jar it ships."""
    description = json.loads(
        spark._jvm.org.apache.spark.sql.multijoin.MultiJoinConf.description())
    assert [entry["key"] for entry in description["entries"]] == [
        ENABLED_KEY, MAX_TABLES_KEY, STATE_TTL_KEY]
    assert Path(_session_conf.__file__).read_text() == CONF_VIEW.render(description)
    docs = {entry["key"]: entry["doc"] for entry in description["entries"]}
    assert " ".join(MultiJoinConfig.max_tables.__doc__.split()).startswith(
        docs[MAX_TABLES_KEY])


@pytest.mark.parametrize("key, value, allowed", BAD_VALUES)
def test_bad_value_names_key_and_what_is_allowed(spark, key, value, allowed):
    with pytest.raises((IllegalArgumentException, SparkRuntimeException)) as error:
        spark.conf.set(key, value)
    message = str(error.value)
    assert key in message and allowed in message, message
    assert spark.conf.get(key, None) in (None, "<undefined>", "false")


def test_python_values_set_exactly_as_documented(spark):
    with session_conf(spark, {ENABLED_KEY: None}):
        spark.conf.set(ENABLED_KEY, True)
        assert multi_join(spark).enabled is True
        spark.conf.set(ENABLED_KEY, False)
        assert multi_join(spark).enabled is False


def test_config_view_reads_and_sets(spark):
    config = multi_join(spark)
    with session_conf(spark, {ENABLED_KEY: None, MAX_TABLES_KEY: None}):
        assert config.enabled is False and config.max_tables is None
        config.enabled = True
        config.max_tables = 3
        assert spark.conf.get(ENABLED_KEY) == "true"
        assert spark.conf.get(MAX_TABLES_KEY) == "3"
        assert config.enabled is True and config.max_tables == 3
        config.max_tables = None
        assert config.max_tables is None
        with pytest.raises(TypeError, match=ENABLED_KEY):
            config.enabled = "yes"
        with pytest.raises(TypeError, match=MAX_TABLES_KEY):
            config.max_tables = 2.5
        with pytest.raises((IllegalArgumentException, SparkRuntimeException), match="at least 3"):
            config.max_tables = 2
    with session_conf(spark, {STATE_TTL_KEY: None}):
        assert config.state_ttl is None
        config.state_ttl = "2h"
        assert spark.conf.get(STATE_TTL_KEY) == "2h" and config.state_ttl == "2h"
        config.state_ttl = None
        assert config.state_ttl is None
        with pytest.raises(TypeError, match=STATE_TTL_KEY):
            config.state_ttl = 3600


@pytest.mark.parametrize("duration", ["1 day", "90 minutes", "10 seconds", "interval 2 hours",
                                      "1d", "30m", " 1 DAY "])
def test_state_ttl_takes_durations_as_with_watermark_and_spark_write_them(spark, duration):
    with session_conf(spark, {STATE_TTL_KEY: None}):
        multi_join(spark).state_ttl = duration
        assert spark.conf.get(STATE_TTL_KEY) == duration


def test_spark_prefixed_alias_enables_the_rewrite(spark, tmp_path):
    query = join_on_k(keyed_inputs(tmp_path / "inputs", 3).streams(spark))
    with session_conf(spark, {ENABLED_KEY: None, f"spark.{ENABLED_KEY}": "true"}):
        assert explain(query).count("StreamingMultiJoin input0") == 1
