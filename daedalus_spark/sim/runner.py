"""Simulation: drive one policy (or the offline oracle) over a workload trace on the simulated job."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from daedalus_spark.config import Config, with_topic_partitions
from daedalus_spark.plan.schedule import lindley
from daedalus_spark.sim.job import Rescale, SimulatedJob
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.policies import Policy, StaticPolicy
from daedalus_spark.sim.skew import SimulatedCapacity, build_simulated_capacity

Progress = Callable[[int, int], None]  # (seconds done, seconds total)


@dataclass(frozen=True)
class RunResult:
    """Per-second history of one policy on one trace."""

    policy: str
    workload_per_s: np.ndarray
    scaleout: np.ndarray
    processing: np.ndarray
    processed_per_s: np.ndarray
    lag_records: np.ndarray
    latency_s: np.ndarray
    capacity_per_s: np.ndarray
    rescales: tuple[Rescale, ...]
    # a job that keeps up holds at most this many seconds of arrivals in its lag (micro-batch: per second, by scale-out)
    lag_allowance_s: float | np.ndarray = 1.0
    # the query's start where the load begins before it (kind "start", from 0 executors, in effect at its first
    # commit): the rule holds it to the recovery target as a rescale, and latency before it has recovered is excused
    start: Rescale | None = None


@dataclass(frozen=True)
class SimSetup:
    """Everything shared by the policies of one trace."""

    workload_per_s: np.ndarray
    job_model: JobModel
    config: Config
    capacity: SimulatedCapacity
    seed: int
    # Seconds whose metrics the monitor cannot read (a Prometheus outage; the load still arrives): True where blind.
    monitor_blind: np.ndarray | None = None

    @property
    def max_scaleout(self) -> int:
        return min(self.config.controller.max_scaleout, self.capacity.max_scaleout)


def make_setup(
    workload_per_s: np.ndarray,
    job_model: JobModel,
    config: Config,
    seed: int,
    *,
    sized_for_per_s: float | None = None,
    monitor_blind: np.ndarray | None = None,
) -> SimSetup:
    """The shared setup; the job is sized for the trace's peak, or for `sized_for_per_s` (a load it cannot carry);
    `monitor_blind` marks the seconds the monitor cannot read. A config that leaves max_scaleout to the topic (0)
    gets the job model's partition count, as the live controller would from its monitor."""
    if config.controller.max_scaleout == 0:
        config, _ = with_topic_partitions(config, job_model.partitions)
    max_scaleout = max(config.controller.max_scaleout, job_model.reference_scaleout, 1)
    peak = float(np.max(workload_per_s)) if len(workload_per_s) else 0.0
    peak = peak if sized_for_per_s is None else sized_for_per_s
    capacity = build_simulated_capacity(job_model, max_scaleout=max_scaleout, peak_per_s=peak)
    if monitor_blind is not None and len(monitor_blind) != len(workload_per_s):
        raise ValueError(f"monitor_blind has {len(monitor_blind)} seconds, the trace {len(workload_per_s)}")
    return SimSetup(np.asarray(workload_per_s, dtype=float), job_model, config, capacity, seed, monitor_blind)


def policy_rng(seed: int, name: str) -> np.random.Generator:
    """A stream per (seed, policy) so a policy's draws do not depend on which others run."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _cpu_signal(setup: SimSetup) -> bool:
    signal = setup.job_model.utilization_signal or setup.config.controller.utilization_signal
    return signal == "cpu"


def new_job(setup: SimSetup, *, initial_scaleout: int, rng: np.random.Generator) -> SimulatedJob:
    """The job model's engine: the continuous job (sim/job.py) or Spark's micro-batches (sim/microbatch.py)."""
    engine = SimulatedJob
    if setup.job_model.engine == "microbatch":
        from daedalus_spark.sim.microbatch import MicroBatchJob

        engine = MicroBatchJob
    job = engine(
        setup.workload_per_s,
        setup.job_model,
        setup.capacity,
        initial_scaleout=initial_scaleout,
        cpu_signal=_cpu_signal(setup),
        rng=rng,
    )
    job.monitor_blind = setup.monitor_blind
    return job


def run_policy(setup: SimSetup, policy: Policy, progress: Progress | None = None) -> RunResult:
    """Step the job to each of the policy's sync points, then apply its absolute target."""
    initial = setup.job_model.initial_scaleout or setup.config.controller.max_scaleout
    if isinstance(policy, StaticPolicy):
        initial = policy.scaleout
    fixed_start = getattr(policy, "initial_scaleout", None)  # a replayed schedule chooses its first scale-out
    if isinstance(fixed_start, int):
        initial = fixed_start
    initial = max(1, min(initial, setup.capacity.max_scaleout))
    job = new_job(setup, initial_scaleout=initial, rng=policy_rng(setup.seed, policy.name))
    total = job.duration_s
    step = policy.sync_interval_s or total
    while job.now_s < total:
        job.advance(job.now_s + step)
        if progress is not None:
            progress(job.now_s, total)
        if job.now_s < total and policy.sync_interval_s:
            target = policy.decide(job)
            if target is not None:
                job.request_scaleout(target)
    job.finish()
    return _result(policy.name, job)


def _result(name: str, job: SimulatedJob) -> RunResult:
    caps = job.capacity.job_capacity_per_s[np.maximum(job.scaleout_at, 1) - 1] * job.processing_at
    return RunResult(
        policy=name,
        workload_per_s=job.workload_per_s,
        scaleout=job.scaleout_at.copy(),
        processing=job.processing_at.copy(),
        processed_per_s=job.processed_per_s.copy(),
        lag_records=job.backlog_records.copy(),
        latency_s=job.latency_s.copy(),
        capacity_per_s=caps,
        rescales=tuple(job.rescales),
        lag_allowance_s=job.capacity.lag_allowance_s(np.maximum(job.scaleout_at, 1)),
        start=_start(job),
    )


def _start(job: SimulatedJob) -> Rescale | None:
    """The query's start as the rule judges it, where the job model has one (a job that never committed: in effect
    at the run's end)."""
    if job.model.startup is None or not len(job.scaleout_at):
        return None
    first_commit_s = min(job.reporting_since_s(), float(job.duration_s))
    return Rescale(0, 0, int(job.scaleout_at[0]), math.ceil(first_commit_s), 0.0, kind="start")


def run_oracle(setup: SimSetup) -> RunResult:
    """At every second the fewest executors whose capacity covers that second's arrivals; rescaling is free."""
    workload = setup.workload_per_s
    scaleout = setup.capacity.fewest_executors_for(workload, setup.max_scaleout).astype(np.int32)
    caps = setup.capacity.job_capacity_per_s[scaleout - 1]
    backlog = lindley(0.0, workload, caps)
    before = np.concatenate(([0.0], backlog[:-1]))
    processed = np.maximum(before + workload - backlog, 0.0)
    latency = setup.job_model.base_latency_s + backlog / np.maximum(caps, 1e-9)
    return RunResult(
        policy="oracle",
        workload_per_s=workload,
        scaleout=scaleout,
        processing=np.ones(len(workload), bool),
        processed_per_s=processed,
        lag_records=backlog,
        latency_s=latency,
        capacity_per_s=caps,
        rescales=(),
        lag_allowance_s=setup.capacity.lag_allowance_s(scaleout),
    )
