"""Configuration: the one YAML file that tunes the controller, validated at the boundary (pydantic)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from daedalus_spark import metricnames as names
from daedalus_spark.redact import redact


def _field(default: Any, unit: str, description: str, **bounds: Any) -> Any:
    return Field(default, description=description, json_schema_extra={"unit": unit}, **bounds)


class _Section(BaseModel):
    # strict: `max_scaleout: true` or `"12"` is a typo to report, not a value to coerce (an int is still a float).
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


def _http_url(value: str) -> str:
    """An http(s) URL with a host: a typo here would only show as failed ticks once the loop runs."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0..65535
    except ValueError as exc:
        raise ValueError(f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if "@" in parts.netloc:
        # A password here would be in every log line and error that quotes the URL: use the token settings.
        raise ValueError("a URL with user info (user:password@) is not accepted: use a bearer token setting")
    if parts.query or parts.fragment:
        part = "a query string (?…)" if parts.query else "a fragment (#…)"
        raise ValueError(f"a URL with {part} is not accepted: the path is appended to, and the rest would be lost")
    return value


_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _openable_path(value: str) -> str:
    """A file path the OS can open: no NUL byte (every open would fail) and no other control character."""
    if any(ord(ch) < 32 for ch in value):
        raise ValueError("a path must not hold a NUL byte or another control character")
    return value


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a namespace (RFC 1123 label)
_DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_KEY_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_SET_REQUIREMENT = re.compile(r"\s*(\S+)\s+(in|notin)\s+\(([^()]*)\)\s*")
_EQUALITY_REQUIREMENT = re.compile(r"\s*(!?)([^=!\s]+)\s*(?:(==|=|!=)\s*(\S*)\s*)?")


def _label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_KEY_NAME.fullmatch(name)) and (not prefix or bool(_DNS_SUBDOMAIN.fullmatch(prefix)))


def _label_selector(value: str) -> str:
    """A Kubernetes label selector as the API server parses it: key, !key, key=value, key==value, key!=value,
    key in (a,b), key notin (a,b), separated by commas; keys and values by the label rules."""
    for requirement in re.split(r",(?![^()]*\))", value):
        if m := _SET_REQUIREMENT.fullmatch(requirement):
            key, values = m.group(1), [v.strip() for v in m.group(3).split(",")]
        elif (m := _EQUALITY_REQUIREMENT.fullmatch(requirement)) and not (m.group(1) and m.group(3)):
            key, values = m.group(2), [] if m.group(4) is None else [m.group(4)]
        else:
            raise ValueError(f"{requirement.strip()!r} is not a label selector requirement")
        if not _label_key(key):
            raise ValueError(f"{key!r} is not a label key (letters, digits, '-', '_', '.'; at most 63)")
        if bad := [v for v in values if not _LABEL_VALUE.fullmatch(v)]:
            raise ValueError(f"{bad[0]!r} is not a label value (letters, digits, '-', '_', '.'; at most 63)")
    return value


def _dns(pattern: re.Pattern[str], what: str) -> Any:
    def check(value: str) -> str:
        if value and not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid Kubernetes {what} (lower-case letters, digits and '-')")
        return value

    return check


