"""Runtime: the controller's HTTP endpoint — Prometheus `/metrics` and `/healthz` for probes."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from daedalus_spark.httpserve import BoundedHTTPServer, send_body, start

Health = Callable[[], tuple[bool, dict[str, Any]]]  # (healthy, details)


def serve_health(registry: CollectorRegistry, health: Health, host: str, port: int) -> ThreadingHTTPServer:
    """Serve on a daemon thread; port 0 picks a free one (`server.server_port`)."""

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a stalled client does not hold a thread forever

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - probes every few seconds: quiet
            return None

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                healthy, details = health()
                self._send(200 if healthy else 503, json.dumps(details, allow_nan=False).encode(), "application/json")
            else:
                self._send(404, b'{"error": "not found; try /metrics or /healthz"}', "application/json")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            send_body(self, code, body, content_type)

    return start(BoundedHTTPServer((host, port), Handler), "daedalus-health")
