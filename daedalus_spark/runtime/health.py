"""Runtime: the controller's HTTP endpoint — Prometheus `/metrics` and `/healthz` for probes (a WSGI app)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
from wsgiref.types import StartResponse, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app

from daedalus_spark.httpserve import BoundedHTTPServer, send_json_error, start

Health = Callable[[], tuple[bool, dict[str, Any]]]  # (healthy, details)

# A connection costs a thread (wsgiref on socketserver), held by a slow or stalled client until one of its reads or
# writes passes IO_DEADLINE_S: the slots are many, so such clients never take the one the liveness probe needs
# (with 16, 20 stalled clients made /healthz answer 503). Beyond MAX_CONNECTIONS a client is answered 503 at once.
# http.server refuses a request head line longer than MAX_HEAD_BYTES, or more than 100 header lines (431).
MAX_CONNECTIONS = 1024
MAX_HEAD_BYTES = 64 * 1024
IO_DEADLINE_S = 5.0
_STATUS = {200: "200 OK", 404: "404 Not Found", 405: "405 Method Not Allowed", 503: "503 Service Unavailable"}


def health_app(registry: CollectorRegistry, health: Health) -> Callable[[WSGIEnvironment, StartResponse], list[bytes]]:
    """/metrics from prometheus_client's own WSGI app (its content negotiation and compression), /healthz from
    `health`; GET and HEAD only, every answer with its length."""
    metrics = make_wsgi_app(registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if method not in ("GET", "HEAD"):
            code, headers, body = 405, [("Allow", "GET, HEAD")], _json({"error": "only GET and HEAD"})
        elif path == "/metrics":
            code, headers, body = _call(metrics, {**environ, "REQUEST_METHOD": "GET"})
        elif path == "/healthz":
            healthy, details = health()
            code, headers, body = 200 if healthy else 503, [], _json(details)
        else:
            code, headers, body = 404, [], _json({"error": "not found; try /metrics or /healthz"})
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("Content-Type", "application/json"))
        # wsgiref would name itself and the Python version in a Server header: say only what this is.
        start_response(_STATUS[code], [*headers, ("Content-Length", str(len(body))), ("Server", "daedalus-spark")])
        return [b"" if method == "HEAD" else body]

    return app


def _call(app: Callable[..., Iterable[bytes]], environ: WSGIEnvironment) -> tuple[int, list[tuple[str, str]], bytes]:
    answer: list[Any] = []
    body = b"".join(app(environ, lambda status, headers, exc_info=None: answer.extend((status, headers))))
    return int(answer[0].split()[0]), list(answer[1]), body


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, allow_nan=False).encode()


class _Handler(WSGIRequestHandler):
    timeout = IO_DEADLINE_S  # StreamRequestHandler puts it on the socket: every read and write has a deadline

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # it would be answered without a status line
            self.send_error(400, "not an HTTP/1.x request line")
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        send_json_error(self, code, message)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the controller's log stays its own
        return None


class HealthServer(BoundedHTTPServer, WSGIServer):
    """The WSGI app on a thread per connection (at most MAX_CONNECTIONS); `shutdown()` then `server_close()`, which
    also drops the clients still connected."""

    def __init__(self, registry: CollectorRegistry, health: Health, host: str, port: int) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__((host, port), _Handler, max_connections=MAX_CONNECTIONS)
        self.set_app(health_app(registry, health))

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        with self._open_lock:
            still = list(self._open)
        for request in still:  # a blocked read returns at once; its handler ends and closes the socket
            with contextlib.suppress(OSError):  # already gone
                request.shutdown(socket.SHUT_RDWR)


def serve_health(registry: CollectorRegistry, health: Health, host: str, port: int) -> HealthServer:
    """Serve on a daemon thread; port 0 picks a free one (`server.server_port`)."""
    server = HealthServer(registry, health, host, port)
    start(server, "daedalus-health")
    return server
