"""Edge support: the HTTP plumbing the agent and the sidecar share — a bounded server, one reply, JSON errors."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Connections handled at once; more are answered 503 at once, so stalled clients cannot pile up threads without
# bound. Many: a thread costs little while its client is slow (every read and the whole exchange have deadlines),
# and with few slots a handful of slow clients took every one (16 clients trickling a byte every 9 s made the
# controller's PUT to the agent get 503 three times in a row).
MAX_CONNECTIONS = 1024


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` now (the OS's choice), for a local server a test or the demo starts."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def send_body(handler: BaseHTTPRequestHandler, code: int, body: bytes, content_type: str) -> None:
    """A complete response: status, type, length, body."""
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def send_json_error(handler: BaseHTTPRequestHandler, code: int, message: str | None) -> None:
    """http.server's errors (bad request line, header too long, timeouts) as JSON, with a status line even for a
    request that never said its version, then the connection closes."""
    handler.close_connection = True
    # A garbage request line leaves the version at HTTP/0.9, which would send the body without a status line.
    if getattr(handler, "request_version", "HTTP/0.9") == "HTTP/0.9":
        handler.request_version = "HTTP/1.0"
    reason = handler.responses.get(code, ("error",))[0]
    send_body(handler, code, json.dumps({"error": message or reason}).encode(), "application/json")


class BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most `max_connections` at once; the rest get a 503 and are closed. The listen
    backlog is as deep as the bound (socketserver's 5 reset connections of a burst before they were accepted), and a
    client that leaves, stalls past a deadline or is dropped leaves no traceback in the log."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, max_connections: int = MAX_CONNECTIONS
    ) -> None:
        self.request_queue_size = max(max_connections, 128)  # read by server_activate's listen()
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_connections)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # timeouts, resets, a shut-down socket: the client's doing
            super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _refuse_busy(request: socket.socket) -> None:
    body = b'{"error": "too many connections"}'
    try:
        request.settimeout(1.0)
        request.sendall(
            b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        request.shutdown(socket.SHUT_WR)
        # Unread request bytes make close() send a reset, which can destroy the 503 before the client reads it:
        # drain what has already arrived without waiting for more (this runs on the accepting thread).
        request.setblocking(False)
        while request.recv(65536):
            pass
    except OSError:
        pass  # nothing more has arrived, or the client is gone: closing is all that is left


def start(server: ThreadingHTTPServer, name: str) -> ThreadingHTTPServer:
    """Serve on a daemon thread named `name`; the caller shuts it down (`shutdown()`, `server_close()`)."""
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server
