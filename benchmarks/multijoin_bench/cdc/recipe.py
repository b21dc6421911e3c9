"""The foreachBatch recipe, the way Spark users keep a join of changing tables today without a
changelog join: a Delta table of each input's current rows, and per micro-batch

1. the batch's changes of each input, the last per row id, MERGEd into that input's table (a
   change applies over an older LSN only, as the changelog join's version rule does);
2. the join keys the batch touched (before and after each change);
3. the spec's SELECT over the current tables, each cut to those keys by a broadcast semi join:
   the new rows of every touched key;
4. one MERGE into the target by the output's identity: the new rows updated or inserted, and the
   target's rows of a touched key that are no longer among them deleted.

Where every input's row id is its join key (cdc_left10), a user keeps one wide current table
instead, a row per key (WideRecipe): two MERGEs a batch, not one per input and the target's.

Every MERGE sets Delta's idempotent-write settings with the batch id, so that a batch run again
after a restart is skipped, table by table. One query reads every input, as one tagged union, so
that a batch's changes of all inputs are joined together.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from multijoin_bench.cdc.tables import delta_rows, envelopes, null_safe_match, row_type
from spark_multijoin.changelog._delta_sink import TXN_APP_ID, TXN_VERSION


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Recipe:
    """The recipe over the spec's tables, its current tables under `root`, into `target`."""

    def __init__(self, spark: SparkSession, spec: dict, root: Path, target: Path):
        self.spec, self.root, self.target = spec, root, str(target)
        self.tables = spec["tables"]
        self.keys = spec["parameters"]["join_keys"]
        self.identity = spec["parameters"]["identity"]
        self.output_key = spec["parameters"]["output_key"]
        self.app_id = f"cdc-recipe-{uuid.uuid4().hex}"
        self._create(spark)

    def current(self, i: int) -> str:
        return str(self.root / self.tables[i]["name"])

    def _create(self, spark: SparkSession) -> None:
        """The current rows, empty, and the target."""
        self._create_current(spark)
        for table in self.tables:
            spark.createDataFrame([], row_type(table)).createOrReplaceTempView(table["name"])
        spark.sql(self.spec["select"]).write.format("delta").save(self.target)

    def _create_current(self, spark: SparkSession) -> None:
        for i, table in enumerate(self.tables):
            empty = spark.createDataFrame([], row_type(table))
            empty.withColumn("_lsn", F.lit(None).cast("bigint")).write.format("delta") \
                .save(self.current(i))

    def stream(self, spark: SparkSession, files_per_trigger: int) -> DataFrame:
        """Every input's changes as one stream: the input's index, op, LSN, row id, join key
        before and after, and its row in its own column (null in the others')."""
        frames = []
        for i, table in enumerate(self.tables):
            raw = envelopes(spark, table, files_per_trigger)
            row_id, key = table["primary_key"][0], self.keys[table["name"]]
            rows = [(F.col("after") if j == i else F.lit(None).cast(row_type(other)))
                    .alias(f"r{j}") for j, other in enumerate(self.tables)]
            frames.append(raw.select(
                F.lit(i).alias("_table"), "op", F.col("source.lsn").alias("_lsn"),
                F.coalesce(F.col(f"after.`{row_id}`"), F.col(f"before.`{row_id}`")).alias("_id"),
                F.col(f"before.`{key}`").alias("_key_before"),
                F.col(f"after.`{key}`").alias("_key_after"), *rows))
        return reduce_union(frames)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        session = batch.sparkSession
        batch.persist()
        try:
            self._merge_changes(session, batch, batch_id)
            keys = (batch.select(F.explode(F.array("_key_before", "_key_after")).alias("key"))
                    .where("key IS NOT NULL").distinct())
            self._merge_target(session, keys.persist(), batch_id)
            keys.unpersist()
        finally:
            batch.unpersist()

    def _merge_changes(self, session: SparkSession, batch: DataFrame, batch_id: int) -> None:
        for (i,) in batch.select("_table").distinct().collect():
            self._merge_current(session, batch, i, batch_id)

    def _merge_current(self, session: SparkSession, batch: DataFrame, i: int,
                       batch_id: int) -> None:
        table = self.tables[i]
        columns = [name for name, _ in table["columns"]]
        last = (batch.where(F.col("_table") == i).groupBy("_id")
                .agg(F.max(F.struct("_lsn", "op", f"r{i}")).alias("c"))
                .select("_id", "c._lsn", "c.op", *[F.col(f"c.r{i}.`{c}`").alias(c)
                                                   for c in columns]))
        row_id = _quoted(table["primary_key"][0])
        newer = "s._lsn > t._lsn"
        sets = ", ".join(f"t.{_quoted(c)} = s.{_quoted(c)}" for c in columns + ["_lsn"])
        names = ", ".join(map(_quoted, columns + ["_lsn"]))
        values = ", ".join(f"s.{_quoted(c)}" for c in columns + ["_lsn"])
        self._merge(session, last, batch_id, (
            f"MERGE INTO delta.{_quoted(self.current(i))} AS t USING {{source}} AS s "
            f"ON t.{row_id} = s._id "
            f"WHEN MATCHED AND {newer} AND s.op = 'd' THEN DELETE "
            f"WHEN MATCHED AND {newer} THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT ({names}) VALUES ({values})"))

    def _merge_target(self, session: SparkSession, keys: DataFrame, batch_id: int) -> None:
        self._touched_views(session, keys)
        new = session.sql(self.spec["select"])
        target = delta_rows(session, self.target)
        old = target.join(F.broadcast(keys), target[self.output_key] == keys["key"], "left_semi")
        gone = old.join(new, null_safe_match(old, new, self.identity), "left_anti")
        source = (new.withColumn("_delete", F.lit(False))
                  .unionByName(gone.withColumn("_delete", F.lit(True))))
        match = " AND ".join(f"t.{_quoted(c)} <=> s.{_quoted(c)}" for c in self.identity)
        columns = new.columns
        sets = ", ".join(f"t.{_quoted(c)} = s.{_quoted(c)}" for c in columns)
        names = ", ".join(map(_quoted, columns))
        values = ", ".join(f"s.{_quoted(c)}" for c in columns)
        self._merge(session, source, batch_id, (
            f"MERGE INTO delta.{_quoted(self.target)} AS t USING {{source}} AS s ON {match} "
            f"WHEN MATCHED AND s._delete THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND NOT s._delete THEN INSERT ({names}) VALUES ({values})"))

    def _touched_views(self, session: SparkSession, keys: DataFrame) -> None:
        """Each input's current rows of the touched `keys`, as a view by the input's name."""
        for i, table in enumerate(self.tables):
            current = delta_rows(session, self.current(i)).drop("_lsn")
            key = self.keys[table["name"]]
            current.join(F.broadcast(keys), current[key] == keys["key"], "left_semi") \
                .createOrReplaceTempView(table["name"])

    def _merge(self, session: SparkSession, source: DataFrame, batch_id: int,
               statement: str) -> None:
        view = f"cdc_recipe_source_{uuid.uuid4().hex}"
        source.createOrReplaceTempView(view)
        try:
            session.conf.set(TXN_APP_ID, self.app_id)
            session.conf.set(TXN_VERSION, str(batch_id))
            session.sql(statement.format(source=view))
        finally:
            session.conf.unset(TXN_APP_ID)
            session.conf.unset(TXN_VERSION)
            session.catalog.dropTempView(view)



