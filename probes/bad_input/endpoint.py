"""The bad-input probe's endpoints: the sidecar's /healthz and /metrics under stalled clients and malformed
requests, and the Monitor's scrape of a target that sends too much or too slowly."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bad_input.harness import Outcome


def health_under_slow_clients(clients: int) -> Callable[[Path], Outcome]:
    """`clients` connections that send half a request and stall; then /healthz, as the kubelet asks it."""

    def run(tmp: Path) -> Outcome:
        from prometheus_client import CollectorRegistry

        from daedalus_spark.runtime.health import serve_health

        server = serve_health(CollectorRegistry(), lambda: (True, {"status": "ok"}), "127.0.0.1", 0)
        port = server.server_port
        stalled = []
        try:
            for _ in range(clients):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET /metr")
                stalled.append(s)
            time.sleep(0.3)
            status = _get_status(port, "/healthz")
        finally:
            for s in stalled:
                s.close()
            server.shutdown()
            server.server_close()
        if status == 200:
            return Outcome(0, "200", "")
        return Outcome(0, "", "", f"/healthz answered {status} with {clients} stalled clients (a liveness failure)")

    return run


def answered_200(o: Outcome) -> str:
    return "" if o.out == "200" else o.note


def _get_status(port: int, path: str) -> int | str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = s.recv(64)
        return int(data.split()[1])
    except (OSError, IndexError, ValueError) as exc:
        return f"no answer ({type(exc).__name__})"


def http_request(raw: bytes, want: tuple[int, ...]) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        from prometheus_client import CollectorRegistry

        from daedalus_spark.runtime.health import serve_health

        server = serve_health(CollectorRegistry(), lambda: (True, {"status": "ok"}), "127.0.0.1", 0)
        try:
            with socket.create_connection(("127.0.0.1", server.server_port), timeout=15) as s:
                s.sendall(raw)
                s.shutdown(socket.SHUT_WR)
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
        except OSError as exc:
            return Outcome(None, "", "", f"{type(exc).__name__}")
        finally:
            server.shutdown()
            server.server_close()
        try:
            status = int(data.split()[1])
        except (IndexError, ValueError):
            return Outcome(1, "", "", f"no status line: {data[:60]!r}")
        if status in want:
            return Outcome(0 if status < 400 else 2, "", "", f"HTTP {status}")
        return Outcome(0, "", "", f"HTTP {status}, expected {want}")

    return run


class _Target(BaseHTTPRequestHandler):
    """A scrape target that misbehaves as `server.mode` says."""

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        mode = self.server.mode  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if mode == "huge":
            line = b"# HELP x y\n" + b"#" * 65535 + b"\n"
            try:
                for _ in range(64 * 1024 * 1024 // len(line)):
                    self.wfile.write(line)
            except OSError:
                pass
        elif mode == "trickle":
            try:
                for _ in range(60):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass


def scrape_target(mode: str) -> Callable[[Path], Outcome]:
    """One scrape of a target that sends 64 MB, or one byte every 0.5 s for 30 s, against timeout_s 2."""

    def run(tmp: Path) -> Outcome:
        from daedalus_spark.config import parse_config
        from daedalus_spark.monitor.port import MonitorError
        from daedalus_spark.monitor.scrape import http_fetch

        server = ThreadingHTTPServer(("127.0.0.1", 0), _Target)
        server.daemon_threads = True
        server.mode = mode  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        config = parse_config({"monitor": {"timeout_s": 2}})
        started = time.monotonic()
        try:
            body = http_fetch(url, config.monitor.timeout_s)
            outcome = Outcome(0, "", "", f"read {len(body) / 1e6:.0f} MB in {time.monotonic() - started:.1f} s")
        except MonitorError as exc:
            took = time.monotonic() - started
            outcome = Outcome(2, "", "", f"{exc} ({took:.1f} s)") if took < 2 * 2 + 1 else Outcome(0, "", "", str(exc))
        finally:
            server.shutdown()
            server.server_close()
        return outcome

    return run
