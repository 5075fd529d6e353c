"""Shared pieces of the Spark tests: a paced generator into the local log, the live loop's config, its decision log."""

from __future__ import annotations

import json
import threading
from pathlib import Path

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
from daedalus_spark.sparkcluster.cluster import free_port
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


def live_config(root: Path, agent_url: str, exporter_url: str, assignment: str = "any_core") -> Config:
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
            scrape_urls=[f"{agent_url}/metrics", exporter_url], step_s=1, rate_window_s=3, timeout_s=3
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
