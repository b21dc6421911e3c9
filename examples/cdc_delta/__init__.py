"""The CDC examples' parts: for the one over Delta's change data feed
(examples/cdc_delta_pipeline.py), the source tables and the producer of their commits, the query
and its batch twin, the rounds; for the one over Debezium's topics on Kafka
(examples/cdc_kafka_pipeline.py), the topics and their producer, the query and its batch twin;
and the comparison both check their target with."""
