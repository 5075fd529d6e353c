"""`run` stops promptly on SIGTERM while Prometheus trickles an answer, and says where the knowledge is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.waiting import wait_until
from tests.conftest import ROOT


class _Trickle(BaseHTTPRequestHandler):
    """Answers every request one byte at a time, a byte every 50 ms, until the test ends."""

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self.server.requests += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            while not self.server.done.wait(0.05):  # type: ignore[attr-defined]
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            pass

    do_POST = do_GET  # noqa: N815 - http.server names it


@pytest.fixture
def trickling() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    server.requests = 0  # type: ignore[attr-defined]
    server.done = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.done.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "backfill_s",
    [pytest.param(0, id="during-a-tick"), pytest.param(86400, id="during-the-start-up-s-reading-of-the-past")],
)
def test_run_stops_within_seconds_of_sigterm_while_prometheus_trickles(
    tmp_path: Path, trickling, backfill_s: int
) -> None:
    url = f"http://127.0.0.1:{trickling.server_port}"
    (tmp_path / "c.yaml").write_text(
        f"controller: {{loop_interval_s: 5, backfill_s: {backfill_s}, knowledge_path: {tmp_path / 'k.sqlite'}}}\n"
        f"monitor: {{prometheus_url: '{url}', scrape_interval_s: 1, timeout_s: 60}}\n"
        "forecast: {background_refit: false}\n"
        f"runtime: {{decision_log: {tmp_path / 'd.jsonl'}, metrics_port: 0}}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "daedalus_spark", "run", "--config", str(tmp_path / "c.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    try:
        wait_until(lambda: trickling.requests > 0, "the first query to reach Prometheus", 180, interval_s=0.1)
        time.sleep(0.5)  # the tick is now waiting on the trickle, 60 s from its deadline
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
        took_s = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    assert took_s < 8.0, f"took {took_s:.1f} s to stop\n{output}"
    assert f"knowledge in {tmp_path / 'k.sqlite'}" in output and "stopped after" in output, output
    assert SqliteKnowledgeStore(tmp_path / "k.sqlite").load() is not None
