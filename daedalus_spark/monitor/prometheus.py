"""Monitor (production): range queries to a Prometheus server, assembled into one Observation per window."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from datetime import UTC, datetime
from typing import Any

import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from daedalus_spark.config import MonitorConfig
from daedalus_spark.config.fields import check_regular_file, read_small_file
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.assemble import (
    BATCH_QUERIES,
    OPTIONAL_QUERIES,
    Matrix,
    Window,
    build_observation,
    render_duration,
    selector,
    substitute,
)
from daedalus_spark.monitor.native import NATIVE_QUERIES, group_selector
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.redact import bearer_token

log = logging.getLogger(__name__)

_CLOSE_POLL_S = 0.1  # how often a wait for an answer looks whether close() was called
_GRACE_S = 0.5  # beyond monitor.timeout_s, for the client's own timeout to fire first with its clearer message
# One job's range queries over a few loop intervals answer in kilobytes to a few MiB (tune's 7-day history too). A
# larger answer is a selector matching far more than one job, or a hostile server: read whole, a 200 MB answer took
# the controller to 1.24 GB. Counted after decompression, so a small gzip bomb is caught too.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_READ_CHUNK_BYTES = 64 * 1024


class AnswerTooLarge(requests.RequestException):
    """Prometheus's answer grew past MAX_ANSWER_BYTES; the rest is not read."""


# The config field that holds each query's template.
QUERY_FIELDS = {
    "workload": "query_workload",
    "throughput": "query_throughput",
    "lag": "query_lag",
    "executors": "query_executors",
    "uptime": "query_uptime",
    "partitions": "query_partition_workload",
    "batches": "query_batches",
    "batch_records": "query_batch_records",
    "batch_seconds": "query_batch_seconds",
    "application": "query_application",
    "agent_target": "query_agent_target",
}


def queries(
    config: MonitorConfig, utilization_signal: str, job_labels: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The PromQL of each query with `$rate_window`, `$selector` (`job_labels`, by default the config's),
    `$source_selector` and `$group_selector` substituted (keys: assemble.QUERIES and OPTIONAL_QUERIES).

    With `metrics: native`, a query that still reads the agent's default comes from monitor/native.py instead (the
    CPU signal stays: cAdvisor or the CPU exporter, not Spark), and the batch queries, which Spark cannot answer, go.
    A query changed in the config is kept either way.
    """
    fields = {**QUERY_FIELDS, "utilization": "query_cpu" if utilization_signal == "cpu" else "query_busy"}
    templates = {}
    for name, field in fields.items():
        template: str | None = getattr(config, field)
        agent_default = template == MonitorConfig.model_fields[field].default
        if config.metrics == "native" and agent_default and field != "query_cpu":
            template = NATIVE_QUERIES.get(name)
        if template is not None:
            templates[name] = template
    labels = config.job_labels if job_labels is None else job_labels
    source = {
        "$source_selector": selector(config.source_labels),
        "$group_selector": group_selector(config.consumer_group),
    }
    rendered = {name: substitute(t, config.rate_window_s, labels) for name, t in templates.items()}
    for variable, value in source.items():
        rendered = {name: promql.replace(variable, value) for name, promql in rendered.items()}
    return rendered


def job_labels(config: MonitorConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """`job_labels` plus those of `job_labels_env` read from the environment (unset or empty: ValueError)."""
    labels = dict(config.job_labels)
    for label, variable in config.job_labels_env.items():
        value = environ.get(variable, "")
        if not value:
            raise ValueError(f"monitor.job_labels_env.{label}: environment variable {variable} is unset or empty")
        labels[label] = value
    return labels


def auth_headers(config: MonitorConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The Authorization header from `bearer_token_file` or `bearer_token_env` (the token is never logged)."""
    if config.bearer_token_file:
        source = f"monitor.bearer_token_file ({config.bearer_token_file})"
        token = bearer_token(read_small_file(config.bearer_token_file, source), source)
    elif config.bearer_token_env:
        source = f"monitor.bearer_token_env ({config.bearer_token_env})"
        token = bearer_token(environ.get(config.bearer_token_env, ""), source)
    else:
        return {}
    if not token:
        raise ValueError(f"{source}: the bearer token is empty")
    return {"Authorization": f"Bearer {token}"}


def session(config: MonitorConfig) -> requests.Session:
    """An HTTP session that checks certificates unless `tls_verify` is off, against `ca_file` when set."""
    if config.tls_verify and config.ca_file:  # else every query fails alike
        check_regular_file(config.ca_file, f"monitor.ca_file ({config.ca_file})")
    http = requests.Session()
    http.verify = (config.ca_file or True) if config.tls_verify else False
    http.hooks["response"].append(read_capped)
    return http


def read_capped(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """Session response hook: read the body now, at most MAX_ANSWER_BYTES of it (requests runs the hook before it
    reads the body itself, and then keeps what was read here); past the cap the connection is dropped."""
    max_bytes = MAX_ANSWER_BYTES
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        response.close()
        raise AnswerTooLarge(f"the answer declares {int(declared)} bytes, more than {_mib(max_bytes)}")
    body = bytearray()
    for chunk in response.iter_content(_READ_CHUNK_BYTES):
        body += chunk
        if len(body) > max_bytes:
            response.close()
            raise AnswerTooLarge(f"the answer is larger than {_mib(max_bytes)}")
    response._content = bytes(body)  # what `response.content` would have read; requests then reads nothing more


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):g} MiB"


