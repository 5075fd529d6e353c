"""Monitor (demo and tests): a real Prometheus server with a generated config, temporary storage, always stopped."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrometheusServer:
    """`with PrometheusServer(["127.0.0.1:9095"]) as p: p.url`; scrapes every `scrape_interval_s`."""

    targets: list[str]
    scrape_interval_s: float = 1.0
    port: int = field(default_factory=free_port)
    _dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="daedalus-prom-")))
    _process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> PrometheusServer:
        interval = f"{round(self.scrape_interval_s * 1000)}ms"
        config = {"global": {"scrape_interval": interval, "scrape_timeout": interval},
                  "scrape_configs": [{"job_name": "daedalus", "static_configs": [{"targets": self.targets}]}]}
        (self._dir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        log = (self._dir / "prometheus.log").open("wb")
        self._process = subprocess.Popen(
            [BINARY, f"--config.file={self._dir / 'prometheus.yml'}", f"--storage.tsdb.path={self._dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus did not become ready; log in {self._dir}")
            time.sleep(0.1)
        return self

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
