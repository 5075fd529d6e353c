"""Simulation: run the policies, the oracle and the offline optimum on one trace; collect runs and metrics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from daedalus_spark.config import Config, with_topic_partitions
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.metrics import RunMetrics, summarize
from daedalus_spark.sim.optimum import OptimumInfeasible, OptimumSchedule, run_optimum, solve_optimum
from daedalus_spark.sim.policies import OPTIMUM, ORACLE, make_policy, optimum_rescale_limit
from daedalus_spark.sim.runner import RunResult, SimSetup, make_setup, run_oracle, run_policy

PolicyProgress = Callable[[str, int, int], None]  # (policy, seconds done, seconds total)


def compress_trace(workload_per_s: np.ndarray, speedup: float) -> np.ndarray:
    """Shorten a trace by `speedup`: each new second is the mean of `speedup` old seconds (shape kept)."""
    if speedup <= 1:
        return np.asarray(workload_per_s, dtype=float)
    k = round(speedup)
    n = len(workload_per_s) // k * k
    if n == 0:
        return np.asarray([float(np.mean(workload_per_s))])
    return np.asarray(np.asarray(workload_per_s[:n], dtype=float).reshape(-1, k).mean(axis=1), dtype=float)


@dataclass(frozen=True)
class TraceEvaluation:
    """All runs on one trace, in the order asked for, with their metrics."""

    trace: str
    runs: dict[str, RunResult]
    metrics: dict[str, RunMetrics]
    capacity_per_scaleout_per_s: tuple[float, ...]
    optimum: OptimumSchedule | None = None
    optimum_note: str = ""  # why there is no optimum (infeasible), else empty

    def to_json(self) -> dict[str, object]:
        policies = {name: m.fields() for name, m in self.metrics.items()}
        out: dict[str, object] = {"trace": self.trace, "policies": policies}
        if self.optimum_note:
            out["optimum_note"] = self.optimum_note
        return out


def controller_config(config: Config, job_model: JobModel) -> Config:
    """What a deployment knows about its job, unless the config says otherwise: the simulated topic's partition
    count (controller.max_scaleout and capacity.partitions where the config leaves them at 0, as the live controller
    takes them from the monitor), how its tasks are placed (when the config does not set it) and, for a micro-batch
    job, its trigger interval (when the config leaves it at 0)."""
    config, _ = with_topic_partitions(config, job_model.partitions)  # a disagreement is the live controller's to log
    capacity = config.capacity
    update: dict[str, object] = {}
    if "partition_assignment" not in capacity.model_fields_set:
        update["partition_assignment"] = job_model.partition_assignment
    if job_model.engine == "microbatch" and getattr(capacity, "trigger_interval_s", None) == 0:
        update["trigger_interval_s"] = job_model.microbatch.trigger_s
    update = {k: v for k, v in update.items() if getattr(capacity, k) != v}
    if not update:
        return config
    return config.model_copy(update={"capacity": capacity.model_copy(update=update)})


def evaluate(
    trace: str,
    workload_per_s: np.ndarray,
    policy_names: list[str],
    *,
    job_model: JobModel,
    config: Config,
    seed: int,
    progress: PolicyProgress | None = None,
    sized_for_per_s: float | None = None,
    monitor_blind: np.ndarray | None = None,
) -> TraceEvaluation:
    config = controller_config(config, job_model)
    setup = make_setup(
        workload_per_s, job_model, config, seed, sized_for_per_s=sized_for_per_s, monitor_blind=monitor_blind
    )
    oracle = run_oracle(setup)
    # The optimum is the yardstick of every row (vs_optimum), so it is solved even when its own row is not asked for;
    # its search takes a few seconds on a 6-h trace at a 60-s loop interval.
    schedule: OptimumSchedule | None = None
    note = ""
    try:
        schedule = solve_optimum(setup)
    except OptimumInfeasible as exc:
        note = str(exc)
    optimum = run_optimum(setup, schedule) if schedule is not None else None
    runs: dict[str, RunResult] = {}
    for name in policy_names:
        if name == ORACLE:
            runs[name] = oracle
            continue
        if name == OPTIMUM:
            if optimum is not None:
                runs[name] = optimum
            continue
        if name.partition(":")[0] == OPTIMUM:
            limited = _rescale_limited(setup, name, schedule) if schedule is not None else None
            if limited is not None:
                runs[name] = run_optimum(setup, limited)
            continue
        policy = make_policy(name, config)
        hook = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
        runs[name] = run_policy(setup, policy, hook)
    oracle_wh = float(oracle.scaleout.sum()) / 3600.0
    optimum_wh = float(optimum.scaleout.sum()) / 3600.0 if optimum is not None else None
    metrics = {
        name: summarize(
            run,
            static_executors=config.controller.max_scaleout,
            oracle_executor_hours=oracle_wh,
            target_recovery_s=config.controller.target_recovery_s,
            target_latency_s=config.controller.target_latency_s,
            optimum_executor_hours=optimum_wh,
        )
        for name, run in runs.items()
    }
    caps = tuple(float(c) for c in setup.capacity.job_capacity_per_s[: setup.max_scaleout])
    return TraceEvaluation(trace, runs, metrics, caps, schedule, note)


def _rescale_limited(setup: SimSetup, name: str, unlimited: OptimumSchedule) -> OptimumSchedule | None:
    """`optimum:R`: the optimum held to at most R rescales per 20 minutes on average (None when none is found)."""
    per_20min = optimum_rescale_limit(name) or 0.0
    budget = math.floor(per_20min * len(setup.workload_per_s) / 1200.0 + 1e-9)
    if unlimited.rescales <= budget:
        return unlimited
    try:
        return solve_optimum(setup, max_rescales=budget)
    except OptimumInfeasible:
        return None
