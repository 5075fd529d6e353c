"""The MAPE-K loop step shared by the sidecar and the simulator: observe, confirm, tick, apply, conclude, save,
publish."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from daedalus_spark.clock import Clock
from daedalus_spark.controller import Controller
from daedalus_spark.domain import CapacityTable, Decision, Observation
from daedalus_spark.execute.port import (
    Actuation,
    Actuator,
    ActuatorError,
    Outcome,
    PendingTarget,
    SeesLostExecutors,
    SeesObstacles,
)
from daedalus_spark.knowledge.state import KnowledgeStore
from daedalus_spark.monitor.port import MAX_WINDOW_INTERVALS, MetricsSource, MonitorError
from daedalus_spark.redact import redact

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepResult:
    """One loop step: the decision (with what the actuator did), what the monitor saw, and where time went."""

    time_s: float
    decision: Decision
    observation: Observation | None
    monitor_error: MonitorError | None
    timings_s: dict[str, float] = field(default_factory=dict)  # monitor, confirm, tick, record, actuate, save
    store_error: str | None = None  # the knowledge could not be saved at the end of this step
    # An earlier accepted target, settled at this step: applied (seen live) or unconfirmed (not in time, unreachable,
    # superseded). It changes no decision: the rescale counted when it was accepted.
    confirmation: Actuation | None = None
    capacities: CapacityTable | None = None  # the latest capacity table learned (None: none yet)

    @property
    def actuation(self) -> Actuation | None:
        """What the actuator did at this step (None: not asked); the decision holds the one record of it."""
        return self.decision.actuation


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
    max_window_intervals: int = MAX_WINDOW_INTERVALS  # after monitor outages, observe at most this many back
    _window_end_s: float | None = None
    _last_scaleout: int = 0
    _pending: PendingTarget | None = None  # the accepted target not yet seen live
    _told_lost: set[str] = field(default_factory=set)  # lost executors already logged

    def continue_from(self, end_s: float) -> None:
        """The next window begins at `end_s`, where the start-up's backfill stopped reading: nothing learned twice."""
        self._window_end_s = end_s

    def step(self) -> StepResult:
        now_s = self.clock.now()
        timings: dict[str, float] = {}
        observation, error = self._observe(now_s, timings)
        if observation is not None and isinstance(self.actuator, SeesLostExecutors):
            observation = self._without_lost(observation, timings)
        confirmation = self._confirm(now_s, observation, timings) if self._pending is not None else None
        started = time.perf_counter()
        if observation is None:
            decision = self.controller.skip(
                now_s, self._last_scaleout, problem=redact(str(error)), monitor_error=error.kind if error else ""
            )
        else:
            self._last_scaleout = observation.scaleout
            decision = self.controller.tick(observation, now_s)
        timings["tick"] = time.perf_counter() - started
        actuation = None
        if decision.rescale:
            # Record first: a rescale the store cannot hold would leave the job changed with no trace of why.
            unrecorded = self._save(timings, "record")
            started = time.perf_counter()
            actuation = self._apply(decision) if unrecorded is None else _not_recorded(decision, unrecorded)
            timings["actuate"] = time.perf_counter() - started
            confirmation = self._await(actuation, now_s) or confirmation
        decision = self.controller.conclude(decision, actuation)
        store_error = self._save(timings, "save")
        result = StepResult(
            now_s,
            decision,
            observation,
            error,
            timings,
            store_error,
            confirmation,
            self.controller.latest_capacities,
        )
        for publisher in self.publishers:
            publisher.publish(result)
        return result

    def _save(self, timings: dict[str, float], phase: str) -> str | None:
        """Save the knowledge; what went wrong, or None (nothing to save to counts as saved)."""
        if self.store is None:
            return None
        started = time.perf_counter()
        try:
            self.controller.save(self.store)
        except (OSError, ValueError) as exc:  # KnowledgeStoreError, IncompatibleKnowledge: a line, not a traceback
            log.error("knowledge not saved: %s", exc)
            return str(exc)
        finally:
            timings[phase] = time.perf_counter() - started
        return None

    def _observe(self, now_s: float, timings: dict[str, float]) -> tuple[Observation | None, MonitorError | None]:
        interval_s = self.controller.config.controller.loop_interval_s
        start_s = window_start(now_s, self._window_end_s, interval_s, self.max_window_intervals)
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

    def _without_lost(self, observation: Observation, timings: dict[str, float]) -> Observation:
        """Drop the series of executors lost to a fault or that never ran: their collapse is not a capacity. The
        scale-out stays as observed (the driver may still count a lost executor: the controller then holds)."""
        assert isinstance(self.actuator, SeesLostExecutors)
        started = time.perf_counter()
        try:
            lost = self.actuator.lost_executors()
        except Exception:  # the port promises not to raise; a bug must not kill the loop
            log.exception("lost executors not read")
            lost = {}
        timings["pods"] = time.perf_counter() - started
        self._told_lost &= lost.keys()  # bounded by what the actuator still remembers
        dropped = [e.executor_id for e in observation.executors if e.executor_id in lost]
        for executor_id in dropped:
            if executor_id not in self._told_lost:
                self._told_lost.add(executor_id)
                log.warning("executor %s left out of capacity learning: %s", executor_id, redact(lost[executor_id]))
        if not dropped:
            return observation
        kept = tuple(e for e in observation.executors if e.executor_id not in lost)
        return replace(observation, executors=kept)

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
                redact(actuation.detail),
            )
        return actuation

    def _confirm(self, now_s: float, observation: Observation | None, timings: dict[str, float]) -> Actuation | None:
        """Whether the accepted target is live now: the actuator's count, else the monitor's scale-out."""
        assert self._pending is not None
        started = time.perf_counter()
        target = self._pending.target
        try:
            live: int | None = self.actuator.current()
        except ActuatorError as exc:
            log.debug("live executors not read from the actuator (%s); the monitor's count is used", exc)
            live = None if observation is None else observation.scaleout
        obstacle = self.actuator.obstacle(target) if live != target and isinstance(self.actuator, SeesObstacles) else ""
        verdict = self._pending.verdict(live, now_s, obstacle)
        timings["confirm"] = time.perf_counter() - started
        if verdict is not None:
            self._pending = None
            _log_confirmation(verdict)
        return verdict

    def _await(self, actuation: Actuation, now_s: float) -> Actuation | None:
        """Remember an accepted target for the next ticks; an older one still pending is superseded (reported),
        unless it is the same target sent again, whose clock keeps running."""
        if actuation.outcome is not Outcome.ACCEPTED:
            return None
        older = self._pending
        if older is not None and older.target == actuation.target:
            return None
        timeout_s = self.controller.config.actuator.confirm_timeout_s
        self._pending = PendingTarget(actuation.target, now_s, timeout_s)
        if older is None:
            return None
        superseded = older.superseded(actuation.target, now_s)
        _log_confirmation(superseded)
        return superseded


def _log_confirmation(verdict: Actuation) -> None:
    level = logging.INFO if verdict.outcome is Outcome.APPLIED else logging.WARNING
    log.log(level, "rescale to %d %s: %s", verdict.target, verdict.outcome.value, redact(verdict.detail))


def window_start(now_s: float, previous_end_s: float | None, interval_s: float, max_intervals: int) -> float:
    """Where the next window begins: at the previous one's end, at most `max_intervals` back (after monitor outages,
    or a clock stepped forward); one interval back at the first step and when the clock stepped back behind the
    previous end (the window never ends before it begins)."""
    if previous_end_s is not None and previous_end_s > now_s:
        log.warning("clock stepped back %.0f s behind the last window; observing one interval", previous_end_s - now_s)
    if previous_end_s is None or previous_end_s >= now_s:
        return now_s - interval_s
    return max(previous_end_s, now_s - max_intervals * interval_s)


def _not_recorded(decision: Decision, problem: str) -> Actuation:
    log.error(
        "rescale %d -> %d not sent: it could not be recorded first", decision.current_scaleout, decision.target_scaleout
    )
    return Actuation(decision.target_scaleout, Outcome.NOT_RECORDED, f"not sent: the knowledge store failed: {problem}")
