"""Benchmark: the sidecar's tick time while /metrics and /healthz serve concurrent scrapers and slow clients.

    .venv/bin/python benchmarks/endpoint_load.py [--seconds 20]

The sidecar (`Sidecar.step`: the real loop, SQLite store, decision log, metrics) ticks against the scripted
overloaded job with an injected clock, back to back for `--seconds` of wall time per phase, while another process
loads its endpoint on 127.0.0.1:
  idle      no client;
  bounded   20 scrapers, each GET /metrics + GET /healthz 5 times a second (200 requests/s), 200 stalled clients
            (half a request line, then nothing) and 5 that send requests and never read the answers;
  flood     8 scrapers without pause (what the endpoint costs the tick at its worst: one process, one GIL).
Printed: tick p50/p95/max per phase, requests answered, /healthz answers by status and their p95 latency.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter

PHASES = {
    "idle": {"scrapers": 0, "rate_per_s": 0.0, "stalled": 0, "non_readers": 0},
    "bounded": {"scrapers": 20, "rate_per_s": 5.0, "stalled": 200, "non_readers": 5},
    "flood": {"scrapers": 8, "rate_per_s": 0.0, "stalled": 0, "non_readers": 0},
}


def _get(port: int, path: str) -> tuple[int, float]:
    started = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return int(data.split()[1]), time.perf_counter() - started
    except (OSError, IndexError, ValueError):
        return 0, time.perf_counter() - started


def load(port: int, spec: dict, stop: mp.Event, results: mp.Queue) -> None:  # type: ignore[valid-type]
    """The load generator, in its own process: scrapers, stalled clients, clients that never read."""
    held = []
    for _ in range(spec["stalled"]):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /metr")
        held.append(s)
    for _ in range(spec["non_readers"]):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n" * 20)
        held.append(s)
    answers: list[tuple[str, int, float]] = []
    lock = threading.Lock()

    def scraper() -> None:
        pause = 1.0 / spec["rate_per_s"] if spec["rate_per_s"] else 0.0
        while not stop.is_set():  # type: ignore[attr-defined]
            for path in ("/metrics", "/healthz"):
                status, seconds = _get(port, path)
                with lock:
                    answers.append((path, status, seconds))
            if pause:
                stop.wait(pause)  # type: ignore[attr-defined]

    threads = [threading.Thread(target=scraper, daemon=True) for _ in range(spec["scrapers"])]
    for t in threads:
        t.start()
    stop.wait()  # type: ignore[attr-defined]
    for t in threads:
        t.join(timeout=15)
    for s in held:
        s.close()
    results.put(answers)


def run_phase(name: str, seconds: float) -> dict:
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.runtime.health import serve_health
    from daedalus_spark.runtime.wiring import assemble_sidecar
    from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

    with tempfile.TemporaryDirectory() as d:
        config = parse_config(
            {
                "controller": {"loop_interval_s": 5, "knowledge_path": f"{d}/k.sqlite"},
                "forecast": {"background_refit": False},
                "runtime": {"decision_log": f"{d}/d.jsonl", "metrics_port": 0},
            }
        )
        clock = FakeClock(1_700_000_000.0)
        car = assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=clock)
        server = serve_health(car.metrics.registry, car.health, "127.0.0.1", 0)
        for _ in range(5):  # warm-up: the first fits and the store's first writes are not the steady state
            clock.advance(5)
            car.step()
        ctx = mp.get_context("spawn")
        stop, results = ctx.Event(), ctx.Queue()
        generator = ctx.Process(target=load, args=(server.server_port, PHASES[name], stop, results))
        generator.start()
        time.sleep(2.0)  # the load is up before the ticks are timed
        tick_s = []
        try:
            until = time.perf_counter() + seconds
            while time.perf_counter() < until:
                clock.advance(5)
                started = time.perf_counter()
                car.step()
                tick_s.append(time.perf_counter() - started)
        finally:
            stop.set()
            answers = results.get(timeout=60)
            generator.join(timeout=30)
            if generator.is_alive():
                generator.terminate()
            server.shutdown()
            server.server_close()
            car.close()
    health = [(status, s) for path, status, s in answers if path == "/healthz"]
    return {
        "tick_s": tick_s,
        "answered": len(answers),
        "healthz_status": Counter(status for status, _ in health),
        "healthz_s": sorted(s for _, s in health),
    }


def _q(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall seconds of ticks per phase")
    args = parser.parse_args()
    print(f"{'phase':8} {'ticks':>6} {'tick p50 ms':>11} {'p95 ms':>8} {'max ms':>8} {'answered':>9}  /healthz")
    for name in PHASES:
        r = run_phase(name, args.seconds)
        t = [1000 * s for s in r["tick_s"]]
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(r["healthz_status"].items())) or "-"
        p95 = f", p95 {1000 * _q(r['healthz_s'], 95):.1f} ms" if r["healthz_s"] else ""
        print(
            f"{name:8} {len(t):6d} {statistics.median(t):11.1f} {_q(t, 95):8.1f} {max(t):8.1f} {r['answered']:9d}  "
            f"{statuses}{p95}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
