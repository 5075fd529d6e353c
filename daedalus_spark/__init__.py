"""daedalus-spark: a self-adaptive autoscaler for Spark Structured Streaming jobs (Daedalus, ICPE 2024)."""