class ControllerConfig(_Section):
    loop_interval_s: float = _field(60, "s", "How often the MAPE-K loop runs.", ge=5, le=3600)
    min_scaleout: int = _field(1, "executors", "Fewest executors the controller may set.", ge=1, le=10000)
    max_scaleout: int = _field(
        12, "executors", "Most executors the controller may set (cap it at the Kafka partition count).", ge=1, le=10000
    )
    target_recovery_s: float = _field(
        600, "s", "Longest acceptable time from a rescale's stop until the backlog is worked off.", gt=0, le=86400
    )
    checkpoint_interval_s: float = _field(
        10,
        "s",
        "Streaming checkpoint (micro-batch commit) interval; the worst-case replay after a restart.",
        ge=0,
        le=3600,
    )
    recent_rescale_window_s: float = _field(
        600,
        "s",
        "After a rescale this recent, keep the scale-out while it still carries the load (Alg. 1).",
        ge=0,
        le=86400,
    )
    cooldown_s: float = _field(180, "s", "No new rescale this soon after the previous one.", ge=0, le=86400)
    scale_in_lag_s: float = _field(
        60,
        "s",
        "A scale-in waits while the consumer lag exceeds this many seconds of the smaller scale-out's capacity (still "
        "catching up). 1 = the paper's rule (capacity below the lag), which a micro-batch job never passes: it always "
        "holds a batch or more of lag (docs/planning.md).",
        ge=0,
        le=86400,
    )
    planner: Literal["paper", "cost_aware", "horizon", "batch_ratio"] = _field(
        "horizon",
        "-",
        "paper: Algorithm 1 as published. cost_aware: Algorithm 1 on the forecast's upper bound, and a scale-in only "
        "if the forecast says it outlasts the cool-down and the executor-seconds it saves exceed its downtime and "
        "catch-up. horizon: the cheapest schedule over the forecast that keeps latency and every recovery within "
        "the target (the offline optimum's DP), of which the first step is applied (docs/planning.md). "
        "batch_ratio: not ours but Spark's DStreams batch-duration rule, a baseline to compare against, one scaling "
        "round per tick (plan/batchratio.py).",
    )
    horizon_upper_weight_ratio: float = _field(
        0.5,
        "ratio",
        "horizon: the load the plan provisions for, between the forecast's point (0) and its interval's upper bound "
        "(1).",
        ge=0,
        le=1,
    )
    horizon_target_share_ratio: float = _field(
        0.5,
        "ratio",
        "horizon: the plan keeps latency and every recovery within this share of target_recovery_s; the rest is "
        "left for what the forecast and the learned capacities and downtimes get wrong.",
        gt=0,
        le=1,
    )
    scale_in_lookback_s: float = _field(
        600,
        "s",
        "cost_aware: no scale-in to a capacity the observed workload rose back above within this window (a "
        "forecast that missed a 10-min cycle made paper scale in and out every 6 min; docs/planning.md). 0 = off.",
        ge=0,
        le=86400,
    )
    max_rescales_per_hour: float = _field(
        3,
        "rescales",
        "cost_aware and horizon: rescale budget, a token bucket refilled at this rate and holding at most this many: "
        "every applied rescale takes a token, and a scale-in waits for a whole one (scale-outs never wait: safety "
        "first; they may leave the bucket in debt). The bucket fills from empty at the oldest tick remembered, so a "
        "fresh controller earns its budget. horizon plans with the tokens plus the refill over its horizon. "
        "3 = one per 20 minutes on average. 0 = off.",
        ge=0,
        le=3600,
    )
    warmup_s: float = _field(
        60, "s", "Samples from this soon after a (re)start are not learned from (JIT, state reload).", ge=0, le=3600
    )
    utilization_signal: Literal["cpu", "busy_time"] = _field(
        "cpu", "-", "Executor utilization: CPU ratio (the paper's) or Spark busy time per core-second."
    )
    knowledge_path: str = _field(
        "daedalus-knowledge.sqlite", "path", "SQLite file holding everything learned; survives restarts."
    )

    _path = field_validator("knowledge_path")(_nonblank)
    _path_chars = field_validator("knowledge_path")(_openable_path)


class CapacityConfig(_Section):
    expected_max_utilization_ratio: float = _field(
        1.0,
        "ratio",
        "Utilization an executor reaches when saturated; capacity is read off the regression there.",
        gt=0.1,
        le=1.0,
    )
    partitions: int = _field(
        0,
        "partitions",
        "Partitions of the source topic (0 = unknown), used until the monitor reports each partition's rate. "
        "An executor with ceil(partitions / n) of them limits scale-out n, so capacities of unseen scale-outs "
        "follow that, not n alone.",
        ge=0,
        le=100000,
    )
    partition_assignment: Literal["kafka", "any_core"] = _field(
        "kafka",
        "-",
        "How Spark places the source's tasks, which decides the busiest executor of an unseen scale-out: kafka "
        "(Spark's Kafka source pins each partition to the executor at floorMod(hash, n)) or any_core (a source "
        "without preferred locations, like the local log: tasks go to any free core).",
    )
    unobserved_margin_ratio: float = _field(
        0.1,
        "ratio",
        "Capacities extrapolated to scale-outs never observed are discounted by this much: the partitions' shares "
        "are averages and the new executors may differ (at 0.05 the simulator's flash crowds caught the job at a "
        "scale-out 8 % above the load: 2 recovery-target misses; docs/planning.md).",
        ge=0,
        le=0.5,
    )
    min_points: int = _field(
        5,
        "samples",
        "Fewer samples than this and an executor's capacity is throughput / utilization instead.",
        ge=2,
        le=100000,
    )
    min_correlation_ratio: float = _field(
        0.6,
        "ratio",
        "An executor's own regression is used only when throughput and utilization correlate this well; "
        "otherwise the regression pooled over all executors (noise flattens a slope fitted on a narrow range).",
        ge=0,
        le=1,
    )
    min_utilization_stddev_ratio: float = _field(
        0.01,
        "ratio",
        "Below this spread of utilization the slope is not trusted (ratio estimate instead).",
        ge=0,
        le=0.5,
    )
    executor_warmup_s: float = _field(
        30,
        "s",
        "An executor that joins while the controller watches is learned from only once it has read records for "
        "this long: before that its JVM starts, it registers and state partitions load (CPU busy, no records; "
        "docs/spark.md). Until then it counts as its peers.",
        ge=0,
        le=3600,
    )
    outlier_stddevs: float = _field(
        3,
        "stddevs",
        "Once an executor's fit is trusted, a sample this many residual standard deviations below it (a stall: "
        "CPU busy, few records) is not learned. 0 = learn every sample.",
        ge=0,
        le=100,
    )
    max_change_ratio: float = _field(
        0.5,
        "ratio",
        "The current scale-out's capacity moves at most this far (relative) from what the previous tick said, "
        "unless the change holds for `change_confirm_ticks` ticks in a row or a backlog shows the job doing it; "
        "every held change is a note on the decision. 0 = no bound.",
        ge=0,
        le=100,
    )
    change_confirm_ticks: int = _field(
        2, "ticks", "Ticks in a row a change beyond max_change_ratio must hold to be believed.", ge=1, le=1000
    )
    backlog_floor_lag_s: float = _field(
        10,
        "s",
        "A window that ends with more lag than this many seconds of its throughput was working off a backlog: "
        "its throughput is what the job can do at that scale-out with large batches (the catch-up capacity), a "
        "floor for it and a check on the regression. 0 = off.",
        ge=0,
        le=86400,
    )
    trigger_interval_s: float = _field(
        0,
        "s",
        "The query's processing-time trigger. With it and the query's batch progress, steady-state capacity is "
        "what fits one trigger interval per batch (sizing), apart from catch-up capacity with large batches "
        "(recovery). 0 = unknown or as fast as possible: sizing from the utilization regression alone.",
        ge=0,
        le=3600,
    )


