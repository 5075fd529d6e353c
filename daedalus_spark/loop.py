"""The MAPE-K loop step shared by the sidecar and the simulator: observe, tick, apply, conclude, save, publish."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from daedalus_spark.clock import Clock
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Decision, Observation
from daedalus_spark.execute.port import Actuation, Actuator, Outcome
from daedalus_spark.knowledge.state import KnowledgeStore
from daedalus_spark.monitor.port import MetricsSource, MonitorError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepResult:
    """One loop step: the decision (with its actuation outcome), what the monitor saw, and where time went."""

    time_s: float
    decision: Decision
    observation: Observation | None
    actuation: Actuation | None
    monitor_error: MonitorError | None
    timings_s: dict[str, float] = field(default_factory=dict)  # monitor, tick, actuate, save


class Publisher(Protocol):
    def publish(self, result: StepResult) -> None:
        """Tell the outside world (decision log, metrics, events); must not raise."""
        ...


@dataclass
class Loop:
    """One step per loop interval. The clock is the loop's: monitor window, tick time and rescale time share it."""

    controller: Controller
    monitor: MetricsSource
    actuator: Actuator
    store: KnowledgeStore | None  # None: nothing persisted (the simulator)
    clock: Clock
    publishers: Sequence[Publisher] = ()
    max_window_intervals: int = 5  # after monitor outages, observe at most this many intervals back
    _window_end_s: float | None = None
    _last_scaleout: int = 0

    def step(self) -> StepResult:
        now_s = self.clock.now()
        timings: dict[str, float] = {}
        observation, error = self._observe(now_s, timings)
        started = time.perf_counter()
        if observation is None:
            decision = self.controller.skip(
                now_s, self._last_scaleout, problem=str(error), monitor_error=error.kind if error else ""
            )
        else:
            self._last_scaleout = observation.scaleout
            decision = self.controller.tick(observation, now_s)
        timings["tick"] = time.perf_counter() - started
        started = time.perf_counter()
        actuation = self._apply(decision) if decision.rescale else None
        timings["actuate"] = time.perf_counter() - started
        decision = self.controller.conclude(decision, actuation)
        if self.store is not None:
            started = time.perf_counter()
            self.controller.save(self.store)
            timings["save"] = time.perf_counter() - started
        result = StepResult(now_s, decision, observation, actuation, error, timings)
        for publisher in self.publishers:
            publisher.publish(result)
        return result

    def _observe(self, now_s: float, timings: dict[str, float]) -> tuple[Observation | None, MonitorError | None]:
        interval_s = self.controller.config.controller.loop_interval_s
        start_s = now_s - interval_s if self._window_end_s is None else self._window_end_s
        start_s = max(start_s, now_s - self.max_window_intervals * interval_s)
        started = time.perf_counter()
        try:
            observation = self.monitor.observe(start_s=start_s, end_s=now_s)
        except MonitorError as exc:
            log.warning("tick at %.0f skipped: monitor %s: %s", now_s, exc.kind, exc)
            return None, exc
        finally:
            timings["monitor"] = time.perf_counter() - started
        self._window_end_s = now_s
        return observation, None

    def _apply(self, decision: Decision) -> Actuation:
        try:
            actuation = self.actuator.apply(decision.target_scaleout)
        except Exception as exc:  # the port promises not to raise; a bug must not kill the loop
            log.exception("actuator raised instead of reporting")
            actuation = Actuation(decision.target_scaleout, Outcome.FAILED, f"actuator raised: {exc!r}")
        if not actuation.outcome.changed_the_job and actuation.outcome is not Outcome.DRY_RUN:
            log.warning(
                "rescale %d -> %d %s: %s",
                decision.current_scaleout,
                decision.target_scaleout,
                actuation.outcome.value,
                actuation.detail,
            )
        return actuation
