"""Execute (workloads): the benchmark pipelines, the local partitioned log, and the trace-driven generator."""