class PrometheusMonitor:
    """MetricsSource over Prometheus's HTTP API; one timeout budget covers all queries of a window."""

    def __init__(
        self, config: MonitorConfig, utilization_signal: str, environ: Mapping[str, str] | None = None
    ) -> None:
        if not config.prometheus_url:
            raise ValueError("monitor.prometheus_url is empty: PrometheusMonitor needs a server")
        environ = {} if environ is None else environ
        self.config = config
        self.queries = queries(config, utilization_signal, job_labels(config, environ))
        # No client-side retries: a failed window is skipped and the next tick asks again.
        self._client = PrometheusConnect(
            url=config.prometheus_url.rstrip("/"),
            headers=auth_headers(config, environ) or None,
            disable_ssl=not config.tls_verify,
            session=session(config),
            retry=Retry(total=0, read=False),
        )
        self._closing = threading.Event()  # set by close(): a tick waiting on an answer gives up at once

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        window = Window(start_s, end_s, self.config.step_s)
        if window.last_index < window.first_index:
            raise MonitorError("empty", f"window ({start_s}, {end_s}] holds no {self.config.step_s}-s step")
        return build_observation(self.answers(window), window, executor_label=self.config.executor_label)

    def answers(
        self, window: Window, *, names: Collection[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, Matrix]:
        """The answers of the queries `names` (all by default) over the window's grid within one budget of
        `timeout_s` (monitor.timeout_s by default); an optional query that fails is an empty answer."""
        budget_s = self.config.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + budget_s
        # Concurrent: Prometheus evaluates them in parallel while this process decodes the answers.
        futures = {
            name: self._submit(name, promql, window, deadline, budget_s)
            for name, promql in self.queries.items()
            if names is None or name in names
        }
        return {name: self._answer(name, future, deadline, budget_s) for name, future in futures.items()}

    def _answer(self, name: str, future: Future[Matrix], deadline: float, budget_s: float) -> Matrix:
        """The query's answer by the window's deadline: a server that trickles its answer (each read within the
        client's timeout) fails the window like a silent one instead of holding the tick."""
        end = deadline + _GRACE_S
        while not future.done():
            left = end - time.monotonic()
            if self._closing.is_set():
                raise MonitorError("timeout", f"query {name!r} abandoned: the monitor is closing")
            if left <= 0:
                raise MonitorError(
                    "timeout",
                    f"query {name!r} took longer than {budget_s:g} s ({self.config.prometheus_url})",
                )
            wait_futures([future], timeout=min(left, _CLOSE_POLL_S))
        return _optional(name, future)

    def _submit(self, name: str, promql: str, window: Window, deadline: float, budget_s: float) -> Future[Matrix]:
        """The query on a daemon thread of its own: one stuck on a trickling answer is abandoned by `_answer` and
        never holds the process at exit (a thread pool's workers are joined at exit)."""
        future: Future[Matrix] = Future()
        future.set_running_or_notify_cancel()

        def query() -> None:
            try:
                future.set_result(self._query(name, promql, window, deadline, budget_s))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting tick, as a pool would
                future.set_exception(exc)

        if self._closing.is_set():
            future.set_exception(MonitorError("timeout", f"query {name!r} not sent: the monitor is closed"))
        else:
            threading.Thread(target=query, name=f"promql-{name}", daemon=True).start()
        return future

    def close(self) -> None:
        """Stop at once: a query still waiting for its answer is abandoned (its thread ends with the answer or the
        client's timeout, never holding the caller); idempotent."""
        self._closing.set()
        close = getattr(self._client, "close", None)  # missing before prometheus-api-client 0.6
        close() if close is not None else self._client._session.close()

    def _query(self, name: str, promql: str, window: Window, deadline: float, budget_s: float) -> Matrix:
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0:
            raise MonitorError("timeout", f"no time left for query {name!r} within {budget_s:g} s")
        first_s, last_s = window.first_index * window.step_s, window.last_index * window.step_s
        # The client rounds start and end to whole seconds; the params override them for sub-second steps.
        params = {"start": f"{first_s:.3f}", "end": f"{last_s:.3f}", "timeout": render_duration(remaining_s)}
        try:
            result: Any = self._client.custom_query_range(
                promql,
                start_time=_dt(first_s),
                end_time=_dt(last_s),
                step=f"{window.step_s:g}",
                params=params,
                timeout=remaining_s,
            )
        except (requests.Timeout, urllib3.exceptions.TimeoutError):
            raise MonitorError(
                "timeout", f"query {name!r} took longer than {budget_s:g} s ({self.config.prometheus_url})"
            ) from None
        except (requests.ConnectionError, urllib3.exceptions.HTTPError) as exc:
            raise MonitorError(
                "unreachable", f"Prometheus at {self.config.prometheus_url} unreachable: {type(exc).__name__}"
            ) from None
        except PrometheusApiClientException as exc:
            raise _api_error(name, promql, str(exc)) from None
        except (requests.RequestException, ValueError, KeyError) as exc:  # bad JSON, a proxy's error page
            raise MonitorError("invalid", f"query {name!r}: unusable answer from Prometheus: {exc}") from None
        if not isinstance(result, list):
            raise MonitorError("invalid", f"query {name!r}: expected a matrix, got {type(result).__name__}")
        return result


def _optional(name: str, future: Future[Matrix]) -> Matrix:
    """A query's answer; an optional query's failure is an empty answer (logged), not a failed window."""
    try:
        return future.result()
    except MonitorError as exc:
        if name not in OPTIONAL_QUERIES:
            raise
        # The capacity model does without the batch progress (it keeps what it learned): not worth a warning.
        level = logging.INFO if name in BATCH_QUERIES else logging.WARNING
        log.log(level, "optional query %r failed, observing without it: %s", name, exc)
        return []


def _api_error(name: str, promql: str, detail: str) -> MonitorError:
    if "503" in detail or "timeout" in detail.lower():  # Prometheus's own query timeout or an overloaded server
        return MonitorError("timeout", f"query {name!r}: {detail[:300]}")
    if "400" in detail or "422" in detail:
        return MonitorError("invalid", f"query {name!r} rejected ({promql}): {detail[:300]}")
    return MonitorError("unreachable", f"query {name!r}: {detail[:300]}")


def _dt(t_s: float) -> datetime:
    return datetime.fromtimestamp(t_s, tz=UTC)
