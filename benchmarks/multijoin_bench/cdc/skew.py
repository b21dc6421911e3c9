"""cdc_skew: orders LEFT JOIN their items on the order id, LEFT JOIN customers on the order's
customer id, the customers of orders drawn from a Zipf distribution, so that a change of a hot
customer changes thousands of joined rows. On Spark two changelog joins, one stacked on the other;
on Flink what its planner makes of the same SELECT.

An order's customer is a function of its id (a hash of it, mapped through the distribution's
cumulative weights), so the generator keeps no rows, as workloads.py's do. Changes after the
first load pick a table by pinned shares, customers a small one: each customer change is joined
to every order of that customer.
"""

from __future__ import annotations

import bisect
import itertools
import random

from multijoin_bench.cdc.model import (SEED, STATUSES, CdcWorkload, Live, Row, Table,
                                       keys_for)

ZIPF_EXPONENT = 1.2
ORDERS_PER_CUSTOMER = 5  # customers are a fifth of the first load's orders
# Of the changes after the first load: orders, items, customers.
TABLE_SHARES = (0.30, 0.65, 0.05)
TIERS = ("bronze", "silver", "gold")
_MASK = (1 << 64) - 1


def zipf_cumulative(customers: int, exponent: float = ZIPF_EXPONENT) -> list[float]:
    """The distribution's cumulative weights over customers 0.. (0 the hottest), the last 1."""
    weights = list(itertools.accumulate(1 / (rank + 1) ** exponent for rank in range(customers)))
    return [weight / weights[-1] for weight in weights]


def _uniform(order_id: int) -> float:
    """A number in [0, 1) that is a fixed function of the order id and the seed (splitmix64)."""
    z = (order_id * 0x9E3779B97F4A7C15 + SEED) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / float(1 << 53)


def customer_of(order_id: int, cumulative: list[float]) -> int:
    return min(bisect.bisect_right(cumulative, _uniform(order_id)), len(cumulative) - 1)


def tables(cumulative: list[float]) -> list[Table]:
    """Orders (each with its customer), their items, and customers."""
    def order(row_id: int, _key: int, version: int) -> Row:
        return {"order_id": row_id, "customer_id": customer_of(row_id, cumulative),
                "amount": round(10 + (row_id * 31 + version * 7) % 990 + 0.25, 2),
                "order_status": STATUSES[version % len(STATUSES)]}

    def item(row_id: int, key: int, version: int) -> Row:
        return {"item_id": row_id, "order_id": key, "sku": f"sku-{row_id % 5003}",
                "qty": 1 + version % 9}

    def customer(row_id: int, _key: int, version: int) -> Row:
        return {"customer_id": row_id, "name": f"customer-{row_id}-{version}",
                "tier": TIERS[version % len(TIERS)]}

    return [
        Table("orders", [("order_id", "BIGINT"), ("customer_id", "BIGINT"), ("amount", "DOUBLE"),
                         ("order_status", "STRING")], "order_id", "order_id", order),
        Table("items", [("item_id", "BIGINT"), ("order_id", "BIGINT"), ("sku", "STRING"),
                        ("qty", "INT")], "item_id", "order_id", item),
        Table("customers", [("customer_id", "BIGINT"), ("name", "STRING"), ("tier", "STRING")],
              "customer_id", "customer_id", customer)]


def skew(changes: int, file_changes: int) -> CdcWorkload:
    orders = keys_for(changes)
    customers = max(1, orders // ORDERS_PER_CUSTOMER)
    cumulative = zipf_cumulative(customers)
    chosen = tables(cumulative)

    def first_load(rng: random.Random) -> list[list[tuple[int, int]]]:
        per_order = [rng.randint(1, 5) for _ in range(orders)]
        items = [o for o, count in enumerate(per_order) for _ in range(count)]
        return [[(o, o) for o in range(orders)], list(enumerate(items)),
                [(c, c) for c in range(customers)]]

    def new_key(i: int, rng: random.Random, live: list[Live]) -> int:
        # A new order or customer is a new id; an item joins any order made so far.
        return live[i].next_id if i != 1 else rng.randrange(max(1, live[0].next_id))

    select = ("SELECT o.order_id, o.customer_id, o.amount, o.order_status, i.item_id, i.sku, "
              "i.qty, c.customer_id AS c_customer_id, c.name, c.tier FROM orders o "
              "LEFT JOIN items i ON o.order_id = i.order_id "
              "LEFT JOIN customers c ON o.customer_id = c.customer_id")
    hottest = sum(1 for o in range(orders) if customer_of(o, cumulative) == 0)
    return CdcWorkload(
        "cdc_skew", chosen, select, changes, file_changes, first_load, new_key,
        parameters={"orders": orders, "customers": customers, "zipf_exponent": ZIPF_EXPONENT,
                    "items": "1 to 5 per order",
                    "table_shares": dict(zip((t.name for t in chosen), TABLE_SHARES)),
                    "hottest_customer_first_load_orders": hottest},
        identity=["order_id", "item_id", "c_customer_id"], output_key="order_id",
        table_shares=TABLE_SHARES, marker_columns={"customer_id": -1})
