"""Workload: the benchmark jobs being scaled (not the controller) — pipelines, local partitioned log, generator."""
