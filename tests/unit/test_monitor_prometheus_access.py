"""Monitor (Prometheus): one job's series per query, and Prometheus reached as users run it (TLS, bearer token)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from daedalus_spark.config import MonitorConfig
from daedalus_spark.monitor.assemble import substitute
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor, auth_headers, job_labels, queries, session

TOKEN = "s3cret-token"


@pytest.mark.parametrize(
    ("labels", "rendered"),
    [
        pytest.param({}, "x{}[30s]", id="no-labels"),
        pytest.param({"namespace": "a"}, 'x{namespace="a"}[30s]', id="one"),
        pytest.param(
            {"namespace": "a", "application_id": "spark-1"},
            'x{application_id="spark-1",namespace="a"}[30s]',
            id="two-sorted",
        ),
        pytest.param({"l": 'q"\\'}, 'x{l="q\\"\\\\"}[30s]', id="quote-and-backslash-escaped"),
    ],
)
def test_selector_renders_exact_matchers(labels, rendered):
    assert substitute("x{$selector}[$rate_window]", 30, labels) == rendered


@pytest.mark.parametrize("signal", ["cpu", "busy_time"])
def test_every_default_query_selects_the_job(signal):
    labels = {"namespace": "wordcount", "application_id": "spark-1"}
    for name, promql in queries(MonitorConfig(job_labels=labels), signal).items():
        metrics = promql.count("daedalus_spark_")
        assert promql.count('{application_id="spark-1",namespace="wordcount"}') == metrics, name
        assert "$" not in promql, name


@pytest.mark.parametrize(
    ("config", "environ", "expected"),
    [
        pytest.param({}, {}, {}, id="none"),
        pytest.param({"job_labels": {"namespace": "a"}}, {}, {"namespace": "a"}, id="literal"),
        pytest.param(
            {"job_labels": {"namespace": "a"}, "job_labels_env": {"application_id": "APP"}},
            {"APP": "spark-9"},
            {"namespace": "a", "application_id": "spark-9"},
            id="from-env",
        ),
    ],
)
def test_job_labels_come_from_config_and_environment(config, environ, expected):
    assert job_labels(MonitorConfig(**config), environ) == expected


@pytest.mark.parametrize("environ", [pytest.param({}, id="unset"), pytest.param({"APP": ""}, id="empty")])
def test_a_job_label_variable_that_is_missing_stops_the_start(environ):
    with pytest.raises(ValueError, match=r"monitor.job_labels_env.application_id: environment variable APP"):
        job_labels(MonitorConfig(job_labels_env={"application_id": "APP"}), environ)


@pytest.mark.parametrize(
    ("config", "verify"),
    [
        pytest.param({}, True, id="checked-by-default"),
        pytest.param({"ca_file": "CA"}, "CA", id="ca-bundle"),
        pytest.param({"tls_verify": False}, False, id="off-when-asked"),
    ],
)
def test_certificates_are_checked_unless_turned_off(tmp_path, config, verify):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    config = {k: (str(ca) if v == "CA" else v) for k, v in config.items()}
    assert session(MonitorConfig(**config)).verify == (str(ca) if verify == "CA" else verify)


def test_a_missing_ca_bundle_stops_the_start():
    with pytest.raises(
        ValueError, match=r"monitor.ca_file \(/nonexistent/ca.pem\): cannot read: No such file or directory"
    ):
        session(MonitorConfig(ca_file="/nonexistent/ca.pem"))


def test_bearer_token_from_file_or_environment(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    expected = {"Authorization": f"Bearer {TOKEN}"}
    assert auth_headers(MonitorConfig(bearer_token_file=str(path)), {}) == expected
    assert auth_headers(MonitorConfig(bearer_token_env="TOK"), {"TOK": TOKEN + "\n"}) == expected
    assert auth_headers(MonitorConfig(), {"TOK": TOKEN}) == {}


@pytest.mark.parametrize(
    ("config", "environ", "message"),
    [
        pytest.param(
            {"bearer_token_env": "TOK"}, {}, "monitor.bearer_token_env (TOK): the bearer token is empty", id="env-unset"
        ),
        pytest.param(
            {"bearer_token_file": "/nonexistent/token"},
            {},
            "monitor.bearer_token_file (/nonexistent/token)",
            id="file-missing",
        ),
    ],
)
def test_a_missing_token_stops_the_start(config, environ, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        auth_headers(MonitorConfig(**config), environ)


@pytest.fixture
def prometheus() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A stand-in query_range endpoint that wants the bearer token; records each request's query and header."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, "authorization": self.headers.get("Authorization")})
            ok = self.headers.get("Authorization") == f"Bearer {TOKEN}"
            body = {"status": "success", "data": {"resultType": "matrix", "result": []}} if ok else {"error": "401"}
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("environ", "error_kind"),
    [
        pytest.param({"TOK": TOKEN + "\n"}, "empty", id="token-accepted"),
        pytest.param({"TOK": "wrong"}, "unreachable", id="token-refused"),
    ],
)
def test_queries_carry_the_token_and_no_log_shows_it(prometheus, caplog, environ, error_kind):
    url, seen = prometheus
    config = MonitorConfig(
        prometheus_url=url, scrape_interval_s=1, bearer_token_env="TOK", job_labels={"namespace": "a"}
    )
    monitor = PrometheusMonitor(config, "cpu", environ)
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(MonitorError) as err:
            monitor.observe(start_s=100, end_s=110)
    finally:
        monitor.close()
    assert err.value.kind == error_kind
    assert {r["authorization"] for r in seen} == {f"Bearer {environ['TOK'].strip()}"}
    assert all("namespace%3D%22a%22" in r["path"] for r in seen)
    assert TOKEN not in caplog.text and TOKEN not in str(err.value)
