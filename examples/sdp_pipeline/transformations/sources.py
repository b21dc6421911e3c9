"""The pipeline's sources: streams of the JSON files under the folder `multijoin.example.data`
names (run.py writes them and sets it in the spec), as temporary views the SQL files read with
STREAM(name)."""

from pyspark import pipelines as dp

DATA = spark.conf.get("multijoin.example.data")  # noqa: F821 (the session spark-pipelines gives)

SCHEMAS = {
    "orders": "order_id INT, customer STRING, amount DOUBLE, order_time TIMESTAMP",
    "payments": "order_id INT, method STRING, paid DOUBLE, pay_time TIMESTAMP",
    "shipments": "order_id INT, carrier STRING, ship_time TIMESTAMP",
    "reviews": "order_id INT, stars INT",
}


def _stream(name: str):
    return spark.readStream.schema(SCHEMAS[name]).json(f"{DATA}/{name}")  # noqa: F821


@dp.temporary_view
def orders():
    return _stream("orders")


@dp.temporary_view
def payments():
    return _stream("payments")


@dp.temporary_view
def shipments():
    return _stream("shipments")


@dp.temporary_view
def reviews():
    return _stream("reviews")
