"""Execute (agent): HTTP endpoint — Prometheus metrics, and GET/PUT of the absolute executor target."""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from daedalus_spark.agent.targets import TargetError, parse_target

MAX_BODY_BYTES = 4096


@dataclass(frozen=True)
class Routes:
    registry: CollectorRegistry
    status: Callable[[], dict[str, Any]]
    apply: Callable[[int], dict[str, Any]]
    min_executors: int
    max_executors: int
    token: str | None


def make_handler(routes: Routes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep the driver log quiet
            return None

        def do_GET(self) -> None:  # noqa: N802
            if self.path.split("?")[0] == "/metrics":
                self._send(200, generate_latest(routes.registry), CONTENT_TYPE_LATEST)
            elif self.path == "/executors":
                self._json(200, routes.status()) if self._authorized() else None
            elif self.path == "/healthz":
                self._json(200, {"ok": True})
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def do_PUT(self) -> None:  # noqa: N802
            if self.path != "/executors":
                self._json(404, {"error": f"no route {self.path}"})
                return
            if not self._authorized():
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._json(413, {"error": "body too large"})
                return
            try:
                target = parse_target(self.rfile.read(length), min_executors=routes.min_executors,
                                      max_executors=routes.max_executors)
            except TargetError as exc:
                self._json(400, {"error": str(exc)})
                return
            try:
                self._json(200, routes.apply(target))
            except Exception as exc:  # noqa: BLE001 - the driver refused; report it, keep serving
                self._json(503, {"error": f"could not apply target {target}: {exc}"})

        do_POST = do_PUT

        def _authorized(self) -> bool:
            if routes.token is None:
                return True
            given = self.headers.get("Authorization", "")
            if hmac.compare_digest(given.encode(), f"Bearer {routes.token}".encode()):
                return True
            self._json(401, {"error": "missing or wrong bearer token"})
            return False

        def _json(self, code: int, payload: dict[str, Any]) -> None:
            self._send(code, json.dumps(payload).encode(), "application/json")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def serve(routes: Routes, host: str, port: int) -> ThreadingHTTPServer:
    """Start serving on a daemon thread; port 0 picks a free port (see `server.server_port`)."""
    server = ThreadingHTTPServer((host, port), make_handler(routes))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="daedalus-agent-http", daemon=True).start()
    return server
