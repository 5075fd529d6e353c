"""Execute (agent): HTTP endpoint — Prometheus metrics, and GET/PUT of the absolute executor target.

It stays on http.server rather than prometheus_client's server: it serves a PUT with a bearer token and a strictly
checked body besides /metrics, and it runs inside the Spark driver, where a thread per connection must be bounded
(httpserve.BoundedHTTPServer answers 503 beyond MAX_CONNECTIONS; prometheus_client's server starts a thread for
every connection, without a bound)."""

from __future__ import annotations

import contextlib
import hmac
import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from daedalus_spark.agent.targets import TargetError, TargetRefused, parse_target
from daedalus_spark.httpserve import MAX_CONNECTIONS, BoundedHTTPServer, send_body, send_json_error, start

MAX_BODY_BYTES = 4096
# A client gets this long for each read (request line, headers, body) before its connection is dropped.
READ_TIMEOUT_S = 10.0
# And this long for the whole exchange: a client trickling a byte just inside each read's timeout would otherwise hold
# one of the bounded slots for as long as it likes (the controller's own PUT then finds them all taken).
EXCHANGE_DEADLINE_S = 30.0
# A Content-Length is plain decimal digits (RFC 9110); a sign, spaces or a fraction make the request malformed.
_CONTENT_LENGTH = re.compile(r"[0-9]{1,10}")


class BadRequest(ValueError):
    """A request that is not a complete, well-formed HTTP request: answered 4xx, nothing applied."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Routes:
    registry: CollectorRegistry
    status: Callable[[], dict[str, Any]]
    apply: Callable[[int], dict[str, Any]]
    min_executors: int
    max_executors: int
    token: str | None


class AgentHandler(BaseHTTPRequestHandler):
    """The agent's routes; `make_handler` binds them and the read deadline in a subclass."""

    routes: ClassVar[Routes]
    timeout = READ_TIMEOUT_S  # StreamRequestHandler puts this on the socket: every read has a deadline
    exchange_deadline_s: ClassVar[float] = EXCHANGE_DEADLINE_S

    def handle(self) -> None:
        """The exchange under one deadline: past it the socket is shut down, the reads end and the slot is freed."""
        watchdog = threading.Timer(self.exchange_deadline_s, self._cut_off)
        watchdog.daemon = True
        watchdog.start()
        try:
            super().handle()
        finally:
            watchdog.cancel()

    def _cut_off(self) -> None:
        with contextlib.suppress(OSError):  # the client may have gone already
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep the driver log quiet
        return None

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/metrics":
            self._send(200, generate_latest(self.routes.registry), CONTENT_TYPE_LATEST)
        elif self.path == "/executors":
            if self._authorized():
                try:
                    status = self.routes.status()
                except Exception as exc:  # noqa: BLE001 - the driver could not say (busy, stopping): say so, keep serving
                    self._json(503, {"error": f"executor status unavailable: {type(exc).__name__}: {exc}"[:300]})
                else:
                    self._json(200, status)
        elif self.path == "/healthz":
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": f"no route {self.path}"})

    def do_PUT(self) -> None:
        if self.path != "/executors":
            self._json(404, {"error": f"no route {self.path}"})
            return
        if not self._authorized():
            return
        try:
            target = parse_target(
                self._body(), min_executors=self.routes.min_executors, max_executors=self.routes.max_executors
            )
        except BadRequest as exc:
            self.close_connection = True
            self._json(exc.code, {"error": str(exc)})
            return
        except TargetError as exc:
            self._json(400, {"error": str(exc)})
            return
        try:
            self._json(200, self.routes.apply(target))
        except TargetRefused as exc:  # the job's mode or Spark said no: a retry will not help
            self._json(409, {"error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - the driver refused; report it, keep serving
            self._json(503, {"error": f"could not apply target {target}: {exc}"})

    do_POST = do_PUT  # noqa: N815 - http.server's name

    def _body(self) -> bytes:
        """The complete body announced by one valid Content-Length, or BadRequest: never a partial one."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise BadRequest(400, "Transfer-Encoding is not supported; send a Content-Length")
        values = self.headers.get_all("Content-Length") or []
        if len(values) != 1:
            raise BadRequest(400, "exactly one Content-Length header is required")
        if not _CONTENT_LENGTH.fullmatch(values[0]):
            raise BadRequest(400, f"Content-Length {values[0][:20]!r} is not a non-negative integer")
        length = int(values[0])
        if length > MAX_BODY_BYTES:
            raise BadRequest(413, f"body of {length} bytes is over the limit of {MAX_BODY_BYTES}")
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            raise BadRequest(408, f"body not received within {self.timeout:g} s") from None
        if len(body) != length:
            raise BadRequest(400, f"body has {len(body)} bytes, Content-Length announced {length}")
        return body

    def _authorized(self) -> bool:
        if self.routes.token is None:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {self.routes.token}".encode()):
            return True
        self._json(401, {"error": "missing or wrong bearer token"})
        return False

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        send_json_error(self, code, message)

    def _json(self, code: int, payload: dict[str, Any]) -> None:
        self._send(code, json.dumps(payload).encode(), "application/json")

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        send_body(self, code, body, content_type)


def make_handler(
    routes: Routes, *, read_timeout_s: float = READ_TIMEOUT_S, exchange_deadline_s: float = EXCHANGE_DEADLINE_S
) -> type[BaseHTTPRequestHandler]:
    attributes = {"routes": routes, "timeout": read_timeout_s, "exchange_deadline_s": exchange_deadline_s}
    return type("Handler", (AgentHandler,), attributes)


def serve(
    routes: Routes,
    host: str,
    port: int,
    *,
    max_connections: int = MAX_CONNECTIONS,
    read_timeout_s: float = READ_TIMEOUT_S,
    exchange_deadline_s: float = EXCHANGE_DEADLINE_S,
) -> ThreadingHTTPServer:
    """Start serving on a daemon thread; port 0 picks a free port (see `server.server_port`)."""
    handler = make_handler(routes, read_timeout_s=read_timeout_s, exchange_deadline_s=exchange_deadline_s)
    return start(BoundedHTTPServer((host, port), handler, max_connections=max_connections), "daedalus-agent-http")
