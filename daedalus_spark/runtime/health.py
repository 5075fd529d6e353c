"""Runtime: the controller's HTTP endpoint — Prometheus `/metrics` and `/healthz` for probes."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Health = Callable[[], tuple[bool, dict[str, Any]]]  # (healthy, details)

# A connection costs a coroutine, not a thread: slow or stalled clients wait on the event loop without taking a slot
# the liveness probe needs. Bounds: connections at once, the request head's size, and one deadline each for reading
# the whole head and for sending the whole answer (not per read: a client trickling a byte at a time is cut off too).
MAX_CONNECTIONS = 1024
MAX_HEAD_BYTES = 16 * 1024
HEAD_DEADLINE_S = 5.0
SEND_DEADLINE_S = 10.0
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 431: "Too Large", 503: "Busy"}


class HealthServer:
    """`/metrics` and `/healthz` on an asyncio event loop in one daemon thread; `shutdown()` then `server_close()`."""

    def __init__(self, registry: CollectorRegistry, health: Health, host: str, port: int) -> None:
        self.registry, self.health = registry, health
        self._socket = socket.create_server((host, port), family=_family(host), reuse_port=False)
        self.server_port: int = self._socket.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._handlers: set[asyncio.Task[None]] = set()
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="daedalus-health", daemon=True)
        self._thread.start()
        started.wait()

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, sock=self._socket, limit=MAX_HEAD_BYTES)
        )
        started.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            for task in self._handlers:  # clients still connected are dropped, each handler ending cleanly
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*self._handlers, return_exceptions=True))
            self._loop.run_until_complete(asyncio.sleep(0))  # the transports' scheduled closes run
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    def shutdown(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def server_close(self) -> None:
        self._socket.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._handlers) >= MAX_CONNECTIONS:
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            answer = await self._answer(reader)
            if answer is not None:
                writer.write(answer)
                await asyncio.wait_for(writer.drain(), SEND_DEADLINE_S)
        except (OSError, TimeoutError):
            pass  # the client left or would not read: nothing more to do for it
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_DEADLINE_S)
        except asyncio.LimitOverrunError:
            return _response(431, {"error": f"request head over {MAX_HEAD_BYTES} bytes"})
        except (asyncio.IncompleteReadError, TimeoutError):
            return None  # closed early, or too slow: no answer is owed
        parts = head.split(b"\r\n", 1)[0].split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            return _response(400, {"error": "not an HTTP/1.x request line"})
        method, path = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return _response(405, {"error": "only GET and HEAD"}, extra=b"Allow: GET, HEAD\r\n")
        if path == b"/metrics":
            code, body, content_type = 200, generate_latest(self.registry), CONTENT_TYPE_LATEST
        elif path == b"/healthz":
            healthy, details = self.health()
            code, body, content_type = 200 if healthy else 503, _json(details), "application/json"
        else:
            return _response(404, {"error": "not found; try /metrics or /healthz"})
        return _head(code, content_type, len(body)) + (b"" if method == b"HEAD" else body)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, allow_nan=False).encode()


def _head(code: int, content_type: str, length: int, extra: bytes = b"") -> bytes:
    return (
        (
            f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n"
            "Connection: close\r\n"
        ).encode()
        + extra
        + b"\r\n"
    )


def _response(code: int, payload: dict[str, Any], extra: bytes = b"") -> bytes:
    body = _json(payload)
    return _head(code, "application/json", len(body), extra) + body


def serve_health(registry: CollectorRegistry, health: Health, host: str, port: int) -> HealthServer:
    """Serve on a daemon thread; port 0 picks a free one (`server.server_port`)."""
    return HealthServer(registry, health, host, port)