class ForecastConfig(_Section):
    horizon_s: float = _field(900, "s", "How far ahead the workload is forecast.", ge=60, le=86400)
    resolution_s: float = _field(
        10,
        "s",
        "The workload is averaged over steps this long before ARIMA sees it (1-s data is slow).",
        ge=1,
        le=600,
    )
    history_window_s: float = _field(
        3600, "s", "How much recent workload an (re)fit of auto-ARIMA uses.", ge=300, le=7 * 86400
    )
    min_history_s: float = _field(
        600, "s", "Until this much history exists, the linear forecast is used.", ge=60, le=86400
    )
    seasonal_period_s: float = _field(0, "s", "Seasonal period for auto-ARIMA (0 = non-seasonal).", ge=0, le=86400)
    wape_threshold_ratio: float = _field(
        0.15,
        "ratio",
        "A previous forecast with a WAPE above this was poor; the linear fallback is used.",
        gt=0,
        le=10,
    )
    poor_forecasts_before_refit: int = _field(
        15, "ticks", "This many poor forecasts in a row trigger a background refit.", ge=1, le=10000
    )
    linear_window_s: float = _field(
        300, "s", "The linear fallback projects the slope of this much recent workload.", ge=10, le=86400
    )
    refit_interval_s: float = _field(
        900,
        "s",
        "A fresh auto-ARIMA search on the latest history_window_s this often, in the background (0 = only after a "
        "poor streak): an order chosen on the first minutes goes stale.",
        ge=0,
        le=7 * 86400,
    )
    interval_level: float = _field(
        0.9,
        "ratio",
        "Share of actual workloads the forecast's upper bound should cover (one-sided level of the prediction "
        "interval the planner provisions for).",
        gt=0.5,
        lt=1,
    )
    select_by_horizon: bool = _field(
        False,
        "-",
        "Each auto-ARIMA search keeps the candidate with the lowest WAPE over horizon_s from recent origins in the "
        "window (what the planner pays for), not the lowest AIC.",
    )
    seasonality: bool = _field(
        True,
        "-",
        "Detect a period in the recent history (autocorrelation) and model it when seasonal_period_s is 0.",
    )
    background_refit: bool = _field(
        True, "-", "Refit in a background process (false: refit inside the tick; the simulator's choice)."
    )


class RecoveryConfig(_Section):
    initial_downtime_scale_out_s: float = _field(
        30, "s", "Downtime of a scale-out until one has been measured.", ge=0, le=3600
    )
    initial_downtime_scale_in_s: float = _field(
        15, "s", "Downtime of a scale-in until one has been measured.", ge=0, le=3600
    )
    anomaly_threshold_stddevs: float = _field(
        1.0, "stddevs", "(workload - throughput) further than this from its mean is anomalous.", gt=0, le=10
    )
    anomaly_halflife_s: float = _field(
        120,
        "s",
        "Half-life of the running mean/variance of (workload - throughput): old regimes fade out.",
        ge=1,
        le=86400,
    )
    anomaly_min_relative_gap_ratio: float = _field(
        0.05,
        "ratio",
        "A gap below this share of the workload is never anomalous (absorbs metric skew).",
        ge=0,
        le=1,
    )
    stable_samples: int = _field(5, "samples", "Consecutive normal samples that end a recovery.", ge=1, le=3600)
    max_recovery_s: float = _field(
        3600, "s", "Stop measuring a recovery that has not ended after this long.", ge=60, le=86400
    )
    downtime_learning_ratio: float = _field(
        0.5, "ratio", "Weight of a newly measured downtime against the previous estimate.", gt=0, le=1
    )