class WideRecipe(Recipe):
    """The recipe as a user writes it where every input's row id is the join key (one row per
    key and input, as on cdc_left10): one wide current table, a row per key with every input's
    columns, its LSN and whether its row is there; per micro-batch one MERGE of the batch's last
    change per input and key into it, then the one MERGE into the target."""

    def wide(self) -> str:
        return str(self.root / "wide")

    def _column(self, i: int, name: str) -> str:
        return _quoted(f"t{i}__{name}")

    def _create_current(self, spark: SparkSession) -> None:
        key = self.tables[0]["primary_key"][0]
        fields = [f"{_quoted(key)} {dict(self.tables[0]['columns'])[key]}"]
        for i, table in enumerate(self.tables):
            fields += [f"_p{i} boolean", f"_lsn{i} bigint"]
            fields += [f"{self._column(i, name)} {kind}" for name, kind in table["columns"]]
        spark.createDataFrame([], ", ".join(fields)).write.format("delta").save(self.wide())

    def _merge_changes(self, session: SparkSession, batch: DataFrame, batch_id: int) -> None:
        """Each input's last change of each key, in one row per key, MERGEd over older LSNs."""
        last = batch.groupBy("_id").agg(*[
            F.max(F.when(F.col("_table") == i, F.struct("_lsn", "op", f"r{i}"))).alias(f"c{i}")
            for i in range(len(self.tables))])
        key = _quoted(self.tables[0]["primary_key"][0])
        updates, names, values = [], [key], ["s._id"]
        for i, table in enumerate(self.tables):
            newer = f"s.c{i} IS NOT NULL AND (t._lsn{i} IS NULL OR s.c{i}._lsn > t._lsn{i})"
            pairs = [(f"_p{i}", f"s.c{i}.op <> 'd'"), (f"_lsn{i}", f"s.c{i}._lsn")]
            pairs += [(self._column(i, name), f"s.c{i}.r{i}.{_quoted(name)}")
                      for name, _ in table["columns"]]
            updates += [f"t.{column} = CASE WHEN {newer} THEN {value} ELSE t.{column} END"
                        for column, value in pairs]
            names += [column for column, _ in pairs]
            values += [f"coalesce({value}, false)" if column == f"_p{i}" else value
                       for column, value in pairs]
        self._merge(session, last, batch_id, (
            f"MERGE INTO delta.{_quoted(self.wide())} AS t USING {{source}} AS s "
            f"ON t.{key} = s._id WHEN MATCHED THEN UPDATE SET {', '.join(updates)} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(names)}) VALUES ({', '.join(values)})"))

    def _touched_views(self, session: SparkSession, keys: DataFrame) -> None:
        key = self.tables[0]["primary_key"][0]
        wide = delta_rows(session, self.wide())
        touched = wide.join(F.broadcast(keys), wide[key] == keys["key"], "left_semi")
        for i, table in enumerate(self.tables):
            touched.where(f"_p{i}").select(*[F.col(self._column(i, name)).alias(name)
                                             for name, _ in table["columns"]]) \
                .createOrReplaceTempView(table["name"])


def recipe_for(spark: SparkSession, spec: dict, root: Path, target: Path) -> Recipe:
    """The wide recipe where it fits, else a current table per input."""
    return (WideRecipe if wide_fits(spec) else Recipe)(spark, spec, root, target)


def wide_fits(spec: dict) -> bool:
    """Whether every input's row id is its join key: one row per key and input."""
    keys = spec["parameters"]["join_keys"]
    return all(table["primary_key"] == [keys[table["name"]]] for table in spec["tables"])


def reduce_union(frames: list[DataFrame]) -> DataFrame:
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionAll(frame)
    return union
