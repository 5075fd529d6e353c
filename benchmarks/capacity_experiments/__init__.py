"""The experiments of benchmarks/spark_capacity.py, one module each, and the measurements they share."""