class MonitorConfig(_Section):
    prometheus_url: str = _field(
        "",
        "url",
        "Prometheus to read from with range queries; empty = scrape `scrape_urls` directly (one machine, no server).",
    )
    scrape_urls: list[str] = _field(
        ["http://127.0.0.1:9095/metrics"],
        "urls",
        "Without a Prometheus URL: the /metrics endpoints scraped every `step_s` "
        "(the agent's; add the CPU exporter's).",
    )
    step_s: float = _field(
        1, "s", "Sample step of the observation (range-query step, or scrape period).", ge=0.1, le=300
    )
    rate_window_s: float = _field(
        5,
        "s",
        "Window of rate() in the queries ($rate_window); throughput and utilization share it, so they cover "
        "the same time.",
        ge=1,
        le=3600,
    )
    scrape_interval_s: float = _field(
        30,
        "s",
        "How often your Prometheus scrapes the job's metrics (the scrape config's or PodMonitor's interval; 30 s is "
        "prometheus-operator's default). With prometheus_url set, rate_window_s must hold 4 of them (Prometheus's "
        "rule of thumb), or rate() has gaps and ticks are skipped. Without it, the monitor scrapes every step_s.",
        gt=0,
        le=3600,
    )
    timeout_s: float = _field(
        5, "s", "A query or scrape slower than this fails the tick (skipped, not actuated).", gt=0, le=300
    )
    job_labels: dict[str, str] = _field(
        {},
        "labels",
        "Label values that select this job's series ($selector in the queries, e.g. namespace and application_id): "
        "without them, several jobs on one Prometheus add up.",
    )
    job_labels_env: dict[str, str] = _field(
        {},
        "labels",
        "Like job_labels, the value read from the named environment variable at start (e.g. application_id: "
        "DAEDALUS_SPARK_APP_ID); an unset variable stops the start.",
    )
    tls_verify: bool = _field(True, "-", "Check Prometheus's TLS certificate (https URLs).")
    ca_file: str = _field("", "path", "CA bundle (PEM) that signed Prometheus's certificate (empty: the system's).")
    bearer_token_env: str = _field("", "-", "Environment variable holding a bearer token for Prometheus (empty: none).")
    bearer_token_file: str = _field(
        "", "path", "File holding a bearer token for Prometheus, read at start (empty: none; wins over the variable)."
    )
    metrics: Literal["agent", "native"] = _field(
        "agent",
        "-",
        "Whose metrics the default queries read: agent (the in-driver agent's), or native (Spark's own "
        "PrometheusServlet and executor metrics, with kafka-exporter for the topic; no agent in the job: "
        "docs/attach.md). A query_* changed from its default is kept with either.",
    )
    source_labels: dict[str, str] = _field(
        {},
        "labels",
        "metrics native: label values that select the job's topic in kafka-exporter's series ($source_selector, "
        "e.g. topic: orders).",
    )
    consumer_group: str = _field(
        "",
        "-",
        "metrics native: the consumer group whose lag kafka-exporter reports for the job ($group_selector; empty: "
        "every group on the topic).",
    )
    executor_label: str = _field("executor_id", "-", "Label that names the executor in per-executor series.")
    query_workload: str = _field(
        f"sum(rate({names.SOURCE_LATEST_OFFSET}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s arriving at the source: growth of the topic's end offsets, whoever produces.",
    )
    query_throughput: str = _field(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_RECORDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s each executor reads from the source.",
    )
    query_cpu: str = _field(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_CPU_SECONDS)}{{$selector}}[$rate_window])) "
        f"/ on (executor_id) {names.EXECUTOR_CPU_LIMIT_CORES}{{$selector}}",
        "PromQL",
        "CPU utilization ratio per executor (executor JVM and its Python workers) — utilization_signal cpu.",
    )
    query_busy: str = _field(
        f"sum by (executor_id) (rate({names.total(names.EXECUTOR_BUSY_SECONDS)}{{$selector}}[$rate_window])) "
        f"/ on (executor_id) {names.EXECUTOR_CORES}{{$selector}}",
        "PromQL",
        "Busy fraction per executor (task time per core) — utilization_signal busy_time.",
    )
    query_partition_workload: str = _field(
        f"sum by (topic, partition) (rate({names.SOURCE_LATEST_OFFSET}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s arriving at each source partition (labels topic and partition): their skew decides the "
        "capacity of scale-outs never observed. Optional: without it, partitions are taken as equal.",
    )
    query_batches: str = _field(
        f"sum(rate({names.total(names.QUERY_BATCHES)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Micro-batches the query completes per second. Optional, with query_batch_records and query_batch_seconds: "
        "the per-batch economics (fixed cost per batch, records per second of batch) that tell catch-up capacity "
        "from steady-state capacity.",
    )
    query_batch_records: str = _field(
        f"sum(rate({names.total(names.QUERY_INPUT_RECORDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Records/s the query's batches read (numInputRows). Optional, see query_batches.",
    )
    query_batch_seconds: str = _field(
        f"sum(rate({names.total(names.QUERY_BATCH_SECONDS)}{{$selector}}[$rate_window]))",
        "PromQL",
        "Seconds of batch execution per second (the batches' summed durations). Optional, see query_batches.",
    )
    query_lag: str = _field(f"sum({names.LAG_RECORDS}{{$selector}})", "PromQL", "Consumer lag in records.")
    query_executors: str = _field(f"sum({names.EXECUTORS}{{$selector}})", "PromQL", "Live executors (the scale-out).")
    query_uptime: str = _field(
        f"max({names.UPTIME_SECONDS}{{$selector}})",
        "PromQL",
        "Seconds since the job (re)started processing.",
    )

    @field_validator("prometheus_url")
    @classmethod
    def _prometheus(cls, value: str) -> str:
        return value and _http_url(value)

    @field_validator("scrape_urls")
    @classmethod
    def _scrapes(cls, value: list[str]) -> list[str]:
        for url in value:
            _http_url(url)
        return value

    _paths = field_validator("ca_file", "bearer_token_file")(_openable_path)

    @field_validator("job_labels", "job_labels_env", "source_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for label in value:
            if not _LABEL_NAME.fullmatch(label):
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
        return self

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
    )(_nonblank)


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


