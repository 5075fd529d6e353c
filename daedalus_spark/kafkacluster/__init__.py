"""Kafka harness: a local single-node Kafka (KRaft) for the tests and the demo, the jars it and Spark's Kafka
source need, the broker's offsets read directly, kafka-exporter's offset and lag series, and the security settings
(TLS, SASL) every client of the broker is given."""
