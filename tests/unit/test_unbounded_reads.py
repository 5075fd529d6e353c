"""Unbounded reads and slow clients: scrape bodies are capped and read within one deadline; slow or stalled clients
of /metrics and /healthz never make the liveness probe fail; malformed requests get a status line."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry, Counter

from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.scrape import MAX_SCRAPE_BYTES, http_fetch
from daedalus_spark.runtime.health import MAX_HEAD_BYTES, HealthServer, serve_health


class _Target(BaseHTTPRequestHandler):
    """A scrape target whose answer the test's `server.body` gives, one write per item (a trickle: one byte each,
    `server.gate` released between them)."""

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for chunk in self.server.body():  # type: ignore[attr-defined]
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the scraper gave up: what the test wants


@pytest.fixture
def target() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Target)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_port}/metrics"


def test_a_scrape_body_beyond_the_cap_fails_the_scrape(target) -> None:
    line = b"# " + b"x" * 65_533 + b"\n"
    target.body = lambda: (line for _ in range(MAX_SCRAPE_BYTES // len(line) + 2))  # type: ignore[attr-defined]
    with pytest.raises(MonitorError) as err:
        http_fetch(_url(target), 30.0)
    assert err.value.kind == "invalid" and "larger than 32 MiB" in str(err.value)


def test_a_body_within_the_cap_is_read_whole(target) -> None:
    text = "".join(f"metric_{i} {i}\n" for i in range(20_000))
    target.body = lambda: iter([text.encode()])  # type: ignore[attr-defined]
    assert http_fetch(_url(target), 30.0) == text


def test_a_trickling_target_fails_at_the_deadline_not_per_read(target) -> None:
    """Each byte comes well within the per-read timeout; the whole answer never does. The target is released by an
    event, not a clock: it trickles until the scraper has given up."""
    stop = threading.Event()

    def trickle() -> Iterator[bytes]:
        while not stop.wait(0.05):
            yield b"#"

    target.body = trickle  # type: ignore[attr-defined]
    try:
        with pytest.raises(MonitorError) as err:
            http_fetch(_url(target), 0.5)
    finally:
        stop.set()
    assert err.value.kind == "timeout" and "the whole answer" in str(err.value)


@pytest.fixture
def health() -> Iterator[HealthServer]:
    registry = CollectorRegistry()
    Counter("daedalus_probe_total", "a metric", registry=registry).inc()
    server = serve_health(registry, lambda: (True, {"status": "ok"}), "127.0.0.1", 0)
    yield server
    server.shutdown()
    server.server_close()


def _ask(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("stalled", [20, 200], ids=["more-than-the-old-16-slots", "200"])
def test_stalled_clients_never_make_healthz_fail(health, stalled) -> None:
    clients = [socket.create_connection(("127.0.0.1", health.server_port), timeout=5) for _ in range(stalled)]
    try:
        for c in clients:
            c.sendall(b"GET /metr")  # half a request line, then nothing
        reply = _ask(health.server_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        metrics = _ask(health.server_port, b"GET /metrics HTTP/1.1\r\n\r\n")
    finally:
        for c in clients:
            c.close()
    assert reply.startswith(b"HTTP/1.0 200 ") and reply.endswith(b'{"status": "ok"}')
    assert b"daedalus_probe_total 1.0" in metrics


def test_a_client_that_never_reads_its_answer_holds_nothing(health) -> None:
    slow = socket.create_connection(("127.0.0.1", health.server_port), timeout=5)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    try:
        with contextlib.suppress(OSError):  # the server may close after answering the first: that is the point
            slow.sendall(b"GET /metrics HTTP/1.1\r\n\r\n" * 50)  # only the first is answered; none is read
        assert _ask(health.server_port, b"GET /healthz HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.0 200 ")
    finally:
        slow.close()


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"\x00\x01garbage\r\n\r\n", b"400"),
        (b"GET /healthz\r\n\r\n", b"400"),  # HTTP/0.9: no version, would get an answer without a status line
        (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", b"431"),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"405"),
        (b"GET /../../etc/passwd HTTP/1.1\r\n\r\n", b"404"),
        (b"GET /healthz?verbose=1 HTTP/1.1\r\n\r\n", b"200"),
        (b"HEAD /metrics HTTP/1.1\r\n\r\n", b"200"),
    ],
    ids=["garbage", "http-0.9", "head-too-large", "post", "traversal", "query-ignored", "head"],
)
def test_every_request_gets_a_status_line(health, raw, status) -> None:
    reply = _ask(health.server_port, raw)
    assert reply.split(b"\r\n", 1)[0].split()[1] == status
    if raw.startswith(b"HEAD"):
        assert reply.endswith(b"\r\n\r\n")  # headers only


def test_shutdown_drops_clients_still_connected(health) -> None:
    stalled = socket.create_connection(("127.0.0.1", health.server_port), timeout=5)
    stalled.sendall(b"GET /")
    _ask(health.server_port, b"GET /healthz HTTP/1.1\r\n\r\n")  # the stalled one is being handled by now
    health.shutdown()
    health.server_close()
    assert stalled.recv(10) == b""  # closed, not left hanging
    stalled.close()


def test_a_prometheus_that_trickles_its_answers_fails_the_window_at_the_deadline(target) -> None:
    from daedalus_spark.config import MonitorConfig
    from daedalus_spark.monitor.prometheus import PrometheusMonitor

    stop = threading.Event()

    def trickle() -> Iterator[bytes]:
        while not stop.wait(0.05):
            yield b" "

    target.body = trickle  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{target.server_port}"
    monitor = PrometheusMonitor(MonitorConfig(prometheus_url=url, scrape_interval_s=1, timeout_s=0.5), "cpu")
    try:
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=1_700_000_000.0, end_s=1_700_000_010.0)
    finally:
        stop.set()
        monitor.close()
    assert err.value.kind == "timeout" and "took longer than 0.5 s" in str(err.value)


def _prometheus_monitor(server: ThreadingHTTPServer):  # type: ignore[no-untyped-def]
    from daedalus_spark.config import MonitorConfig
    from daedalus_spark.monitor.prometheus import PrometheusMonitor

    url = f"http://127.0.0.1:{server.server_port}"
    return PrometheusMonitor(MonitorConfig(prometheus_url=url, scrape_interval_s=1, timeout_s=5), "cpu")


@pytest.mark.parametrize("chunks", [1, 40], ids=["one-write", "forty-writes"])
def test_a_prometheus_answer_beyond_the_cap_fails_the_window(target, monkeypatch, chunks) -> None:
    from daedalus_spark.monitor import prometheus

    monkeypatch.setattr(prometheus, "MAX_ANSWER_BYTES", 4096)

    def huge() -> Iterator[bytes]:
        for _ in range(chunks):
            yield b"x" * (40_000 // chunks)

    target.body = huge  # type: ignore[attr-defined]
    monitor = _prometheus_monitor(target)
    try:
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=1_700_000_000.0, end_s=1_700_000_010.0)
    finally:
        monitor.close()
    assert err.value.kind == "invalid" and "larger than 0.00390625 MiB" in str(err.value)


def test_the_cap_hook_keeps_an_answer_within_it_for_the_client(target, monkeypatch) -> None:
    import requests

    from daedalus_spark.config import MonitorConfig
    from daedalus_spark.monitor import prometheus

    monkeypatch.setattr(prometheus, "MAX_ANSWER_BYTES", 4096)
    answer = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
    answer += b" " * (4096 - len(answer))  # exactly at the cap
    target.body = lambda: iter([answer])  # type: ignore[attr-defined]
    http = prometheus.session(MonitorConfig(prometheus_url="http://127.0.0.1:1", scrape_interval_s=1))
    try:
        response = http.get(_url(target), timeout=5)
        assert response.content == answer and response.json()["data"]["result"] == []
        target.body = lambda: iter([answer + b" "])  # type: ignore[attr-defined]  # one byte past the cap
        with pytest.raises(requests.RequestException, match="larger than"):
            http.get(_url(target), timeout=5)
    finally:
        http.close()