def _monitor_problem(m: MonitorConfig) -> str:
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


class ActuatorConfig(_Section):
    kind: Literal["agent", "dry_run", "kubernetes"] = _field(
        "agent",
        "-",
        "agent: PUT the executor target to the in-driver agent; dry_run: decide and log only; "
        "kubernetes: set the scale of the kubernetes: section's StatefulSet or Deployment.",
    )
    agent_url: str = _field("http://127.0.0.1:9095", "url", "The agent's base URL (sidecar: localhost).")
    token_env: str = _field(
        "DAEDALUS_AGENT_TOKEN",
        "-",
        "Environment variable holding the agent's bearer token (unset: no token).",
    )
    timeout_s: float = _field(10, "s", "Timeout of one HTTP request to the agent.", gt=0, le=300)
    retries: int = _field(3, "attempts", "Attempts per request before the actuation is reported failed.", ge=1, le=20)
    backoff_s: float = _field(1, "s", "Wait before the first retry; doubles with every further one.", ge=0, le=60)
    confirm_timeout_s: float = _field(
        90,
        "s",
        "After a target is accepted, the following ticks (never the one that set it) look for the live executor "
        "count to reach it this long: applied, else unconfirmed.",
        ge=0,
        le=3600,
    )
    confirm_poll_s: float = _field(
        1, "s", "Unused: targets are confirmed on the following ticks (kept so existing configs load).", gt=0, le=60
    )

    _url = field_validator("agent_url")(_http_url)


