"""configure_spark_with_multijoin adds to a builder's settings and replaces none of them, and
picks the jar of the Spark line that will run."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

import spark_multijoin
from spark_multijoin import (
    EXTENSION_CLASS,
    ROCKSDB_PROVIDER,
    configure_spark_with_multijoin,
    jar_path,
)
from spark_multijoin._builder import (
    CHANGELOG_CHECKPOINTING,
    CHECKPOINT_FILE_MANAGER,
    EXPLAIN_GENERATOR_CLASS,
    EXPLAIN_PROVIDERS,
    LOCAL_CHECKPOINT_FILE_MANAGER,
    REAL_TIME_ALLOWLIST_CHECK,
)
from spark_multijoin._jars import bundled_jars, running_spark_version
from support.modules import load_module

SPARK_JARS = load_module(Path(__file__).resolve().parent.parent / "scripts" / "spark_jars.py")


def options(builder: SparkSession.Builder) -> dict[str, str]:
    return dict(builder._options)


def test_adds_jar_extension_provider_changelog_checkpointing_and_file_manager_to_a_new_builder():
    builder = SparkSession.Builder()
    assert configure_spark_with_multijoin(builder) is builder
    settings = options(builder)
    assert settings["spark.jars"] == jar_path()
    assert settings["spark.sql.extensions"] == EXTENSION_CLASS
    assert settings[EXPLAIN_PROVIDERS] == EXPLAIN_GENERATOR_CLASS
    assert settings["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert settings[CHANGELOG_CHECKPOINTING] == "true"
    assert settings[CHECKPOINT_FILE_MANAGER] == LOCAL_CHECKPOINT_FILE_MANAGER


def test_appends_to_existing_settings_and_keeps_the_chosen_provider_and_checkpointing():
    builder = (SparkSession.Builder()
               .config(CHANGELOG_CHECKPOINTING, "false")
               .config(CHECKPOINT_FILE_MANAGER, "com.example.FileManager")
               .config("spark.jars", "/opt/other.jar")
               .config("spark.sql.extensions", "com.example.OtherExtension")
               .config(EXPLAIN_PROVIDERS, "com.example.Explain, com.example.More")
               .config("spark.sql.streaming.stateStore.providerClass", "com.example.Provider"))
    settings = options(configure_spark_with_multijoin(builder))
    assert settings["spark.jars"] == f"/opt/other.jar,{jar_path()}"
    assert settings["spark.sql.extensions"] == f"com.example.OtherExtension,{EXTENSION_CLASS}"
    assert settings[EXPLAIN_PROVIDERS] == \
        f"com.example.Explain,com.example.More,{EXPLAIN_GENERATOR_CLASS}"
    assert settings["spark.sql.streaming.stateStore.providerClass"] == "com.example.Provider"
    assert settings[CHANGELOG_CHECKPOINTING] == "false"
    assert settings[CHECKPOINT_FILE_MANAGER] == "com.example.FileManager"


def test_configuring_twice_adds_nothing_twice():
    builder = configure_spark_with_multijoin(configure_spark_with_multijoin(SparkSession.Builder()))
    assert options(builder)["spark.sql.extensions"] == EXTENSION_CLASS
    assert options(builder)[EXPLAIN_PROVIDERS] == EXPLAIN_GENERATOR_CLASS
    assert options(builder)["spark.jars"] == jar_path()


def test_the_package_carries_a_jar_per_supported_line_and_is_typed():
    package = Path(spark_multijoin.__file__).parent
    assert set(bundled_jars()) == set(SPARK_JARS.spark_lines())
    assert Path(jar_path()).is_file() and Path(jar_path()).parent == package / "jars"
    assert (package / "py.typed").is_file()
    assert set(spark_multijoin.__all__) >= {"configure_spark_with_multijoin", "multi_join",
                                            "read_state", "fusion_report"}


def test_session_has_the_extension(spark):
    assert EXTENSION_CLASS in spark.conf.get("spark.sql.extensions")
    assert EXPLAIN_GENERATOR_CLASS in spark.conf.get(EXPLAIN_PROVIDERS)
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    # So every test query, the restart tests' included, runs with changelog checkpointing and
    # writes its checkpoint through the local file system's manager.
    assert spark.conf.get(CHANGELOG_CHECKPOINTING) == "true"
    assert spark.conf.get(CHECKPOINT_FILE_MANAGER) == LOCAL_CHECKPOINT_FILE_MANAGER


def test_the_jar_is_the_one_of_the_versions_line():
    for line in SPARK_JARS.spark_lines():
        assert Path(jar_path(f"{line}.7")).name == f"spark-multijoin_{line}_2.13.jar"


def test_a_line_without_a_jar_is_refused_naming_the_supported_ones():
    with pytest.raises(RuntimeError) as error:
        jar_path("4.0.1")
    supported = ", ".join(SPARK_JARS.spark_lines())
    assert f"runs on Spark {supported}; this is Spark 4.0.1" in str(error.value)


def test_without_a_running_spark_the_spark_home_to_be_launched_names_the_version(
        tmp_path, monkeypatch):
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-4.2.1.jar").touch()
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert running_spark_version() == ("4.2.1", str(tmp_path / "jars"))
    assert Path(jar_path()).name == "spark-multijoin_4.2_2.13.jar"


def test_the_session_runs_the_jar_of_its_spark_line(spark):
    jars = [jar for jar in spark.conf.get("spark.jars").split(",") if "spark-multijoin" in jar]
    line = ".".join(spark.version.split(".")[:2])
    assert [Path(jar).name for jar in jars] == [f"spark-multijoin_{line}_2.13.jar"]


def test_real_time_turns_spark_allowlist_check_off_only_when_asked():
    assert REAL_TIME_ALLOWLIST_CHECK not in options(
        configure_spark_with_multijoin(SparkSession.Builder()))
    settings = options(configure_spark_with_multijoin(SparkSession.Builder(), real_time=True))
    assert settings[REAL_TIME_ALLOWLIST_CHECK] == "false"


def test_real_time_refuses_a_builder_that_keeps_spark_allowlist_check_on():
    builder = SparkSession.Builder().config(REAL_TIME_ALLOWLIST_CHECK, "true")
    with pytest.raises(ValueError, match="remove that setting, or leave real_time off"):
        configure_spark_with_multijoin(builder, real_time=True)
    assert options(builder)[REAL_TIME_ALLOWLIST_CHECK] == "true"
