"""Monitor (one machine): start and stop a local Prometheus server with a generated scrape config."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests
import yaml

from daedalus_spark.httpserve import free_port
from daedalus_spark.waiting import wait_until

DEFAULT_BINARY = "/usr/bin/prometheus"  # Debian's package `prometheus`


def find_binary(binary: str = DEFAULT_BINARY) -> str | None:
    """The Prometheus executable, or None when it is not installed."""
    return binary if Path(binary).is_file() else shutil.which("prometheus")


def write_history(lines: Iterable[str], workdir: Path, *, timeout_s: float | None = None) -> None:
    """Timestamped OpenMetrics `lines` (ending in `# EOF`) as TSDB blocks in the data directory that
    `start_prometheus(workdir=workdir)` serves, which loads them at start: a past the Prometheus never scraped
    (`promtool tsdb create-blocks-from openmetrics`; the text is left in workdir/history.om)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        raise FileNotFoundError("no promtool on PATH (Debian: apt-get install prometheus)")
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "history.om"
    with source.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    result = subprocess.run(  # noqa: S603 - our own arguments, no shell
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(workdir / "data")],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if result.returncode != 0:
        raise RuntimeError(f"promtool could not write {source} into {workdir / 'data'}: {result.stderr.strip()}")


def render_config(targets: list[str], scrape_interval_s: float) -> str:
    """`host:port` targets are scraped at /metrics (job `daedalus`); `http://host:port/path` ones at their path
    (one job per path: Spark serves its executors' and its driver's metrics at two)."""
    interval = f"{max(1, round(scrape_interval_s * 1000))}ms"
    jobs: dict[str, list[str]] = {"/metrics": []}
    for target in targets:
        parts = urlsplit(target) if "://" in target else None
        path = parts.path if parts is not None else "/metrics"
        jobs.setdefault(path, []).append(parts.netloc if parts is not None else target)
    scrape_configs = []
    for path, hosts in jobs.items():
        job = {"job_name": "daedalus"} if path == "/metrics" else {"job_name": f"daedalus{path}", "metrics_path": path}
        scrape_configs.append({**job, "static_configs": [{"targets": hosts}]})
    return yaml.safe_dump(
        {
            "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
            "scrape_configs": scrape_configs,
        },
        sort_keys=False,
    )


@dataclass
class PrometheusServer:
    process: subprocess.Popen[bytes]
    url: str
    workdir: Path

    def stop(self) -> None:
        """Terminate, then kill after 10 s (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_tail(self, lines: int = 20) -> str:
        path = self.workdir / "prometheus.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def start_prometheus(
    targets: list[str],
    *,
    workdir: Path,
    scrape_interval_s: float = 1.0,
    binary: str = DEFAULT_BINARY,
    ready_timeout_s: float = 30.0,
    tls: tuple[Path, Path, Path] | None = None,
    port: int = 0,
) -> PrometheusServer:
    """A Prometheus scraping `targets` (host:port, path /metrics), data in `workdir`, ready when this returns; on
    `port` (0: a free one; the same port and `workdir` again: the same server restarted, its data kept).

    `tls` (certificate, key, the CA that signed it): serve HTTPS through --web.config.file."""
    executable = find_binary(binary)
    if executable is None:
        raise FileNotFoundError(f"no Prometheus binary at {binary} or on PATH (Debian: apt-get install prometheus)")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(render_config(targets, scrape_interval_s), encoding="utf-8")
    port = port or free_port()
    web = []
    if tls is not None:
        web_config = workdir / "web.yml"
        server_config = {"cert_file": str(tls[0]), "key_file": str(tls[1])}
        web_config.write_text(yaml.safe_dump({"tls_server_config": server_config}), encoding="utf-8")
        web = [f"--web.config.file={web_config}"]
    with (workdir / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own arguments, no shell
            [
                executable,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
                *web,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
    scheme = "http" if tls is None else "https"
    server = PrometheusServer(process, f"{scheme}://127.0.0.1:{port}", workdir)
    try:
        _wait_ready(server, ready_timeout_s, verify=True if tls is None else str(tls[2]))
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: PrometheusServer, timeout_s: float, *, verify: bool | str = True) -> None:
    def ready() -> bool:
        with contextlib.suppress(requests.RequestException):
            return requests.get(server.url + "/-/ready", timeout=1, verify=verify).status_code == 200
        return False

    def running() -> None:
        if server.process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {server.process.returncode}:\n{server.log_tail()}")

    try:
        wait_until(ready, "prometheus to be ready", timeout_s, interval_s=0.1, still_alive=running)
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}:\n{server.log_tail()}") from None