class RuntimeConfig(_Section):
    metrics_host: str = _field("127.0.0.1", "-", "Address of the controller's /metrics and /healthz.")
    metrics_port: int = _field(
        9097, "port", "Port of the controller's /metrics and /healthz (0 = off).", ge=0, le=65535
    )
    decision_log: str = _field(
        "daedalus-decisions.jsonl",
        "path",
        "One JSON line per tick: time, reason, scale-outs, evidence, actuation.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = _field("INFO", "-", "Logging level.")
    log_format: Literal["text", "json"] = _field(
        "text", "-", "Log lines on stderr: text, or json (one object per line: time in UTC, level, logger, message)."
    )

    _log = field_validator("decision_log")(_nonblank)
    _log_chars = field_validator("decision_log")(_openable_path)

    @field_validator("metrics_host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty (that listens on every interface: write 0.0.0.0 to mean it)")
        if any(ch.isspace() or ord(ch) < 32 for ch in value):
            raise ValueError("a host name or address, without spaces")
        return value


class AgentSettings(_Section):
    host: str = _field("127.0.0.1", "-", "The in-driver agent listens here (beyond localhost only when set).")
    port: int = _field(9095, "port", "The agent's HTTP port.", ge=0, le=65535)
    token_env: str = _field(
        "DAEDALUS_AGENT_TOKEN",
        "-",
        "Environment variable with the bearer token /executors requires (unset: none).",
    )
    min_executors: int = _field(1, "executors", "Targets below this are refused.", ge=0, le=10000)
    max_executors: int = _field(16, "executors", "Targets above this are refused.", ge=1, le=10000)
    poll_s: float = _field(1, "s", "How often the agent polls the driver's REST API.", gt=0, le=60)


class KubernetesConfig(_Section):
    namespace: str = _field(
        "",
        "-",
        "Namespace of the scaled object, the executor pods and the events (empty: the pod's own namespace "
        "in a cluster, else the kubeconfig context's, else default).",
    )
    kind: Literal["StatefulSet", "Deployment"] = _field(
        "StatefulSet",
        "-",
        "actuator.kind kubernetes: kind of the object whose scale subresource is set.",
    )
    name: str = _field("spark-worker", "-", "actuator.kind kubernetes: name of that StatefulSet or Deployment.")
    in_cluster: bool | Literal["auto"] = _field(
        "auto",
        "-",
        "true: the pod's service account; false: the kubeconfig; auto: in-cluster when running in a pod.",
    )
    kubeconfig: str = _field(
        "", "path", "Kubeconfig file when not in a cluster (empty: $KUBECONFIG or ~/.kube/config)."
    )
    request_timeout_s: float = _field(10, "s", "Timeout of one request to the API server.", gt=0, le=300)
    retries: int = _field(
        4,
        "attempts",
        "Attempts per request on conflicts (409), server errors (5xx) and timeouts.",
        ge=1,
        le=20,
    )
    backoff_s: float = _field(1, "s", "Wait before the first retry; doubles with every further one.", ge=0, le=60)
    executor_selector: str = _field(
        "spark-role=executor",
        "labels",
        "Label selector of the job's executor pods (driver-sidecar modes).",
    )
    app_id_env: str = _field(
        "DAEDALUS_SPARK_APP_ID",
        "-",
        "Environment variable holding the Spark application id; when set, the "
        "selector also requires spark-app-selector=<id> (other jobs' executors in the namespace are ignored).",
    )
    pending_timeout_s: float = _field(
        120,
        "s",
        "An executor pod Pending longer than this (quota, no nodes) makes the target unreachable.",
        ge=0,
        le=86400,
    )
    events: bool = _field(True, "-", "Write a Kubernetes Event for every rescale and failed rescale.")
    pod_name_env: str = _field(
        "DAEDALUS_POD_NAME",
        "-",
        "Driver-sidecar modes: variable with the driver pod's name, the events' object.",
    )
    pod_uid_env: str = _field(
        "DAEDALUS_POD_UID",
        "-",
        "Driver-sidecar modes: variable with the driver pod's uid (kubectl describe matches events by uid).",
    )

    _namespace = field_validator("namespace")(_dns(_DNS_LABEL, "namespace"))
    _name = field_validator("name")(_dns(_DNS_SUBDOMAIN, "object name"))
    _selector = field_validator("executor_selector")(_label_selector)
    _kubeconfig = field_validator("kubeconfig")(_openable_path)


HISTORY_LIMIT = 1000  # the newest decisions and recoveries the controller and `report` read back from a store
RESCALE_BUDGET_WINDOW_S = 3600.0  # the rescale budget's bucket refills in an hour: older rescales no longer count


class KnowledgeConfig(_Section):
    retention_days: float = _field(
        30,
        "days",
        "Decisions and measured recoveries older than this (by tick time) are deleted from the store; the newest "
        f"{HISTORY_LIMIT} of each always stay (the controller and `report` read them back). Must cover the longest "
        "history window the planner reads (docs/hardening.md). 0 = no age bound.",
        ge=0,
        le=3650,
    )
    retention_rows: int = _field(
        100_000,
        "rows",
        "At most this many decisions, and this many recoveries, are kept in the store (the oldest go first). At least "
        f"{HISTORY_LIMIT} and one per loop interval over the longest history window. 0 = no row bound.",
        ge=0,
        le=1_000_000_000,
    )
    decision_log_max_bytes: int = _field(
        64 * 1024 * 1024,
        "bytes",
        "The decision log is rotated (renamed to .1, .1 to .2, ...: Python's logging.handlers naming) before a line "
        "would take it past this size. 0 = never rotated (grows without bound).",
        ge=0,
        le=1 << 40,
    )
    decision_log_backups: int = _field(
        3, "files", "Rotated decision logs kept beside the current one; the oldest is deleted.", ge=1, le=1000
    )


def history_windows(config: Config) -> dict[str, float]:
    """The history windows the planner and the forecaster read, by YAML path (seconds): retention must cover them."""
    c = config.controller
    windows = {
        "forecast.history_window_s": config.forecast.history_window_s,
        "controller.scale_in_lookback_s": c.scale_in_lookback_s,
        "controller.recent_rescale_window_s": c.recent_rescale_window_s,
        "controller.cooldown_s": c.cooldown_s,
    }
    if c.max_rescales_per_hour > 0:
        windows["controller.max_rescales_per_hour (its hour)"] = RESCALE_BUDGET_WINDOW_S
    return windows


def _retention_problem(config: Config) -> str:
    """Why the knowledge retention would delete history the planner or `report` still reads ('' if it does not)."""
    k = config.knowledge
    name, window_s = max(history_windows(config).items(), key=lambda item: item[1])
    if k.retention_days and k.retention_days * 86400 < window_s:
        days = math.ceil(window_s / 86400 * 1e4) / 1e4
        return (
            f"knowledge.retention_days ({k.retention_days:g} days) is shorter than {name} ({window_s:g} s), history "
            f"the planner reads: keep at least {days:g} days, or 0 for no age bound"
        )
    rows = max(HISTORY_LIMIT, math.ceil(window_s / config.controller.loop_interval_s))
    if k.retention_rows and k.retention_rows < rows:
        return (
            f"knowledge.retention_rows ({k.retention_rows}) is fewer than the {rows} rows the controller and `report` "
            f"read back (the newest {HISTORY_LIMIT}, and one decision per controller.loop_interval_s "
            f"({config.controller.loop_interval_s:g} s) over {name} ({window_s:g} s)): keep at least {rows}, or 0 for "
            "no row bound"
        )
    return ""


class Config(_Section):
    controller: ControllerConfig = ControllerConfig()
    capacity: CapacityConfig = CapacityConfig()
    forecast: ForecastConfig = ForecastConfig()
    recovery: RecoveryConfig = RecoveryConfig()
    monitor: MonitorConfig = MonitorConfig()
    actuator: ActuatorConfig = ActuatorConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    agent: AgentSettings = AgentSettings()
    kubernetes: KubernetesConfig = KubernetesConfig()
    knowledge: KnowledgeConfig = KnowledgeConfig()

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        c = self.controller
        if c.min_scaleout > c.max_scaleout:
            raise ValueError(
                f"controller.min_scaleout ({c.min_scaleout}) must not exceed controller.max_scaleout ({c.max_scaleout})"
            )
        if self.agent.min_executors > self.agent.max_executors:
            raise ValueError(
                f"agent.min_executors ({self.agent.min_executors}) must not exceed agent.max_executors "
                f"({self.agent.max_executors})"
            )
        if self.forecast.resolution_s > self.forecast.horizon_s:
            raise ValueError("forecast.resolution_s must not exceed forecast.horizon_s")
        if not self.monitor.prometheus_url and not self.monitor.scrape_urls:
            raise ValueError("monitor: set prometheus_url or at least one of scrape_urls (nothing to observe)")
        if self.forecast.resolution_s != int(self.forecast.resolution_s):
            # Workload samples arrive per whole second; a fractional bucket would split them unevenly.
            raise ValueError(
                f"forecast.resolution_s must be a whole number of seconds, got {self.forecast.resolution_s}"
            )
        if self.monitor.step_s > c.loop_interval_s:
            raise ValueError(
                f"monitor.step_s ({self.monitor.step_s:g} s) must not exceed controller.loop_interval_s "
                f"({c.loop_interval_s:g} s): a tick's window would hold no sample"
            )
        if self.actuator.kind == "agent" and not (
            self.agent.min_executors <= c.min_scaleout and c.max_scaleout <= self.agent.max_executors
        ):
            raise ValueError(
                f"controller.min_scaleout..max_scaleout ({c.min_scaleout}..{c.max_scaleout}) must lie within "
                f"agent.min_executors..agent.max_executors ({self.agent.min_executors}..{self.agent.max_executors}): "
                "the agent refuses targets outside them"
            )
        problem = _monitor_problem(self.monitor) or _retention_problem(self)
        if problem:
            raise ValueError(problem)
        return self


class ConfigError(ValueError):
    """A YAML file that cannot be used; `errors` holds one line per problem, each naming its YAML path."""

    kind = "config"

    def __init__(self, source: str, errors: list[str]) -> None:
        super().__init__(f"{source}: invalid {self.kind}\n" + "\n".join(f"  {e}" for e in errors))
        self.source = source
        self.errors = errors

    def one_line(self) -> str:
        """For a CLI error line: the file, then every problem by YAML path, separated by semicolons."""
        return f"{self.source}: invalid {self.kind}: " + "; ".join(self.errors)


_MAX_CONFIG_BYTES = 1024 * 1024


class _StrictYamlLoader(yaml.SafeLoader):
    """safe_load that also refuses duplicate keys (YAML keeps the last silently) and aliases (`*name`)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
            raise yaml.constructor.ConstructorError(None, None, "aliases (*name) are not allowed here", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node.start_mark:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r:.40} (first at line {first.line + 1})", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads 6e2 and 1e308 as strings: it wants a dot and a signed exponent. Read them as YAML 1.2
# and JSON do, as numbers (an int field still refuses 6e2: it is a float).
_StrictYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?([0-9][0-9_]*)(\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)

M = TypeVar("M", bound=BaseModel)


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    for part in loc[:-1]:
        info = model.model_fields.get(str(part))
        if info is None or not isinstance(info.annotation, type) or not issubclass(info.annotation, BaseModel):
            return []
        model = info.annotation
    return sorted(model.model_fields)


def _explain(model: type[BaseModel], err: ErrorDetails) -> str:
    path = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(model, err["loc"]))
        return f"{path}: unknown key (allowed here: {allowed})"
    msg = err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    # The value is echoed to say which one was meant, with any password inside a URL masked.
    return f"{path}: {msg} (got {redact(repr(got))})" if err["loc"] and not isinstance(got, dict) else f"{path}: {msg}"


def parse_model(model: type[M], data: Any, source: str, error: type[ConfigError] = ConfigError) -> M:
    """Validate parsed YAML into `model`; every problem becomes one line of `error`."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise error(source, [f"(top level): expected a mapping, got {type(data).__name__}"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(source, [_explain(model, e) for e in exc.errors()]) from None


def load_model(
    model: type[M],
    path: str | Path | None,
    error: type[ConfigError] = ConfigError,
    overlay: dict[str, dict[str, Any]] | None = None,
) -> M:
    """Read a YAML file into `model`; None gives the defaults. `overlay` sets section keys (a command-line option
    standing for a YAML key) before validation, so the file is checked as if it held them."""
    if path is None:
        return parse_model(model, overlay, "config", error) if overlay else model()
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_CONFIG_BYTES + 1)  # bounded: a config is a few kB, /dev/zero is endless
    except OSError as exc:
        raise error(str(path), [f"cannot read: {exc.strerror}"]) from None
    if len(raw) > _MAX_CONFIG_BYTES:
        raise error(str(path), [f"larger than {_MAX_CONFIG_BYTES // 1024} KiB: not a config file"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}", [f"not UTF-8 text (byte {exc.start}: {raw[exc.start]:#04x})"]) from None
    try:
        data = yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise error(str(path), [f"not valid YAML: {' '.join(str(exc).split())}"]) from None
    except RecursionError:
        raise error(str(path), ["not valid YAML: nested too deeply"]) from None
    if overlay and isinstance(data, dict | None):
        data = dict(data or {})
        for section, values in overlay.items():
            given = data.get(section)
            data[section] = {**(given if isinstance(given, dict) else {}), **values}
    return parse_model(model, data, str(path), error)


def parse_config(data: Any, source: str = "config") -> Config:
    return parse_model(Config, data, source)


def load_config(path: str | Path | None, overlay: dict[str, dict[str, Any]] | None = None) -> Config:
    """Read a YAML config; None gives the defaults (see load_model for `overlay`)."""
    return load_model(Config, path, overlay=overlay)


def _bounds(info: Any) -> str:
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(m, attr, None)
            if value is not None:
                parts.append(f"{sym} {value}")
    args = getattr(info.annotation, "__args__", None)
    if args and all(isinstance(a, str) for a in args):
        parts.append("one of " + ", ".join(args))
    return ", ".join(parts) or "any"


def render_yaml(config: Config) -> str:
    """The config as YAML with every field's unit, allowed range and description as a comment."""
    lines = ["# daedalus-spark configuration. Every key is optional; unknown keys are errors."]
    for section_name in Config.model_fields:
        section = getattr(config, section_name)
        lines.append(f"{section_name}:")
        for name, info in type(section).model_fields.items():
            unit = (info.json_schema_extra or {}).get("unit", "-")
            lines.append(f"  # {info.description} Unit: {unit}. Allowed: {_bounds(info)}.")
            value = yaml.safe_dump(getattr(section, name), default_flow_style=True, width=1 << 16).strip()
            value = value.removesuffix("\n...").removesuffix("...").strip()
            lines.append(f"  {name}: {value}")
    return "\n".join(lines) + "\n"
