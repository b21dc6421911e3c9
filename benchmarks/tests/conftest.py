"""The benchmark's tests run in the project's test session, with its choice of tests and its
support modules (tests/support/spark_session.py; pytest's pythonpath has tests/)."""

pytest_plugins = ["support.spark_session"]
