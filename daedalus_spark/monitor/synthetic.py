"""Monitor (tests, benchmarks): a synthetic job's /metrics page with known rates, and a server for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class SyntheticJob:
    """Counters grow linearly, so every rate is known exactly: workload 1,000/s over 2 partitions, executor i reads
    `throughput[i]`/s at CPU ratio `cpu[i]` of a 0.5-core quota and busy ratio `busy[i]` of 1 core."""

    throughput: tuple[float, ...] = (300.0, 700.0)
    cpu: tuple[float, ...] = (0.3, 0.7)
    busy: tuple[float, ...] = (0.25, 0.5)
    workload_per_s: float = 1000.0
    lag_records: float = 42.0
    started_s: float = 0.0
    cpu_limit_cores: float = 0.5
    extra_executor_ids: tuple[str, ...] = ()  # executors that left: a flat records counter, nothing else

    def page(self, t: float) -> str:
        up = t - self.started_s
        lines = ["# TYPE daedalus_spark_source_latest_offset gauge"]
        for p in (0, 1):
            lines.append(f'daedalus_spark_source_latest_offset{{topic="w",partition="{p}"}} '
                         f"{self.workload_per_s / 2 * up}")
        lines.append("# TYPE daedalus_spark_executor_records_processed counter")
        for i, rate in enumerate(self.throughput):
            lines.append(f'daedalus_spark_executor_records_processed_total{{executor_id="{i}"}} {rate * up}')
        for gone in self.extra_executor_ids:
            lines.append(f'daedalus_spark_executor_records_processed_total{{executor_id="{gone}"}} 12345')
        lines.append('daedalus_spark_executor_records_processed_total{executor_id="driver"} 0')
        lines.append("# TYPE daedalus_spark_executor_busy_seconds counter")
        lines += [f'daedalus_spark_executor_busy_seconds_total{{executor_id="{i}"}} {b * up}'
                  for i, b in enumerate(self.busy)]
        lines.append("# TYPE daedalus_spark_executor_cores gauge")
        lines += [f'daedalus_spark_executor_cores{{executor_id="{i}"}} 1' for i in range(len(self.busy))]
        lines.append("# TYPE daedalus_spark_executor_cpu_seconds counter")
        lines += [f'daedalus_spark_executor_cpu_seconds_total{{executor_id="{i}"}} {c * self.cpu_limit_cores * up}'
                  for i, c in enumerate(self.cpu)]
        lines.append("# TYPE daedalus_spark_executor_cpu_limit_cores gauge")
        lines += [f'daedalus_spark_executor_cpu_limit_cores{{executor_id="{i}"}} {self.cpu_limit_cores}'
                  for i in range(len(self.cpu))]
        lines += ["# TYPE daedalus_spark_lag_records gauge", f"daedalus_spark_lag_records {self.lag_records}",
                  "# TYPE daedalus_spark_executors gauge", f"daedalus_spark_executors {len(self.throughput)}",
                  "# TYPE daedalus_spark_uptime_seconds gauge", f"daedalus_spark_uptime_seconds {up}"]
        return "\n".join(lines) + "\n"


@dataclass
class Exporter:
    """Serves `page(now)` on 127.0.0.1; `page` can be swapped while running."""

    page: Callable[[], str]
    server: ThreadingHTTPServer | None = None
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Exporter:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

            def do_GET(self) -> None:  # noqa: N802
                with exporter._lock:
                    exporter.requests += 1
                body = exporter.page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}/metrics"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
