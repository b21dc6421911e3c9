"""configure_spark_with_multijoin adds to a builder's settings and replaces none of them."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

import spark_multijoin
from spark_multijoin import (
    EXTENSION_CLASS,
    ROCKSDB_PROVIDER,
    configure_spark_with_multijoin,
    jar_path,
)
from spark_multijoin._configure import (
    CHANGELOG_CHECKPOINTING,
    CHECKPOINT_FILE_MANAGER,
    LOCAL_CHECKPOINT_FILE_MANAGER,
)


def options(builder: SparkSession.Builder) -> dict[str, str]:
    return dict(builder._options)


def test_adds_jar_extension_provider_changelog_checkpointing_and_file_manager_to_a_new_builder():
    builder = SparkSession.Builder()
    assert configure_spark_with_multijoin(builder) is builder
    settings = options(builder)
    assert settings["spark.jars"] == jar_path()
    assert settings["spark.sql.extensions"] == EXTENSION_CLASS
    assert settings["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert settings[CHANGELOG_CHECKPOINTING] == "true"
    assert settings[CHECKPOINT_FILE_MANAGER] == LOCAL_CHECKPOINT_FILE_MANAGER


def test_appends_to_existing_settings_and_keeps_the_chosen_provider_and_checkpointing():
    builder = (SparkSession.Builder()
               .config(CHANGELOG_CHECKPOINTING, "false")
               .config(CHECKPOINT_FILE_MANAGER, "com.example.FileManager")
               .config("spark.jars", "/opt/other.jar")
               .config("spark.sql.extensions", "com.example.OtherExtension")
               .config("spark.sql.streaming.stateStore.providerClass", "com.example.Provider"))
    settings = options(configure_spark_with_multijoin(builder))
    assert settings["spark.jars"] == f"/opt/other.jar,{jar_path()}"
    assert settings["spark.sql.extensions"] == f"com.example.OtherExtension,{EXTENSION_CLASS}"
    assert settings["spark.sql.streaming.stateStore.providerClass"] == "com.example.Provider"
    assert settings[CHANGELOG_CHECKPOINTING] == "false"
    assert settings[CHECKPOINT_FILE_MANAGER] == "com.example.FileManager"


def test_configuring_twice_adds_nothing_twice():
    builder = configure_spark_with_multijoin(configure_spark_with_multijoin(SparkSession.Builder()))
    assert options(builder)["spark.sql.extensions"] == EXTENSION_CLASS
    assert options(builder)["spark.jars"] == jar_path()


def test_the_package_carries_its_jar_and_is_typed():
    package = Path(spark_multijoin.__file__).parent
    assert Path(jar_path()).is_file() and Path(jar_path()).parent == package / "jars"
    assert (package / "py.typed").is_file()
    assert set(spark_multijoin.__all__) >= {"configure_spark_with_multijoin", "multi_join",
                                            "read_state"}


def test_session_has_the_extension(spark):
    assert EXTENSION_CLASS in spark.conf.get("spark.sql.extensions")
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    # So every test query, the restart tests' included, runs with changelog checkpointing and
    # writes its checkpoint through the local file system's manager.
    assert spark.conf.get(CHANGELOG_CHECKPOINTING) == "true"
    assert spark.conf.get(CHECKPOINT_FILE_MANAGER) == LOCAL_CHECKPOINT_FILE_MANAGER
