"""Adding the extension to a SparkSession builder, as delta-spark's configure_spark_with_delta_pip
does for Delta."""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_multijoin._jars import jar_for, running_spark_version

EXTENSION_CLASS = "io.github.sparkmultijoin.MultiJoinExtension"
EXPLAIN_GENERATOR_CLASS = "io.github.sparkmultijoin.planning.FusionExplainGenerator"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

_JARS = "spark.jars"
_EXTENSIONS = "spark.sql.extensions"
EXPLAIN_PROVIDERS = "spark.sql.extendedExplainProviders"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
LOCAL_CHECKPOINT_FILE_MANAGER = (
    "io.github.sparkmultijoin.execution.LocalFileSystemCheckpointFileManager")
REAL_TIME_ALLOWLIST_CHECK = "spark.sql.streaming.realTimeMode.allowlistCheck"


def jar_path(spark_version: str | None = None) -> str:
    """The path of this package's jar for Spark `spark_version` (default: the Spark a session of
    this process will run, see `_jars`); an error naming the supported lines if it has none."""
    source = ""
    if spark_version is None:
        spark_version, source = running_spark_version()
    return str(jar_for(spark_version, source))


def _appended(existing: str | None, value: str) -> str:
    items = [item.strip() for item in (existing or "").split(",") if item.strip()]
    return ",".join(items if value in items else items + [value])


def configure_spark_with_multijoin(builder: SparkSession.Builder, *,
                                   real_time: bool = False) -> SparkSession.Builder:
    """Return `builder` set up to run spark-multijoin.

    Adds the bundled jar for the Spark line that will run (`jar_path()`) to `spark.jars`, the
    extension to `spark.sql.extensions`, and the generator of EXPLAIN's section on streaming
    joins (what fused, and why the rest did not) to `spark.sql.extendedExplainProviders`, each
    after what is already there, and sets the RocksDB
    state store provider unless one was chosen (the multi-join runs on RocksDB, and on Spark's
    in-memory store, Spark's default). Unless set, it also turns on RocksDB's changelog
    checkpointing: a commit then writes the batch's changes rather than a snapshot of the store,
    which Spark supports on new and existing checkpoints alike. Unless a checkpoint file manager
    is set, it sets one that writes checkpoints on the local file system without starting a
    process per file (Hadoop's local file system does without its native library, which pyspark
    does not ship) and leaves every other file system to Spark's default; it applies to every
    streaming query of the session.
    The extension starts disabled: turn it on with `spark.conf.set("multi-join.enabled", True)`
    or `multi_join(spark).enabled = True`.

    With `real_time=True` (Spark 4.3, queries with `trigger(realTime=...)`) it turns off Spark's
    check that a real-time query runs only the operators and sinks Spark lists, which has no
    place for the multi-join, and the extension runs Spark's own check in its place, with the
    multi-join allowed: a query with any other operator or sink Spark does not list still fails.
    """
    # The builder keeps its options in `_options`; reading them is how settings are appended to
    # rather than replaced (delta-spark's helper reads it the same way).
    options: dict[str, str] = getattr(builder, "_options", {})
    builder = builder.config(_JARS, _appended(options.get(_JARS), jar_path()))
    builder = builder.config(_EXTENSIONS, _appended(options.get(_EXTENSIONS), EXTENSION_CLASS))
    builder = builder.config(EXPLAIN_PROVIDERS,
                             _appended(options.get(EXPLAIN_PROVIDERS), EXPLAIN_GENERATOR_CLASS))
    if _PROVIDER not in options:
        builder = builder.config(_PROVIDER, ROCKSDB_PROVIDER)
    if CHANGELOG_CHECKPOINTING not in options:
        builder = builder.config(CHANGELOG_CHECKPOINTING, "true")
    if CHECKPOINT_FILE_MANAGER not in options:
        builder = builder.config(CHECKPOINT_FILE_MANAGER, LOCAL_CHECKPOINT_FILE_MANAGER)
    return _with_real_time(builder, options) if real_time else builder


def _with_real_time(builder: SparkSession.Builder,
                    options: dict[str, str]) -> SparkSession.Builder:
    """`builder` with Spark's real-time mode allowlist check off (the extension runs it in its
    place, the multi-join allowed); an error where the builder turns it on."""
    if options.get(REAL_TIME_ALLOWLIST_CHECK, "false").strip().lower() != "false":
        raise ValueError(
            f"real_time=True turns {REAL_TIME_ALLOWLIST_CHECK} off, and the builder sets it to "
            f"{options[REAL_TIME_ALLOWLIST_CHECK]!r}: remove that setting, or leave real_time "
            "off (the multi-join then does not run in real-time mode)")
    return builder.config(REAL_TIME_ALLOWLIST_CHECK, "false")
