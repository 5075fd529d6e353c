"""Test doubles for the MAPE-K loop: a scripted job's Monitor, Actuator and windows (for tests and benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Decision, Observation
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import Loop, StepResult
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.tune.split import SELECT
from daedalus_spark.tune.task import WindowRow

CAPACITY = 500.0  # records/s per executor at full utilization
# Budget off: these ticks are a fresh controller's first, which a budget holds until it has earned a token.
CONFIG = parse_config(
    {"controller": {"max_scaleout": 12, "max_rescales_per_hour": 0}, "forecast": {"min_history_s": 600}}
)


def window(
    t_end: float,
    workload: ArrayLike,
    scaleout: int,
    *,
    rng: np.random.Generator,
    lag: float = 0.0,
    uptime_s: float = 1e6,
    samples: int = 60,
) -> Observation:
    """60 one-second samples of a job carrying `workload` evenly on `scaleout` executors with a 10 % idle floor."""
    load = np.asarray(workload, dtype=float) if np.ndim(workload) else np.full(samples, float(np.asarray(workload)))
    per_executor = np.minimum(load / scaleout, CAPACITY)
    executors = {}
    for i in range(scaleout):
        thr = per_executor * rng.uniform(0.97, 1.03, samples)
        util = np.clip(0.1 + 0.9 * thr / CAPACITY + rng.normal(0, 0.005, samples), 0, 1)
        executors[f"exec-{i}"] = (thr.tolist(), util.tolist())
    return Observation.of(
        time_s=t_end, workload_per_s=load.tolist(), executors=executors, consumer_lag_records=lag, uptime_s=uptime_s
    )


def step(controller: Controller, obs: Observation, t: float) -> Decision:
    """tick, then conclude as if the actuator applied every rescale (the loop's part, without a loop)."""
    decision = controller.tick(obs, t)
    applied = Actuation(decision.target_scaleout, Outcome.APPLIED) if decision.rescale else None
    return controller.conclude(decision, applied)


@dataclass
class ScriptedMonitor:
    """Serves an overloaded 4-executor job (3,000/s on 4 x 500/s) unless told to fail; records the windows asked for."""

    scaleout: int = 4
    workload_per_s: float = 3000.0
    fail_with: MonitorError | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        self.windows.append((start_s, end_s))
        if self.fail_with is not None:
            raise self.fail_with
        return window(end_s, self.workload_per_s, self.scaleout, rng=self.rng)

    def close(self) -> None:
        return None


@dataclass
class ScriptedActuator:
    """A 4-executor job whose every rescale ends in `outcome`; records the targets asked for."""

    outcome: Outcome = Outcome.APPLIED
    requested: list[int] = field(default_factory=list)

    def current(self) -> int:
        return 4

    def apply(self, target: int) -> Actuation:
        self.requested.append(target)
        return Actuation(target, self.outcome, f"scripted {self.outcome.value}")


@dataclass
class Recorder:
    """A publisher that keeps every step's result."""

    results: list[StepResult] = field(default_factory=list)

    def publish(self, result: StepResult) -> None:
        self.results.append(result)


def config_in(tmp_path: Path, **runtime: object) -> Config:
    """A sidecar's config writing its knowledge and decision log under `tmp_path`, metrics on a free port."""
    return parse_config(
        {
            # budget off: a fresh controller's first ticks would wait for their first token
            # a number for max_scaleout: ScriptedMonitor lists no partitions, so the topic's count never comes
            "controller": {
                "loop_interval_s": 5,
                "knowledge_path": str(tmp_path / "k.sqlite"),
                "max_rescales_per_hour": 0,
                "max_scaleout": 12,
            },
            "forecast": {"background_refit": False},
            "runtime": {"decision_log": str(tmp_path / "decisions.jsonl"), "metrics_port": 0, **runtime},
        }
    )


TUNE_GRID = (
    "split: {holdout_s: 600, window_s: 600, lead_in_s: 0, min_window_s: 300}\nknobs:\n  controller.cooldown_s: [120]\n"
)
TUNE_TRACE = "second|count\n" + "".join(f"{i}|{1000 + i % 7}\n" for i in range(2400))  # a history of 40 minutes
TUNE_INPUTS = {"history": "h", "job": "j", "holdout_hours": 1.0, "select_hours": 1.0, "gaps": [], "candidates": 3}


def tune_row(candidate: int, part: str, wh: float, *, viol: int = 0, resc: int = 0) -> WindowRow:
    """One evaluated window of a tune candidate: `wh` executor-hours in one hour on part `part` (select or holdout)."""
    return WindowRow(
        candidate=candidate,
        window=0 if part == SELECT else 1,
        part=part,
        start_s=0,
        end_s=3600,
        hours=1.0,
        executor_hours=wh,
        avg_executors=wh,
        rescales=resc,
        recovery_violations=viol,
        behind_s=0,
        behind_episodes=0,
        violations=viol,
        latency_p95_s=1.0,
    )


SAVED_START_S = 1_700_000_000.0
SAVED_CONFIG = parse_config(
    {
        "controller": {"loop_interval_s": 5, "cooldown_s": 60, "max_scaleout": 12},
        "forecast": {"background_refit": False},
    }
)


def saved_store(tmp_path: Path) -> Path:
    """A knowledge store after three ticks of the scripted overloaded job, the first a rescale (applied)."""
    path = tmp_path / "k.sqlite"
    clock = FakeClock(SAVED_START_S)
    loop = Loop(Controller(SAVED_CONFIG), ScriptedMonitor(), ScriptedActuator(), SqliteKnowledgeStore(path), clock)
    for _ in range(3):
        loop.step()
        clock.advance(5)
    return path
