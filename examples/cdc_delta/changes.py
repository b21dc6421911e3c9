"""The source tables, Delta tables with the change data feed on, and the producer of their
changes: rounds of random Delta commits.

A round commits, in this order:

1. orders: one MERGE of new orders, updates (of the amount, of the status, and moves to another
   customer, another product or both) and deletes;
2. customers: one MERGE of new customers, renames, tier changes and deletes;
3. products: one MERGE of new products, new titles and prices, and deletes;
4. a DELETE of a few orders (every third round, of the customer with many orders), then
5. an append of the same rows again, with other values (a row deleted and inserted again, in
   one round and so usually in one micro-batch of the query);
6. customers: an UPDATE of one customer's tier.

The first round only fills the tables, customers and products first. New rows take a deleted
row's id some of the time (a row that comes back rounds later), and an order names a customer
or a product that is deleted or does not exist yet now and then (the LEFT JOINs pad it until
the row arrives). One customer has about a fifth of the orders, so that its changes touch many joined
rows. The producer keeps each table's rows in Python too, to choose what to change; the checks
read the tables themselves.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Table:
    name: str
    key: str
    schema: str

    @property
    def columns(self) -> list[str]:
        return [column.split()[0] for column in self.schema.split(", ")]


ORDERS = Table("orders", "order_id",
               "order_id bigint, customer_id bigint, product_id bigint, amount bigint, "
               "status string")
CUSTOMERS = Table("customers", "customer_id", "customer_id bigint, name string, tier string")
PRODUCTS = Table("products", "product_id", "product_id bigint, title string, price bigint")
TABLES = (ORDERS, CUSTOMERS, PRODUCTS)

STATUSES = ("open", "paid", "shipped", "cancelled")
TIERS = ("basic", "silver", "gold", "blocked")
HOT_CUSTOMER = 1


@dataclass(frozen=True)
class Counts:
    """Rows a MERGE inserts, updates and deletes."""
    new: int
    updated: int
    deleted: int


# The first round fills the tables; the later ones change them.
FIRST = {"orders": Counts(30, 0, 0), "customers": Counts(8, 0, 0), "products": Counts(6, 0, 0)}
LATER = {"orders": Counts(4, 5, 2), "customers": Counts(1, 2, 1), "products": Counts(1, 1, 1)}
REINSERTED = 2  # orders deleted and inserted again per round


def create_tables(spark: SparkSession, folder: Path) -> None:
    for table in TABLES:
        spark.sql(f"CREATE TABLE delta.`{folder / table.name}` ({table.schema}) USING delta "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true)")


class Producer:
    """Commits rounds of random changes to the tables in `folder` (see the module's doc)."""

    def __init__(self, spark: SparkSession, folder: Path, seed: int = 3) -> None:
        self.spark = spark
        self.folder = folder
        self.rng = random.Random(seed)
        self.rows: dict[str, dict[int, tuple]] = {table.name: {} for table in TABLES}
        self.deleted: dict[str, list[int]] = {table.name: [] for table in TABLES}
        self.next_id = {table.name: 1 for table in TABLES}
        self.rounds = 0
        self.commits = 0

    def round(self) -> None:
        counts = LATER if self.rounds else FIRST
        # The first round fills customers and products first, so that orders can name them.
        for table in TABLES if self.rounds else TABLES[::-1]:
            self._merge(table, *self._changes(table, counts[table.name]))
        if self.rounds:
            self._delete_and_insert_again(*self._reinserted())
            self._update_a_tier()
        self.rounds += 1

    def _changes(self, table: Table, counts: Counts) -> tuple[list[tuple], list[int]]:
        """The rows a MERGE puts (new and updated ones) and the ids it deletes: any but the hot
        customer, which only `_reinserted` deletes."""
        live = sorted(self.rows[table.name])
        touched = self.rng.sample(live, min(len(live), counts.updated + counts.deleted))
        updated = touched[:counts.updated]
        deleted = [key for key in touched[counts.updated:]
                   if (table, key) != (CUSTOMERS, HOT_CUSTOMER)]
        puts = [self._changed(table, self.rows[table.name][key]) for key in updated]
        puts += [self._new(table, self._new_id(table)) for _ in range(counts.new)]
        return puts, deleted

    def _merge(self, table: Table, puts: list[tuple], deletes: list[int]) -> None:
        width = len(table.columns)
        rows = [(*row, "put") for row in puts] + \
            [(key, *[None] * (width - 1), "delete") for key in deletes]
        view = f"cdc_example_{table.name}_changes"
        self.spark.createDataFrame(rows, f"{table.schema}, op string") \
            .createOrReplaceTempView(view)
        key, others = table.key, table.columns[1:]
        self._commit(
            f"MERGE INTO delta.`{self.folder / table.name}` t USING {view} s "
            f"ON t.{key} = s.{key} WHEN MATCHED AND s.op = 'delete' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{c} = s.{c}' for c in others)} "
            f"WHEN NOT MATCHED AND s.op = 'put' THEN INSERT ({', '.join(table.columns)}) "
            f"VALUES ({', '.join(f's.{c}' for c in table.columns)})")
        self.spark.catalog.dropTempView(view)
        self._put(table, puts)
        self._delete(table, deletes)

    def _reinserted(self) -> tuple[Table, list[int]]:
        """Every third round the hot customer, whose orders all lose it and get it back in one
        micro-batch; else a few orders."""
        if self.rounds % 3 == 2 and HOT_CUSTOMER in self.rows["customers"]:
            return CUSTOMERS, [HOT_CUSTOMER]
        return ORDERS, self.rng.sample(sorted(self.rows["orders"]), REINSERTED)

    def _delete_and_insert_again(self, table: Table, keys: list[int]) -> None:
        self._commit(f"DELETE FROM delta.`{self.folder / table.name}` "
                     f"WHERE {table.key} IN ({', '.join(map(str, keys))})")
        self._delete(table, keys)
        again = [self._new(table, key) for key in keys]
        self.spark.createDataFrame(again, table.schema).write.format("delta").mode("append") \
            .save(str(self.folder / table.name))
        self.commits += 1
        self._put(table, again)

    def _update_a_tier(self) -> None:
        if not self.rows["customers"]:
            return
        key = self.rng.choice(sorted(self.rows["customers"]))
        tier = self.rng.choice(TIERS)
        self._commit(f"UPDATE delta.`{self.folder / 'customers'}` SET tier = '{tier}' "
                     f"WHERE customer_id = {key}")
        self._put(CUSTOMERS, [self.rows["customers"][key][:2] + (tier,)])

    def _commit(self, statement: str) -> None:
        self.spark.sql(statement)
        self.commits += 1

    def _put(self, table: Table, rows: list[tuple]) -> None:
        self.rows[table.name].update((row[0], row) for row in rows)
        deleted = self.deleted[table.name]
        deleted[:] = [key for key in deleted if key not in self.rows[table.name]]

    def _delete(self, table: Table, keys: list[int]) -> None:
        for key in keys:
            del self.rows[table.name][key]
        self.deleted[table.name] += keys

    def _new_id(self, table: Table) -> int:
        """A deleted row's id a third of the time, else the next one."""
        deleted = self.deleted[table.name]
        if deleted and self.rng.random() < 1 / 3:
            return deleted.pop(self.rng.randrange(len(deleted)))
        self.next_id[table.name] += 1
        return self.next_id[table.name] - 1

    def _customer(self) -> int:
        """The hot customer a fifth of the time; else mostly a live one, and now and then any
        id up to one past the last (a deleted customer's, or one that does not exist yet)."""
        if self.rng.random() < 0.2:
            return HOT_CUSTOMER
        return self._referenced(CUSTOMERS)

    def _product(self) -> int:
        return self._referenced(PRODUCTS)

    def _referenced(self, table: Table) -> int:
        live = sorted(self.rows[table.name])
        if live and self.rng.random() < 0.8:
            return self.rng.choice(live)
        return self.rng.randint(1, self.next_id[table.name])

    def _new(self, table: Table, key: int) -> tuple:
        rng, label = self.rng, f"{table.name[:-1]} {key}.{self.rounds}"
        if table is ORDERS:
            return (key, self._customer(), self._product(), rng.randint(1, 100),
                    rng.choice(STATUSES))
        if table is CUSTOMERS:
            return (key, label, rng.choice(TIERS))
        return (key, label, rng.randint(1, 50))

    def _changed(self, table: Table, row: tuple) -> tuple:
        """`row` with one or two of its columns changed."""
        rng, label = self.rng, f"{table.name[:-1]} {row[0]}.{self.rounds}"
        if table is CUSTOMERS:
            return (row[0], label, row[2]) if rng.random() < 0.5 else \
                (row[0], row[1], rng.choice(TIERS))
        if table is PRODUCTS:
            return (row[0], label, row[2]) if rng.random() < 0.5 else \
                (row[0], row[1], rng.randint(1, 50))
        key, customer, product, amount, status = row
        change = rng.choice(("amount", "status", "customer", "product", "both"))
        if change == "amount":
            amount = rng.randint(1, 100)
        elif change == "status":
            status = rng.choice(STATUSES)
        if change in ("customer", "both"):
            customer = self._customer()
        if change in ("product", "both"):
            product = self._product()
        return (key, customer, product, amount, status)
