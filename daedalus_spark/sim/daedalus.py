"""Simulation: the daedalus policy — the real loop step, with a monitor and an actuator on the simulated job."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from daedalus_spark.analyze.forecast import FitCache, InlineRefits, ModelMemo, run_fit
from daedalus_spark.clock import FakeClock
from daedalus_spark.config import Config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Decision, Observation
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.loop import Loop
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.sim.job import SimulatedJob


@dataclass
class SimulatedJobMonitor:
    """Observes the simulated job as Prometheus would have: every sample since the previous tick."""

    job: SimulatedJob | None = None

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        """The job's samples since `start_s`; seconds the monitor is blind to come back as missing workload (NaN),
        as a Prometheus outage leaves them. Before the job's first metrics (a query that has committed no batch
        reports no offsets) there are no series at all, as live."""
        assert self.job is not None and end_s == self.job.now_s
        if self.job.reporting_since_s() >= end_s:
            raise MonitorError("empty", f"the job reports no series yet in ({start_s:.0f}, {end_s:.0f}]: no batch done")
        obs = self.job.observation(int(start_s))
        blind = self.job.monitor_blind
        t0 = max(0, int(start_s))
        if blind is None or not blind[t0 : self.job.now_s].any():
            return obs
        seen = blind[t0 : t0 + len(obs.workload_per_s)]
        workload = tuple(math.nan if b else w for w, b in zip(obs.workload_per_s, seen, strict=False))
        return replace(obs, workload_per_s=workload)

    def close(self) -> None:
        return None


@dataclass
class SimulatedJobActuator:
    """Hands the target to the runner, which rescales the simulated job right after the step."""

    job: SimulatedJob | None = None
    requested: int | None = None

    def current(self) -> int:
        assert self.job is not None
        return self.job.scaleout

    def apply(self, target: int) -> Actuation:
        self.requested = target
        return Actuation(target, Outcome.APPLIED, "simulated", live=target)


@dataclass
class DaedalusPolicy:
    """One `Loop.step` per loop interval with the samples since the previous step; synchronous refits (no
    executor) keep runs deterministic. With `fits`, fits another run asked for already come from that cache (the
    same models: tune's candidates share them); with `models`, so do the ARIMA updates and forecasts another run's
    model of the same lineage made."""

    config: Config
    name: str = "daedalus"
    fits: FitCache | None = field(default=None, repr=False)
    models: ModelMemo | None = field(default=None, repr=False)
    sync_interval_s: int | None = None
    # Called on the fresh controller before its first step (a warm start: benchmarks/backfill_warm_start.py).
    warm: Callable[[Controller], None] | None = field(default=None, repr=False)
    decisions: list[Decision] = field(default_factory=list, repr=False)
    _loop: Loop | None = field(default=None, repr=False)
    _monitor: SimulatedJobMonitor = field(default_factory=SimulatedJobMonitor, repr=False)
    _actuator: SimulatedJobActuator = field(default_factory=SimulatedJobActuator, repr=False)
    _clock: FakeClock = field(default_factory=FakeClock, repr=False)

    def __post_init__(self) -> None:
        self.sync_interval_s = max(1, round(self.config.controller.loop_interval_s))

    @property
    def controller(self) -> Controller | None:
        """The controller the loop drives (None before the first decision)."""
        return self._loop.controller if self._loop is not None else None

    def decide(self, job: SimulatedJob) -> int | None:
        if self._loop is None:  # the first step comes one interval in, so its window starts at the job's start
            fit = run_fit if self.fits is None else self.fits.fit
            controller = Controller(
                self.config, refits=InlineRefits(fit if self.models is None else self.models.fitting(fit))
            )
            if self.warm is not None:
                self.warm(controller)
            self._loop = Loop(controller, self._monitor, self._actuator, store=None, clock=self._clock)
        self._monitor.job = self._actuator.job = job
        self._clock.set(float(job.now_s))
        self._actuator.requested = None
        result = self._loop.step()
        self.decisions.append(result.decision)
        return self._actuator.requested
