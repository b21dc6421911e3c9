"""The tests' session and choice of tests: tests/support/spark_session.py."""

pytest_plugins = ["support.spark_session"]
