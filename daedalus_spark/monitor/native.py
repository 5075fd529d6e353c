"""Monitor (native): the query set over Spark's own metrics and kafka-exporter's, for jobs that run no agent.

Spark serves, with `spark.ui.prometheus.enabled=true`, per-executor task time and cores at the driver's
`/metrics/executors/prometheus` (labels `application_id`, `executor_id`; active executors only), and with the
PrometheusServlet sink and `spark.sql.streaming.metricsEnabled=true`, each query's progress as gauges at
`/metrics/prometheus` (`metrics_<namespace>_driver_spark_streaming_<query>_inputRate_total_Value`: the records/s the
last batch read). Spark exports no records per executor: an executor's throughput is the job's, split by its share
of the task time. The topic's end offsets (workload) and the consumer group's lag come from kafka-exporter's series,
selected by `$source_selector` (monitor.source_labels) and `$group_selector` (monitor.consumer_group). Spark commits
no offsets to Kafka by itself: the lag series exist once `daedalus_spark.agent.commit_offsets` (or something like it)
commits the batches' end offsets for the group (docs/attach.md).
"""

from __future__ import annotations

import json

_EXECUTORS = 'executor_id!="driver",$selector'
_TASK_TIME = f"rate(metrics_executor_totalDuration_seconds_total{{{_EXECUTORS}}}[$rate_window])"
_INPUT_RATE = '{__name__=~"metrics_.+_driver_spark_streaming_.+_inputRate_total_Value",$selector}'

NATIVE_QUERIES = {
    "workload": "sum(rate(kafka_topic_partition_current_offset{$source_selector}[$rate_window]))",
    "partitions": (
        "sum by (topic, partition) (rate(kafka_topic_partition_current_offset{$source_selector}[$rate_window]))"
    ),
    "lag": "sum(kafka_consumergroup_lag{$group_selector,$source_selector})",
    # the job's records/s (its queries' input rates over the window) x the executor's share of the task time
    "throughput": (
        f"sum by (executor_id) ({_TASK_TIME}) / on () group_left () clamp_min(sum({_TASK_TIME}), 1e-9)"
        f" * on () group_left () sum(avg_over_time({_INPUT_RATE}[$rate_window]))"
    ),
    # busy fraction (utilization_signal busy_time); the cpu signal keeps its own query (cAdvisor, the CPU exporter)
    "utilization": (
        f"sum by (executor_id) ({_TASK_TIME}) / on (executor_id) "
        f"sum by (executor_id) (metrics_executor_totalCores{{{_EXECUTORS}}})"
    ),
    "executors": f"count(metrics_executor_totalCores{{{_EXECUTORS}}})",
    # Seconds since the driver's series appeared (its first sample within the last hour): the newest application
    # when a restarted driver brings a new application id. Capped at 1 h, far above any warm-up.
    "uptime": (
        "min(time() - min_over_time(timestamp(sum by (application_id) "
        '(metrics_executor_totalCores{executor_id="driver",$selector}))[1h:5s]))'
    ),
    # The driver's series carry the application id as a label.
    "application": 'max by (application_id) (metrics_executor_totalCores{executor_id="driver",$selector})',
}  # What Spark's driver needs to serve the metrics above (spark-submit --conf, or the SparkApplication's sparkConf).
# `spark.metrics.namespace` keeps the application id out of the driver's metric names.
SPARK_CONF = {
    "spark.ui.prometheus.enabled": "true",
    "spark.sql.streaming.metricsEnabled": "true",
    "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
    "spark.metrics.namespace": "spark",
}
SCRAPE_PATHS = ("/metrics/executors/prometheus", "/metrics/prometheus")


def group_selector(consumer_group: str) -> str:
    """The matcher of the job's consumer group in kafka-exporter's lag series (empty: every group of the topic)."""
    return f"consumergroup={json.dumps(consumer_group)}" if consumer_group else 'consumergroup!=""'


# Spark exports no cumulative batch counters: the per-batch economics (assemble.BATCH_QUERIES, optional) have no
# native query and are left out. Nor does it export the executor count it is asking for outside dynamic allocation
# (whose ExecutorAllocationManager metrics are not a target of ours): `agent_target` stays unknown.
