"""The agent's HTTP endpoint against hostile clients, over raw sockets: 4xx for malformed requests, no hangs,
a bounded number of connections, and a target applied only from a complete, valid request (no Spark needed)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from daedalus_spark.agent.server import Routes, serve

READ_TIMEOUT_S = 0.5
EXCHANGE_S = 2.0
DEADLINE_S = 10.0


@pytest.fixture
def agent() -> Iterator[tuple[int, list[int]]]:
    applied: list[int] = []
    routes = Routes(
        CollectorRegistry(),
        lambda: {"current": 1, "target": None},
        lambda t: applied.append(t) or {"current": 1, "target": t},
        1,
        8,
        None,
    )
    server = serve(
        routes, "127.0.0.1", 0, max_connections=4, read_timeout_s=READ_TIMEOUT_S, exchange_deadline_s=EXCHANGE_S
    )
    try:
        yield server.server_port, applied
    finally:
        server.shutdown()
        server.server_close()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    return sock


def _status(sock: socket.socket) -> tuple[int, dict]:
    """Read the whole reply (the server closes the connection after it) within the deadline."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body or b"{}")


def _exchange(port: int, raw: bytes) -> tuple[int, dict]:
    with _connect(port) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)  # the client is done: a short body ends here
        return _status(sock)


def _health(port: int) -> int:
    """The health probe's status, or 0 when a refusal raced the request and the kernel reset the connection."""
    try:
        return _exchange(port, b"GET /healthz HTTP/1.0\r\n\r\n")[0]
    except OSError:
        return 0


def _put(body: bytes, headers: str) -> bytes:
    return f"PUT /executors HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


MALFORMED = [
    ("no-content-length", _put(b'{"target": 2}', ""), 400),
    ("negative-length", _put(b'{"target": 2}', "Content-Length: -1\r\n"), 400),
    ("non-numeric-length", _put(b'{"target": 2}', "Content-Length: abc\r\n"), 400),
    ("signed-length", _put(b'{"target": 2}', "Content-Length: +13\r\n"), 400),
    ("fractional-length", _put(b'{"target": 2}', "Content-Length: 13.0\r\n"), 400),
    ("two-lengths", _put(b'{"target": 2}', "Content-Length: 13\r\nContent-Length: 13\r\n"), 400),
    ("huge-length", _put(b'{"target": 2}', "Content-Length: 99999999999999999999\r\n"), 400),
    ("over-limit", _put(b'{"target": 2}', "Content-Length: 5000\r\n"), 413),
    ("chunked", _put(b'd\r\n{"target": 2}\r\n0\r\n\r\n', "Transfer-Encoding: chunked\r\n"), 400),
    ("short-body-then-close", _put(b'{"target": 2}', "Content-Length: 40\r\n"), 400),
    ("deeply-nested-json", _put(b"[" * 4000, "Content-Length: 4000\r\n"), 400),
    ("nested-objects", _put(b'{"a":' * 600 + b"1" + b"}" * 600, f"Content-Length: {5 * 600 + 1 + 600}\r\n"), 400),
    ("not-utf8", _put(b"\xff\xfe", "Content-Length: 2\r\n"), 400),
    ("target-float", _put(b'{"target": 2.0}', "Content-Length: 15\r\n"), 400),
    ("target-bool", _put(b'{"target": true}', "Content-Length: 16\r\n"), 400),
    ("target-string", _put(b'{"target": "2"}', "Content-Length: 15\r\n"), 400),
    ("target-huge", _put(b'{"target": 1' + b"0" * 4000 + b"}", f"Content-Length: {4000 + 13}\r\n"), 400),
    ("nan", _put(b'{"target": NaN}', "Content-Length: 15\r\n"), 400),
    ("empty-body", _put(b"", "Content-Length: 0\r\n"), 400),
    ("garbage-request-line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
    ("header-line-too-long", b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n", 431),
]


@pytest.mark.parametrize(("raw", "code"), [(r, c) for _, r, c in MALFORMED], ids=[i for i, _, _ in MALFORMED])
def test_a_malformed_request_gets_a_4xx_and_applies_nothing(agent, raw: bytes, code: int) -> None:
    port, applied = agent
    assert _exchange(port, raw)[0] == code
    assert applied == []


def test_a_body_shorter_than_announced_times_out_and_is_not_applied(agent) -> None:
    port, applied = agent
    with _connect(port) as sock:
        sock.sendall(_put(b'{"target": 2}', "Content-Length: 40\r\n"))  # and keep the connection open
        started = time.monotonic()
        code, reply = _status(sock)
    assert code == 408 and "not received" in reply["error"]
    assert time.monotonic() - started < DEADLINE_S
    assert applied == []


def test_stalled_connections_are_dropped_after_the_read_timeout(agent) -> None:
    port, _ = agent
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # headers never finished
        started = time.monotonic()
        reply = sock.recv(100)  # the server gives up on the request line's headers and closes
        assert reply == b"" or reply.startswith(b"HTTP/1.0 408")
        assert time.monotonic() - started < DEADLINE_S


def test_a_client_trickling_inside_each_read_timeout_is_cut_off_at_the_exchange_deadline(agent) -> None:
    port, applied = agent
    with _connect(port) as sock:
        started = time.monotonic()
        cut_off = False
        for byte in _put(b'{"target": 2}', "Content-Length: 13\r\n"):  # ~7 s at a byte per 0.1 s
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut_off = True
                break
            sock.settimeout(0.1)  # each byte well inside the server's 0.5-s read timeout
            try:
                if sock.recv(100) == b"":
                    cut_off = True
                    break
            except TimeoutError:
                pass
        assert cut_off, "the trickling client kept its slot"
        assert time.monotonic() - started < EXCHANGE_S + DEADLINE_S
    assert applied == []


def test_connections_beyond_the_bound_are_refused_and_the_server_recovers(agent) -> None:
    port, applied = agent
    stalled = [_connect(port) for _ in range(4)]
    try:
        for sock in stalled:
            sock.sendall(b"PUT /executors HTTP/1.1\r\n")
        deadline = time.monotonic() + DEADLINE_S
        code = 0
        while code != 503 and time.monotonic() < deadline:  # the stalled ones hold every slot once accepted
            code = _health(port)
        assert code == 503
    finally:
        for sock in stalled:
            sock.close()
    deadline = time.monotonic() + DEADLINE_S
    while _health(port) != 200:
        assert time.monotonic() < deadline, "slots were not released"
    assert _exchange(port, _put(b'{"target": 3}', "Content-Length: 13\r\n")) == (200, {"current": 1, "target": 3})
    assert applied == [3]


def test_a_complete_valid_request_is_applied_once(agent) -> None:
    port, applied = agent
    assert _exchange(port, _put(b'{"target": 2}', "Content-Length: 13\r\n"))[0] == 200
    assert applied == [2]
