"""Simulation: a Spark streaming job on Kubernetes reading from Kafka, stepped in 1-s increments (vectorized).

This is the `continuous` engine (an ideal fluid job that restarts to rescale); sim/microbatch.py is the `microbatch`
engine behind the same interface, built by the same constructor and observed by the same Observation builder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from daedalus_spark.domain import BatchWindow, ExecutorSeries, Observation, PartitionLoad
from daedalus_spark.plan.schedule import lindley
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.skew import SimulatedCapacity


@dataclass(frozen=True)
class Rescale:
    """One rescale. `restart`: processing stopped at `time_s` for `downtime_s`, then replayed `replay_records` (the
    records processed in the `checkpoint_age_s` seconds since the last checkpoint; micro-batch: the uncommitted
    batch). `in_place` (no stop, downtime 0): joining executors registered after `registration_s` and stalled
    `stall_s` in their first batch; a scale-in's killed executors' tasks were retried after `leave_s`."""

    time_s: int
    from_scaleout: int
    to_scaleout: int
    downtime_s: int
    replay_records: float
    checkpoint_age_s: int = 0
    kind: str = "restart"
    registration_s: float = 0.0
    stall_s: float = 0.0
    leave_s: float = 0.0
    retried_records: float = 0.0


class SimulatedJob:
    """The job's state and its per-second history; policies read it, `advance` moves it forward."""

    # Seconds the monitor cannot read (set by runner.new_job; None: it reads every second).
    monitor_blind: np.ndarray | None = None

    def __init__(
        self,
        workload_per_s: np.ndarray,
        model: JobModel,
        capacity: SimulatedCapacity,
        *,
        initial_scaleout: int,
        cpu_signal: bool,
        rng: np.random.Generator,
    ) -> None:
        self.workload_per_s = np.asarray(workload_per_s, dtype=float)
        self.model, self.capacity, self.cpu_signal, self._rng = model, capacity, cpu_signal, rng
        n, max_scaleout = len(self.workload_per_s), capacity.max_scaleout
        self.scaleout_at = np.zeros(n, dtype=np.int32)
        self.processing_at = np.zeros(n, dtype=bool)
        self.processed_per_s = np.zeros(n)
        self.backlog_records = np.zeros(n)
        self.latency_s = np.zeros(n)
        self.executor_throughput_per_s = np.zeros((n, max_scaleout))
        self.busy_ratio = np.zeros((n, max_scaleout))
        self.cpu_ratio = np.zeros((n, max_scaleout))
        self.rescales: list[Rescale] = []
        self.now_s = 0  # seconds simulated so far; the next second to simulate
        self.scaleout = initial_scaleout
        self.restart_end_s = 0  # processing (re)started at this second (in place: the last rescale)
        self._backlog = 0.0
        # A job that keeps up holds at most this many seconds of arrivals in its lag (metrics.recoveries)
        self.lag_allowance_s = 1.0
        self._set_up(initial_scaleout)

    def _set_up(self, initial_scaleout: int) -> None:
        """The engine's own state, set up at the end of the shared constructor (the continuous engine has none)."""
        return None

    @property
    def duration_s(self) -> int:
        return len(self.workload_per_s)

    @property
    def processing(self) -> bool:
        return self.now_s >= self.restart_end_s

    def uptime_s(self) -> float:
        return float(max(0, self.now_s - self.restart_end_s))

    def lag_records(self) -> float:
        return self._backlog

    def reporting_since_s(self) -> float:
        """Since when the job's metrics exist (the micro-batch engine: its query's first commit; inf: not yet)."""
        return 0.0

    def finish(self) -> None:
        """Called once the run is over (the micro-batch engine computes its latencies here)."""
        return None

    def request_scaleout(self, target: int) -> bool:
        """Start a rescale to `target` executors now; ignored while one is in progress or when unchanged."""
        target = max(1, min(int(target), self.capacity.max_scaleout))
        if target == self.scaleout or not self.processing or self.now_s >= self.duration_s:
            return False
        spec = self.model.downtime_scale_out if target > self.scaleout else self.model.downtime_scale_in
        downtime = round(self._rng.uniform(spec.low_s, spec.high_s))
        age = self._checkpoint_age_s()
        replay = float(self.processed_per_s[self.now_s - age : self.now_s].sum())
        self.rescales.append(Rescale(self.now_s, self.scaleout, target, downtime, replay, age))
        self._backlog += replay
        self.scaleout, self.restart_end_s = target, self.now_s + downtime
        return True

    def _checkpoint_age_s(self) -> int:
        """Seconds since the last checkpoint: uniform over the interval, since micro-batch commits are not
        aligned with the controller's ticks (and never before the last restart)."""
        interval = self.model.checkpoint_interval_s
        if interval <= 0:
            return 0
        age = int(self._rng.integers(0, int(max(1, round(interval))) + 1))
        return min(age, self.now_s - self.restart_end_s)

    def advance(self, until_s: int) -> None:
        """Simulate seconds now_s..until_s-1, splitting at the end of a downtime."""
        until_s = min(until_s, self.duration_s)
        while self.now_s < until_s:
            end = self.restart_end_s if self.now_s < self.restart_end_s else until_s
            self._segment(self.now_s, min(end, until_s))

    def _segment(self, t0: int, t1: int) -> None:
        arrivals = self.workload_per_s[t0:t1]
        processing = t0 >= self.restart_end_s
        job_cap = self.capacity.capacity(self.scaleout)
        cap = np.full(t1 - t0, job_cap if processing else 0.0)
        backlog = lindley(self._backlog, arrivals, cap)
        before = np.concatenate(([self._backlog], backlog[:-1]))
        processed = np.maximum(before + arrivals - backlog, 0.0)
        self.scaleout_at[t0:t1], self.processing_at[t0:t1] = self.scaleout, processing
        self.processed_per_s[t0:t1], self.backlog_records[t0:t1] = processed, backlog
        wait = np.arange(self.restart_end_s - t0, self.restart_end_s - t1, -1) if not processing else 0.0
        self.latency_s[t0:t1] = self.model.base_latency_s + wait + backlog / max(job_cap, 1e-9)
        self._per_executor(t0, t1, processed)
        self._backlog, self.now_s = float(backlog[-1]), t1

    def _per_executor(self, t0: int, t1: int, processed: np.ndarray) -> None:
        n = self.scaleout
        shares = self.capacity.shares(n)
        thr = processed[:, None] * shares[None, :]
        busy = np.clip(thr / self.capacity.executor_capacity_per_s[None, :n], 0.0, 1.0)
        noise = self._rng.normal(0.0, self.model.utilization_noise_ratio, size=busy.shape)
        idle = self.model.cpu_idle_ratio
        self.executor_throughput_per_s[t0:t1, :n] = thr
        self.busy_ratio[t0:t1, :n] = busy
        self.cpu_ratio[t0:t1, :n] = np.clip(idle + (1.0 - idle) * busy + noise, 0.0, 1.0)

    def observation(self, since_s: int) -> Observation:
        """What the monitor reports at now_s about seconds since_s..now_s-1, for the live executors."""
        return self._observation(max(0, since_s), self.now_s, range(self.scaleout), uptime_s=self.uptime_s())

    def _observation(
        self, t0: int, t1: int, slots: Sequence[int], *, uptime_s: float, batches: BatchWindow | None = None
    ) -> Observation:
        """Both engines' Observation of seconds t0..t1-1: the executors in `slots` (the scale-out the monitor
        sees), the partitions' shares of the mean arrival rate, and the completed batches when the engine has them."""
        signal = self.cpu_ratio if self.cpu_signal else self.busy_ratio
        executors = tuple(
            ExecutorSeries(
                executor_id=f"executor-{self._executor_number(i)}",
                throughput_per_s=tuple(self.executor_throughput_per_s[t0:t1, i].tolist()),
                utilization_ratio=tuple(signal[t0:t1, i].tolist()),
            )
            for i in slots
        )
        arriving = float(self.workload_per_s[t0:t1].mean()) if t1 > t0 else 0.0
        return Observation(
            time_s=float(t1),
            step_s=1.0,
            workload_per_s=tuple(self.workload_per_s[t0:t1].tolist()),
            executors=executors,
            consumer_lag_records=self._backlog,
            scaleout=len(slots),
            uptime_s=uptime_s,
            partitions=tuple(
                PartitionLoad(self.model.topic, p, arriving * float(w))
                for p, w in enumerate(self.capacity.partition_weights)
            ),
            batches=batches,
        )

    def _executor_number(self, slot: int) -> int:
        """The number in the id of the executor in `slot`: the slot itself (the micro-batch engine numbers every
        joining executor anew)."""
        return slot
