"""Monitor vocabulary: the names of the metrics the agent and the CPU exporter publish and the monitor reads.

Counters are named here without the `_total` suffix that the Prometheus exposition (and PromQL) adds: use `total()`.
"""

from __future__ import annotations

PREFIX = "daedalus_spark_"

# Per executor (label `executor_id`).
EXECUTOR_RECORDS = PREFIX + "executor_records_processed"  # counter: source records read by its tasks
EXECUTOR_BUSY_SECONDS = PREFIX + "executor_busy_seconds"  # counter: task time (Spark totalDuration)
EXECUTOR_CORES = PREFIX + "executor_cores"
EXECUTOR_ACTIVE_TASKS = PREFIX + "executor_active_tasks"
EXECUTOR_CPU_SECONDS = PREFIX + "executor_cpu_seconds"  # counter: CPU of its cgroup (JVM and Python workers)
EXECUTOR_CPU_LIMIT_CORES = PREFIX + "executor_cpu_limit_cores"

# Per source partition (labels `topic`, `partition`) and for the job.
# Offsets only grow (per partition), so they are counters: rate() over them is the records/s produced or consumed.
SOURCE_LATEST_OFFSET = PREFIX + "source_latest_offset"  # counter: end offset of the partition
SOURCE_COMMITTED_OFFSET = PREFIX + "source_committed_offset"  # counter: end offset of the last completed batch
SOURCE_LAG_RECORDS = PREFIX + "source_lag_records"
LAG_RECORDS = PREFIX + "lag_records"
SOURCE_OFFSETS_FAILURES = PREFIX + "source_offsets_failures"  # counter: failed reads of a topic's live end offsets
EXECUTORS = PREFIX + "executors"  # live executors, the driver excluded: the scale-out
EXECUTORS_TARGET = PREFIX + "executors_target"  # absent until the agent applies a first target
UPTIME_SECONDS = PREFIX + "uptime_seconds"

# Per streaming query (label `query`): its progress events, summed.
QUERY_INPUT_RECORDS = PREFIX + "query_input_records"  # counter: numInputRows of every completed batch
QUERY_BATCHES = PREFIX + "query_batches"  # counter: completed micro-batches
QUERY_BATCH_SECONDS = PREFIX + "query_batch_seconds"  # counter: their durationMs.triggerExecution / 1000


def total(counter: str) -> str:
    """The name a counter has in the exposition and in PromQL."""
    return counter + "_total"
