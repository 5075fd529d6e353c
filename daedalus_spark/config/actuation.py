"""Configuration: the sections that act on the job — actuator, runtime, the agent, Kubernetes."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from daedalus_spark.config.fields import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    Section,
    check_regular_file,
    dns_name,
    http_url,
    label_selector,
    nonblank,
    openable_path,
    setting,
)


class ActuatorConfig(Section):
    kind: Literal["agent", "dry_run", "kubernetes"] = setting(
        "agent",
        "-",
        "agent: PUT the executor target to the in-driver agent; dry_run: decide and log only; "
        "kubernetes: set the scale of the kubernetes: section's StatefulSet or Deployment.",
    )
    agent_url: str = setting("http://127.0.0.1:9095", "url", "The agent's base URL (sidecar: localhost).")
    token_env: str = setting(
        "DAEDALUS_AGENT_TOKEN",
        "-",
        "Environment variable holding the agent's bearer token (unset: no token).",
    )
    timeout_s: float = setting(10, "s", "Timeout of one HTTP request to the agent.", gt=0, le=300)
    retries: int = setting(3, "attempts", "Attempts per request before the actuation is reported failed.", ge=1, le=20)
    backoff_s: float = setting(1, "s", "Wait before the first retry; doubles with every further one.", ge=0, le=60)
    confirm_timeout_s: float = setting(
        90,
        "s",
        "After a target is accepted, the following ticks (never the one that set it) look for the live executor "
        "count to reach it this long: applied, else unconfirmed.",
        ge=0,
        le=3600,
    )
    confirm_poll_s: float = setting(
        1, "s", "Unused: targets are confirmed on the following ticks (kept so existing configs load).", gt=0, le=60
    )

    _url = field_validator("agent_url")(http_url)


class RuntimeConfig(Section):
    metrics_host: str = setting("127.0.0.1", "-", "Address of the controller's /metrics and /healthz.")
    metrics_port: int = setting(
        9097, "port", "Port of the controller's /metrics and /healthz (0 = off).", ge=0, le=65535
    )
    decision_log: str = setting(
        "daedalus-decisions.jsonl",
        "path",
        "One JSON line per tick: time, reason, scale-outs, evidence, actuation.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = setting("INFO", "-", "Logging level.")
    log_format: Literal["text", "json"] = setting(
        "text", "-", "Log lines on stderr: text, or json (one object per line: time in UTC, level, logger, message)."
    )

    _log = field_validator("decision_log")(nonblank)
    _log_chars = field_validator("decision_log")(openable_path)

    @field_validator("metrics_host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty (that listens on every interface: write 0.0.0.0 to mean it)")
        if any(ch.isspace() or ord(ch) < 32 for ch in value):
            raise ValueError("a host name or address, without spaces")
        return value


class AgentSettings(Section):
    host: str = setting("127.0.0.1", "-", "The in-driver agent listens here (beyond localhost only when set).")
    port: int = setting(9095, "port", "The agent's HTTP port.", ge=0, le=65535)
    token_env: str = setting(
        "DAEDALUS_AGENT_TOKEN",
        "-",
        "Environment variable with the bearer token /executors requires (unset: none).",
    )
    min_executors: int = setting(1, "executors", "Targets below this are refused.", ge=0, le=10000)
    max_executors: int = setting(16, "executors", "Targets above this are refused.", ge=1, le=10000)
    poll_s: float = setting(1, "s", "How often the agent polls the driver's REST API.", gt=0, le=60)


class KubernetesConfig(Section):
    namespace: str = setting(
        "",
        "-",
        "Namespace of the scaled object, the executor pods and the events (empty: the pod's own namespace "
        "in a cluster, else the kubeconfig context's, else default).",
    )
    kind: Literal["StatefulSet", "Deployment"] = setting(
        "StatefulSet",
        "-",
        "actuator.kind kubernetes: kind of the object whose scale subresource is set.",
    )
    name: str = setting("spark-worker", "-", "actuator.kind kubernetes: name of that StatefulSet or Deployment.")
    in_cluster: bool | Literal["auto"] = setting(
        "auto",
        "-",
        "true: the pod's service account; false: the kubeconfig; auto: in-cluster when running in a pod.",
    )
    kubeconfig: str = setting(
        "", "path", "Kubeconfig file when not in a cluster (empty: $KUBECONFIG or ~/.kube/config)."
    )
    request_timeout_s: float = setting(10, "s", "Timeout of one request to the API server.", gt=0, le=300)
    retries: int = setting(
        4,
        "attempts",
        "Attempts per request on conflicts (409), server errors (5xx) and timeouts.",
        ge=1,
        le=20,
    )
    backoff_s: float = setting(1, "s", "Wait before the first retry; doubles with every further one.", ge=0, le=60)
    executor_selector: str = setting(
        "spark-role=executor",
        "labels",
        "Label selector of the job's executor pods (driver-sidecar modes).",
    )
    app_id_env: str = setting(
        "DAEDALUS_SPARK_APP_ID",
        "-",
        "Environment variable holding the Spark application id; when set, the "
        "selector also requires spark-app-selector=<id> (other jobs' executors in the namespace are ignored).",
    )
    pending_timeout_s: float = setting(
        120,
        "s",
        "An executor pod Pending longer than this (quota, no nodes) makes the target unreachable.",
        ge=0,
        le=86400,
    )
    events: bool = setting(True, "-", "Write a Kubernetes Event for every rescale and failed rescale.")
    pod_name_env: str = setting(
        "DAEDALUS_POD_NAME",
        "-",
        "Driver-sidecar modes: variable with the driver pod's name, the events' object.",
    )
    pod_uid_env: str = setting(
        "DAEDALUS_POD_UID",
        "-",
        "Driver-sidecar modes: variable with the driver pod's uid (kubectl describe matches events by uid).",
    )

    _namespace = field_validator("namespace")(dns_name(DNS_LABEL, "namespace"))
    _name = field_validator("name")(dns_name(DNS_SUBDOMAIN, "object name"))
    _selector = field_validator("executor_selector")(label_selector)

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, value: str) -> str:
        """Checked as the client reads it: a file (a named pipe would hold the start), when one is named."""
        if openable_path(value):
            check_regular_file(value, f"kubernetes.kubeconfig ({value})")
        return value
