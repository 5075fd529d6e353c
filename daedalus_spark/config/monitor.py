"""Configuration: the monitor section — where metrics come from, and the PromQL that reads them."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import field_validator, model_validator

from daedalus_spark import metricnames as names
from daedalus_spark.config.fields import (
    LABEL_NAME,
    Section,
    check_regular_file,
    http_url,
    nonblank,
    openable_path,
    read_small_file,
    setting,
)
from daedalus_spark.redact import bearer_token


class MonitorConfig(Section):
    prometheus_url: str = setting(
        "",
        "url",
        "Prometheus to read from with range queries; empty = scrape `scrape_urls` directly (one machine, no server).",
    )
    scrape_urls: list[str] = setting(
        ["http://127.0.0.1:9095/metrics"],
        "urls",
        "Without a Prometheus URL: the /metrics endpoints scraped every `step_s` "
        "(the agent's; add the CPU exporter's).",
    )
    step_s: float = setting(
        1, "s", "Sample step of the observation (range-query step, or scrape period).", ge=0.1, le=300
    )
    rate_window_s: float = setting(
        5,
        "s",
        "Window of rate() in the queries ($rate_window); throughput and utilization share it, so they cover "
        "the same time.",
        ge=1,
        le=3600,
    )
    scrape_interval_s: float = setting(
        30,
        "s",
        "How often your Prometheus scrapes the job's metrics (the scrape config's or PodMonitor's interval; 30 s is "
        "prometheus-operator's default). With prometheus_url set, rate_window_s must hold 4 of them (Prometheus's "
        "rule of thumb), or rate() has gaps and ticks are skipped. Without it, the monitor scrapes every step_s.",
        gt=0,
        le=3600,
    )
    timeout_s: float = setting(
        5, "s", "A query or scrape slower than this fails the tick (skipped, not actuated).", gt=0, le=300
    )
    job_labels: dict[str, str] = setting(
        {},
        "labels",
        "Label values that select this job's series ($selector in the queries, e.g. namespace and application_id): "
        "without them, several jobs on one Prometheus add up.",
    )
    job_labels_env: dict[str, str] = setting(
        {},
        "labels",
        "Like job_labels, the value read from the named environment variable at start (e.g. application_id: "
        "DAEDALUS_SPARK_APP_ID); an unset variable stops the start.",
    )
    tls_verify: bool = setting(True, "-", "Check Prometheus's TLS certificate (https URLs).")
    ca_file: str = setting("", "path", "CA bundle (PEM) that signed Prometheus's certificate (empty: the system's).")
    bearer_token_env: str = setting(
        "", "-", "Environment variable holding a bearer token for Prometheus (empty: none)."
    )
    bearer_token_file: str = setting(
        "", "path", "File holding a bearer token for Prometheus, read at start (empty: none; wins over the variable)."
    )
    metrics: Literal["agent", "native"] = setting(
        "agent",
        "-",
        "Whose metrics the default queries read: agent (the in-driver agent's), or native (Spark's own "
        "PrometheusServlet and executor metrics, with kafka-exporter for the topic; no agent in the job: "
        "docs/attach.md). A query_* changed from its default is kept with either.",
    )
    source_labels: dict[str, str] = setting(
        {},
        "labels",
        "metrics native: label values that select the job's topic in kafka-exporter's series ($source_selector, "
        "e.g. topic: orders).",
    )
    consumer_group: str = setting(
        "",
        "-",
        "metrics native: the consumer group whose lag kafka-exporter reports for the job ($group_selector; empty: "
        "every group on the topic).",
    )
    executor_label: str = setting("executor_id", "-", "Label that names the executor in per-executor series.")
    query_workload: str = setting(
        f"sum(rate({names.total(names.SOURCE_LATEST_OFFSET)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s arriving at the source: growth of the topic's end offsets, whoever produces.",
    )
    query_throughput: str = setting(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_RECORDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s each executor reads from the source.",
    )
    query_cpu: str = setting(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_CPU_SECONDS)}{{$selector}}[$rate_window])) "
        f"/ on (executor_id) {names.EXECUTOR_CPU_LIMIT_CORES}{{$selector}}",
        "PromQL",
        "CPU utilization ratio per executor (executor JVM and its Python workers) — utilization_signal cpu.",
    )
    query_busy: str = setting(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_BUSY_SECONDS)}{{$selector}}[$rate_window])) "
        f"/ on (executor_id) {names.EXECUTOR_CORES}{{$selector}}",
        "PromQL",
        "Busy fraction per executor (task time per core) — utilization_signal busy_time.",
    )
    query_partition_workload: str = setting(
        f"sum by (topic, partition) (rate({names.total(names.SOURCE_LATEST_OFFSET)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s arriving at each source partition (labels topic and partition): their skew decides the "
        "capacity of scale-outs never observed. Optional: without it, partitions are taken as equal.",
    )
    query_batches: str = setting(
        f"sum(rate({names.total(names.QUERY_BATCHES)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Micro-batches the query completes per second. Optional, with query_batch_records and query_batch_seconds: "
        "the per-batch economics (fixed cost per batch, records per second of batch) that tell catch-up capacity "
        "from steady-state capacity.",
    )
    query_batch_records: str = setting(
        f"sum(rate({names.total(names.QUERY_INPUT_RECORDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s the query's batches read (numInputRows). Optional, see query_batches.",
    )
    query_batch_seconds: str = setting(
        f"sum(rate({names.total(names.QUERY_BATCH_SECONDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Seconds of batch execution per second (the batches' summed durations). Optional, see query_batches.",
    )
    query_lag: str = setting(f"sum({names.LAG_RECORDS}{{$selector}})", "PromQL", "Consumer lag in records.")
    query_executors: str = setting(f"sum({names.EXECUTORS}{{$selector}})", "PromQL", "Live executors (the scale-out).")
    query_uptime: str = setting(
        f"max({names.UPTIME_SECONDS}{{$selector}})",
        "PromQL",
        "Seconds since the job (re)started processing.",
    )
    query_application: str = setting(
        f"max by (application_id) ({names.UPTIME_SECONDS}{{$selector}})",
        "PromQL",
        "Series labelled application_id, one per Spark application: the one with a sample at the window's end names "
        "the application observed, and a change of it is a driver restart (label_replace another label to "
        "application_id). Optional: without it, a restart is told by the uptime falling.",
    )
    query_agent_target: str = setting(
        f"max({names.EXECUTORS_TARGET}{{$selector}})",
        "PromQL",
        "Executors the agent is asking Spark for (its last applied target; no sample before its first). "
        "Optional: without it, executors lost by themselves hold the tick once instead of until replaced.",
    )

    @field_validator("prometheus_url")
    @classmethod
    def _prometheus(cls, value: str) -> str:
        return value and http_url(value)

    @field_validator("scrape_urls")
    @classmethod
    def _scrapes(cls, value: list[str]) -> list[str]:
        for url in value:
            http_url(url)
        return value

    _paths = field_validator("ca_file", "bearer_token_file")(openable_path)

    @field_validator("job_labels", "job_labels_env", "source_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for label in value:
            if not LABEL_NAME.fullmatch(label):
                raise ValueError(f"{label!r} is not a Prometheus label name")
        return value

    @model_validator(mode="after")
    def _windows(self) -> MonitorConfig:
        if self.prometheus_url and self.rate_window_s < 4 * self.scrape_interval_s:
            raise ValueError(
                f"monitor.rate_window_s ({self.rate_window_s:g} s) must be at least 4 × monitor.scrape_interval_s "
                f"({self.scrape_interval_s:g} s) = {4 * self.scrape_interval_s:g} s: rate() needs several scrapes "
                "in its window"
            )
        if self.metrics == "native" and not self.prometheus_url:
            raise ValueError(
                "monitor.metrics native needs monitor.prometheus_url: Spark's metrics are read through Prometheus"
            )
        if both := sorted(set(self.job_labels) & set(self.job_labels_env)):
            raise ValueError(f"monitor.job_labels and monitor.job_labels_env both set {', '.join(both)}")
        if self.prometheus_url:
            self._files_run_reads()
        return self

    def _files_run_reads(self) -> None:
        """The CA bundle and the token file, checked as `run` reads them at start, so the two agree."""
        if self.tls_verify and self.ca_file:
            check_regular_file(self.ca_file, f"monitor.ca_file ({self.ca_file})")
        if self.bearer_token_file:
            where = f"monitor.bearer_token_file ({self.bearer_token_file})"
            if not bearer_token(read_small_file(self.bearer_token_file, where), where):
                raise ValueError(f"{where}: the bearer token is empty")

    _names = field_validator(
        "executor_label",
        "query_workload",
        "query_throughput",
        "query_cpu",
        "query_busy",
        "query_partition_workload",
        "query_batches",
        "query_batch_records",
        "query_batch_seconds",
        "query_lag",
        "query_executors",
        "query_uptime",
        "query_application",
        "query_agent_target",
    )(nonblank)


# Read only by the Prometheus monitor: changed from their defaults without prometheus_url, they would be silently
# ignored (the defaults may stay: `validate-config` prints every key, and its output must validate).
# scrape_interval_s is not among them: a config may carry it for the Prometheus a launcher adds (the demo's).
_PROMETHEUS_ONLY = (
    "job_labels",
    "job_labels_env",
    "tls_verify",
    "ca_file",
    "bearer_token_env",
    "bearer_token_file",
    "executor_label",
    *(name for name in MonitorConfig.model_fields if name.startswith("query_")),
)
PLACEHOLDERS = ("$rate_window", "$selector")  # what monitor.assemble.substitute fills in


def monitor_problem(m: MonitorConfig) -> str:
    """What `run` would trip over in the monitor section ('' if nothing): PromQL that does not parse, or settings
    only the Prometheus monitor reads given to the scrape monitor. Checked on the whole config, not the section:
    tests build sections with queries a server should refuse."""
    if m.prometheus_url:
        for name in _PROMETHEUS_ONLY:
            if name.startswith("query_") and (problem := _promql_problem(f"monitor.{name}", getattr(m, name))):
                return problem
    elif ignored := [n for n in _PROMETHEUS_ONLY if getattr(m, n) != MonitorConfig.model_fields[n].default]:
        return (
            f"monitor.{', monitor.'.join(ignored)}: ignored without monitor.prometheus_url (the scrape monitor reads "
            "the default metric names itself): remove, or set prometheus_url"
        )
    return ""


def _promql_problem(where: str, template: str) -> str:
    """The query with its placeholders filled in as the monitor fills them must parse as PromQL (promql-parser,
    the Rust parser GreptimeDB uses, as a library: validation needs no promtool binary)."""
    import promql_parser

    unknown = sorted(set(re.findall(r"\$[A-Za-z_][A-Za-z0-9_]*", template)) - set(PLACEHOLDERS))
    if unknown:
        return f"{where}: unknown placeholder {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})"
    promql = template.replace("$rate_window", "1m").replace("$selector", 'job="x"')
    try:
        promql_parser.parse(promql)
    except ValueError as exc:
        return f"{where}: not valid PromQL ({exc}): {template!r:.200}"
    return ""
