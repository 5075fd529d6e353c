"""Spark harness: start a standalone master and N workers, add and remove workers, stop all it started."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pyspark
from prometheus_client import CollectorRegistry, start_http_server
from pyspark.sql import SparkSession

from daedalus_spark.httpserve import free_port
from daedalus_spark.sparkcluster.cgroups import CpuGroup, cpu_quota_support
from daedalus_spark.sparkcluster.cpu_exporter import ExecutorCpu, ExecutorCpuCollector
from daedalus_spark.waiting import wait_until

__all__ = ["LocalCluster", "cpu_quota_support"]


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    group: CpuGroup | None
    web_url: str = ""


@dataclass
class LocalCluster:
    """`with LocalCluster(workers=2) as c: SparkSession.builder.master(c.master_url)`.

    Each (standalone) worker offers `cores_per_worker` cores and `memory_per_worker`; where cgroups allow, it gets a
    CPU quota of `cpus_per_executor`: the CPU budget of the one executor it hosts (its JVM, the worker daemon and
    their Python workers share it), exported as that executor's `daedalus_spark_executor_cpu_limit_cores`.
    """

    workers: int = 1
    cores_per_worker: int = 1
    memory_per_worker: str = "1g"
    cpus_per_executor: float = 1.0
    host: str = "127.0.0.1"
    start_timeout_s: float = 60.0
    home: str | None = None  # another Spark distribution's SPARK_HOME (default: the installed PySpark's)
    _master: subprocess.Popen[bytes] | None = None
    _workers: list[Worker] = field(default_factory=list)
    _dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="daedalus-cluster-")))
    port: int = 0
    web_port: int = 0
    _exporter: Any = None

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def spark_home(self) -> str:
        return self.home or os.path.dirname(pyspark.__file__)

    def _env(self) -> dict[str, str]:
        env = dict(
            os.environ,
            SPARK_HOME=self.spark_home,
            PYSPARK_PYTHON=sys.executable,
            SPARK_LOCAL_IP=self.host,
            SPARK_LOG_DIR=str(self._dir),
        )
        return env

    def _spawn(self, args: list[str], log: str, group: CpuGroup | None = None) -> subprocess.Popen[bytes]:
        command = [os.path.join(self.spark_home, "bin", "spark-class"), *args]
        out = open(self._dir / log, "wb")  # noqa: SIM115 - lives as long as the process
        return subprocess.Popen(  # noqa: S603 - our own arguments, no shell
            command,
            env=self._env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=group.add_self if group else None,
        )

    def start(self) -> LocalCluster:
        self.port, self.web_port = free_port(), free_port()
        atexit.register(self.stop)  # last resort if the owner never reaches its own stop()
        self._master = self._spawn(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                self.host,
                "--port",
                str(self.port),
                "--webui-port",
                str(self.web_port),
            ],
            "master.log",
        )
        try:
            self.wait_for(lambda: self.master_state() is not None, "master up")
            for _ in range(self.workers):
                self.add_worker(wait=False)  # JVMs start in parallel; then wait for all
            self.wait_for(lambda: self.alive_workers() >= self.workers, f"{self.workers} workers registered")
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, *, wait: bool = True) -> int:
        """Start one more worker and wait until the master lists it; returns its index."""
        index = len(self._workers)
        want = self.alive_workers() + 1
        group = CpuGroup.create(f"daedalus-{os.getpid()}-{id(self)}-{index}", self.cpus_per_executor)
        work = self._dir / f"work-{index}"
        work.mkdir(exist_ok=True)
        web_port = free_port()
        process = self._spawn(
            [
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host",
                self.host,
                "--cores",
                str(self.cores_per_worker),
                "--memory",
                self.memory_per_worker,
                "--webui-port",
                str(web_port),
                "--work-dir",
                str(work),
            ],
            f"worker-{index}.log",
            group,
        )
        self._workers.append(Worker(process, group, f"http://{self.host}:{web_port}"))
        if wait:
            self.wait_for(lambda: self.alive_workers() >= want, f"worker {index} registered")
        return index

    def remove_worker(self, index: int | None = None) -> None:
        """Stop one worker (the newest by default) with everything it started."""
        live = [i for i, w in enumerate(self._workers) if w.process.poll() is None]
        if not live:
            return
        self._stop_worker(self._workers[live[-1] if index is None else index])

    def live_executor_cpu(self) -> list[ExecutorCpu]:
        return [ExecutorCpu(w.web_url, w.group) for w in self._workers if w.process.poll() is None and w.group]

    def start_cpu_exporter(self, port: int = 0, app_id: str | None = None) -> str:
        """Serve the workers' cgroup CPU per executor (`daedalus_spark_executor_cpu_*`); returns the /metrics URL."""
        registry = CollectorRegistry()
        registry.register(ExecutorCpuCollector(self.live_executor_cpu, app_id))
        self._exporter, _ = start_http_server(port, addr=self.host, registry=registry)
        return f"http://{self.host}:{self._exporter.server_port}/metrics"

    def session(self, app_name: str, **conf: str) -> SparkSession:
        """A driver on this machine against the cluster: 1-core executors of 512 MB, 2 shuffle partitions, no console
        progress bar; `conf` adds or overrides Spark settings (dots as in Spark: pass them with `**{...}`)."""
        builder = SparkSession.builder.master(self.master_url).appName(app_name)
        settings = {
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.host": "127.0.0.1",
            "spark.ui.showConsoleProgress": "false",
            **conf,
        }
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    def master_state(self) -> dict[str, object] | None:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.web_port}/json/", timeout=2) as r:
                return dict(json.load(r))
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        state = self.master_state() or {}
        workers = state.get("workers", [])
        workers = workers if isinstance(workers, list) else []
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def wait_for(self, condition: Callable[[], bool], what: str, timeout_s: float | None = None) -> None:
        wait_until(condition, f"{what} (logs in {self._dir})", timeout_s or self.start_timeout_s)

    @staticmethod
    def _kill(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)

    @classmethod
    def _terminate(cls, process: subprocess.Popen[bytes]) -> None:
        """SIGTERM the process group, SIGKILL it if it has not gone within 10 s."""
        cls._kill(process)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cls._kill(process, signal.SIGKILL)
            process.wait(timeout=10)

    def _stop_worker(self, worker: Worker) -> None:
        self._terminate(worker.process)
        if worker.group is not None:
            for pid in worker.group.pids():  # executors that left the worker's session but not its cgroup
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            worker.group.remove()

    def stop(self) -> None:
        atexit.unregister(self.stop)
        if self._exporter is not None:
            self._exporter.shutdown()
            self._exporter.server_close()
            self._exporter = None
        for worker in self._workers:
            self._stop_worker(worker)
        if self._master is not None and self._master.poll() is None:
            self._terminate(self._master)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
