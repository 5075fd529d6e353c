"""Simulation: run every policy and the oracle on one trace and collect their per-second runs and metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from daedalus_spark.config import Config
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.metrics import summarize
from daedalus_spark.sim.policies import ORACLE, make_policy
from daedalus_spark.sim.runner import RunResult, make_setup, run_oracle, run_policy

PolicyProgress = Callable[[str, int, int], None]  # (policy, seconds done, seconds total)


def compress_trace(workload_per_s: np.ndarray, speedup: float) -> np.ndarray:
    """Shorten a trace by `speedup`: each new second is the mean of `speedup` old seconds (shape kept)."""
    if speedup <= 1:
        return np.asarray(workload_per_s, dtype=float)
    k = int(round(speedup))
    n = len(workload_per_s) // k * k
    if n == 0:
        return np.asarray([float(np.mean(workload_per_s))])
    return np.asarray(workload_per_s[:n], dtype=float).reshape(-1, k).mean(axis=1)


@dataclass(frozen=True)
class TraceEvaluation:
    """All runs on one trace, in the order asked for, with their metrics."""

    trace: str
    runs: dict[str, RunResult]
    metrics: dict[str, dict[str, float | int]]
    capacity_per_scaleout_per_s: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        return {"trace": self.trace, "policies": self.metrics}


def controller_config(config: Config, job_model: JobModel) -> Config:
    """The controller is told the simulated topic's partition count unless the config already sets one."""
    capacity = config.capacity
    if getattr(capacity, "partitions", None) != 0:
        return config
    return config.model_copy(update={"capacity": capacity.model_copy(update={"partitions": job_model.partitions})})


def evaluate(trace: str, workload_per_s: np.ndarray, policy_names: list[str], *, job_model: JobModel,
             config: Config, seed: int, progress: PolicyProgress | None = None) -> TraceEvaluation:
    config = controller_config(config, job_model)
    setup = make_setup(workload_per_s, job_model, config, seed)
    oracle = run_oracle(setup)
    runs: dict[str, RunResult] = {}
    for name in policy_names:
        if name == ORACLE:
            runs[name] = oracle
            continue
        policy = make_policy(name, config)
        hook = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
        runs[name] = run_policy(setup, policy, hook)
    oracle_wh = float(oracle.scaleout.sum()) / 3600.0
    metrics = {
        name: summarize(run, static_workers=config.controller.max_scaleout, oracle_worker_hours=oracle_wh,
                        target_recovery_s=config.controller.target_recovery_s)
        for name, run in runs.items()
    }
    caps = tuple(float(c) for c in setup.capacity.job_capacity_per_s[: setup.max_scaleout])
    return TraceEvaluation(trace, runs, metrics, caps)
