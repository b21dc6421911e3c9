"""The Kafka example's parts (examples/kafka_delta_pipeline.py runs them): a broker, the events
and their producer, the query and its batch twin, the streaming driver, and the checks."""
