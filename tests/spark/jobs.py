"""Shared pieces of the Spark tests: a paced generator into the local log, the live loop's config, the runtime as a
subprocess and its decision log."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from daedalus_spark.config import (
    ActuatorConfig,
    CapacityConfig,
    Config,
    ControllerConfig,
    CostAwarePlannerConfig,
    ForecastConfig,
    MonitorConfig,
    RecoveryConfig,
    RuntimeConfig,
)
from daedalus_spark.httpserve import free_port
from daedalus_spark.workloads.generator import Generator, LocalLogSink
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line

TOPIC = "words"
PARTITIONS = 2  # of the live loop's topic


def generate(log: LocalLog, seconds: int, rate: float, seed: int) -> tuple[Generator, threading.Thread]:
    pacer = Pacer(np.full(seconds, rate))
    gen = Generator(PaceKeeper(pacer), LocalLogSink(log, TOPIC, 2), wordcount_line, TOPIC, tick_s=0.1, seed=seed)
    thread = threading.Thread(target=gen.run, kwargs={"report": lambda _: None}, daemon=True)
    thread.start()
    return gen, thread


def gen_stop(thread: threading.Thread, gen: Generator) -> None:
    gen.keeper.pacer = Pacer(np.zeros(0))  # nothing more is due: run() finishes at its next tick
    thread.join(timeout=10)


def live_config(root: Path, agent_url: str, exporter_url: str | None, assignment: str = "any_core") -> Config:
    """Without a CPU exporter, utilization is the executors' Spark busy time."""
    return Config(
        controller=ControllerConfig(
            loop_interval_s=5,
            max_scaleout=2,
            target_recovery_s=40,
            # compressed like the loop: under the 30-s default one executor carries the step's high load at a
            # latency of seconds (larger batches), and the test is about a scale-out and a scale-in happening
            target_latency_s=2,
            checkpoint_interval_s=1,
            recent_rescale_window_s=20,
            # compressed like the other windows (the default 600 s outlasts the whole test)
            cost_aware=CostAwarePlannerConfig(scale_in_lookback_s=20),
            # the budget compressed like the loop and more: a fresh controller earns it from empty (3 an hour would
            # allow the first scale-in 20 minutes in; here 72 an hour, the scale-in ~75 s after the scale-out)
            max_rescales_per_hour=72,
            cooldown_s=10,
            warmup_s=5,
            utilization_signal="cpu" if exporter_url else "busy_time",
            knowledge_path=str(root / "knowledge.sqlite"),
        ),
        # the source's placement (any_core: the local log); the query's 1-s trigger lets the batches' line size the
        # job (docs/capacity.md)
        capacity=CapacityConfig(
            partitions=PARTITIONS,
            partition_assignment=assignment,  # type: ignore[arg-type]
            trigger_interval_s=1,
        ),
        forecast=ForecastConfig(
            horizon_s=60,
            resolution_s=2,
            history_window_s=300,
            min_history_s=60,
            linear_window_s=15,
            poor_forecasts_before_refit=3,
        ),
        recovery=RecoveryConfig(
            initial_downtime_scale_out_s=10,
            initial_downtime_scale_in_s=5,
            anomaly_halflife_s=10,
            stable_samples=3,
            max_recovery_s=60,
        ),
        monitor=MonitorConfig(
            scrape_urls=[f"{agent_url}/metrics", *([exporter_url] if exporter_url else [])],
            step_s=1,
            rate_window_s=3,
            timeout_s=3,
        ),
        actuator=ActuatorConfig(agent_url=agent_url, timeout_s=5, retries=2, backoff_s=0.5, confirm_timeout_s=45),
        runtime=RuntimeConfig(metrics_port=free_port(), decision_log=str(root / "decisions.jsonl")),
    )


def decisions(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the last line of a killed runtime may be cut short
    return out


class Runtime:
    """`daedalus-spark run` as a subprocess; always stopped."""

    def __init__(self, config_file: Path, log: Path, env: Mapping[str, str] = MappingProxyType({})) -> None:
        self.config_file, self.log, self.env = config_file, log, dict(os.environ, **env)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "daedalus_spark.cli", "run", "--config", str(self.config_file)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.env,
            )

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.process is None or self.process.poll() is not None:
            self._end_group()
            return None if self.process is None else self.process.returncode
        self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(timeout=10)
        self._end_group()
        return code

    def _end_group(self) -> None:
        """What the runtime started in its session (its spawned refit process and multiprocessing's resource
        tracker) ends with it: a SIGKILLed runtime cannot stop them, and they would outlive the test."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


def applied(records: list[dict[str, object]], direction: int) -> list[dict[str, object]]:
    return [
        d
        for d in records
        if (d.get("actuation") or {}).get("outcome") in ("accepted", "applied", "unconfirmed")  # type: ignore[union-attr]
        and (int(d["target"]) - int(d["current"])) * direction > 0
    ]  # type: ignore[arg-type]
