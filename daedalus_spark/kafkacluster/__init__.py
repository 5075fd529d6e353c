"""Kafka harness: a local single-node Kafka (KRaft) for the tests and the demo, the jars it and Spark's Kafka
source need, the broker's offsets read directly, and kafka-exporter's offset and lag series."""
