"""Controller: one MAPE-K tick composing analyze and plan over the knowledge, with no I/O."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from daedalus_spark.analyze.forecast import RefitScheduler, WorkloadForecaster
from daedalus_spark.analyze.losses import LossWatch
from daedalus_spark.analyze.recovery_measurement import Executors, PendingRecovery
from daedalus_spark.analyze.recovery_prediction import replay_backlog_records
from daedalus_spark.analyze.restart import ApplicationWatch
from daedalus_spark.config import Config, ControllerConfig, with_topic_partitions
from daedalus_spark.domain import CapacityTable, Decision, Forecast, Observation, Reason
from daedalus_spark.evidence import Evidence, SkipEvidence
from daedalus_spark.execute.port import Actuation
from daedalus_spark.knowledge.history import forecast_record
from daedalus_spark.knowledge.state import Knowledge, KnowledgeStore, restore, snapshot
from daedalus_spark.plan.budget import RescaleBudget
from daedalus_spark.plan.horizon import planning_objective_s
from daedalus_spark.plan.port import PlanInputs, TickContext
from daedalus_spark.plan.registry import planner_named
from daedalus_spark.redact import redact

log = logging.getLogger(__name__)


class Controller:
    """`tick` decides, `conclude` records what the actuator did; the loop (sidecar and simulator) calls both."""

    def __init__(
        self, config: Config, *, knowledge: Knowledge | None = None, refits: RefitScheduler | None = None
    ) -> None:
        # `config` as given; `self.config` with the settings left to the topic set once its partition count is known
        self.configured = config
        self.config = config
        self.topic_partitions: int | None = None  # the source topic's partition count, once an observation lists it
        self.knowledge = knowledge or Knowledge.fresh(config, refits=refits)
        self._refits = refits  # a forecaster started afresh (learn_past_workload) fits through them too
        self.application = ApplicationWatch(application_id=self.knowledge.application_id)
        self.losses = LossWatch()

    @classmethod
    def resume(
        cls,
        config: Config,
        store: KnowledgeStore,
        *,
        refits: RefitScheduler | None = None,
        now_s: float | None = None,
    ) -> Controller:
        """A controller that continues from the store's knowledge (fresh if the store is empty); with `now_s`, stored
        times ahead of it are forgotten (knowledge.state.restore)."""
        saved = store.load()
        knowledge = restore(saved, config, now_s=now_s, refits=refits) if saved else None
        return cls(config, knowledge=knowledge, refits=refits)

    @property
    def latest_capacities(self) -> CapacityTable | None:
        """The capacity table the latest tick that learned one used (restored with the knowledge)."""
        return self.knowledge.history.latest_table

    def save(self, store: KnowledgeStore) -> None:
        store.save(snapshot(self.knowledge))

    def tick(self, observation: Observation, now_s: float) -> Decision:
        """Learn from the observation and decide; nothing counts as a rescale until `conclude` says it was applied."""
        return self._decide(observation, now_s)

    def skip(self, now_s: float, scaleout: int, *, problem: str, monitor_error: str) -> Decision:
        """A tick that could not observe: keep the scale-out, say why."""
        evidence = Evidence(skip=SkipEvidence(problem=problem, monitor_error=monitor_error))
        return Decision(now_s, scaleout, scaleout, Reason.SKIP_MISSING_DATA, evidence)

    def conclude(self, decision: Decision, actuation: Actuation | None = None) -> Decision:
        """Record the decision with what the actuator did; a rescale counts only once it changed the job.

        A refused or failed rescale teaches nothing: no cool-down, no recovery measurement (which would otherwise
        time a recovery that never happened and shrink the downtime estimate).
        """
        if actuation is not None:
            # The detail may quote an error that quotes a URL or a header: no secret reaches the store or the log.
            decision = replace(decision, actuation=replace(actuation, detail=redact(actuation.detail)))
        k = self.knowledge
        k.decisions.append(decision)
        if decision.rescale and actuation is not None and actuation.outcome.changed_the_job:
            self._start_rescale(decision)
        return decision

    @property
    def known_until_s(self) -> float | None:
        """The end of the latest window the knowledge learned from: the last tick that observed (a tick's time is its
        window's end), or the latest sample the capacity model took; None for a fresh knowledge."""
        k = self.knowledge
        ticks = [d.time_s for d in k.decisions if d.evidence.skip is None or not d.evidence.skip.monitor_error]
        times = ticks + list(k.capacity.last_seen_s.values())
        return max(times) if times else None

    def learn_past(self, obs: Observation) -> str:
        """Learn from a window of the job's past (monitor/backfill.py) what a tick learns from it, deciding nothing:
        the capacity model (regressions, batch line, backlog floor) and the table it remembers. The forecaster and
        the workload history learn the past's workload in stretches (`learn_past_workload`); the recovery meter
        measures this controller's own rescales and learns live only. Returns why the window is unusable ('')."""
        missing = _missing(obs)
        if missing:
            return missing
        self._follow_topic(obs)
        k, settings = self.knowledge, self.config.controller
        warmup_samples = _samples_in_warmup(obs, settings.warmup_s)
        k.capacity.learn(obs, skip_first=warmup_samples)
        if warmup_samples < len(obs.workload_per_s) and settings.max_scaleout:
            table = k.capacity.table(obs, settings.max_scaleout)
            if table is not None:
                k.capacity.remember(table)
                k.history.latest_table = table
        return ""

    def learn_past_workload(
        self,
        workload_per_s: Sequence[float],
        *,
        step_s: float,
        end_s: float,
        forecast: Literal["skip", "continue", "afresh"],
    ) -> None:
        """A contiguous stretch of the job's past workload (one sample per `step_s`, the last ending at `end_s`):
        the workload history always; the forecaster with `forecast` "continue" (the stretch follows what it
        knows) or "afresh" (a gap lies between: it starts again from this stretch, never across the gap), not with
        "skip" (an older stretch)."""
        k = self.knowledge
        if forecast == "afresh":
            k.forecaster = WorkloadForecaster(self.config.forecast, refits=self._refits)
        if forecast != "skip":
            k.forecaster.observe(workload_per_s, step_s=step_s, end_s=end_s)
        k.history.add_workload_series(
            workload_per_s, step_s=step_s, end_s=end_s, resolution_s=self.config.forecast.resolution_s
        )

    def _start_rescale(self, decision: Decision) -> None:
        k, now_s = self.knowledge, decision.time_s
        k.last_rescale_s = now_s
        direction = "out" if decision.target_scaleout > decision.current_scaleout else "in"
        chosen = decision.evidence.target  # None: the planner chose no candidate (the largest, none valid)
        k.recovery.start(
            PendingRecovery(
                rescale_time_s=now_s,
                direction=direction,
                from_scaleout=decision.current_scaleout,
                to_scaleout=decision.target_scaleout,
                predicted_recovery_s=math.inf if chosen is None else chosen.predicted_recovery_s,
                downtime_used_s=k.recovery.downtime_s(direction) if chosen is None else chosen.downtime_used_s,
            )
        )

    def _decide(self, obs: Observation, now_s: float) -> Decision:
        missing = _missing(obs)
        if missing:
            return self._hold(obs, now_s, Reason.SKIP_MISSING_DATA, SkipEvidence(problem=missing))
        self._follow_topic(obs)
        k, settings = self.knowledge, self.config.controller
        new_application = self.application.new_application(
            obs, last_rescale_s=k.last_rescale_s, restart_within_s=self._restart_within_s()
        )
        k.application_id = self.application.application_id
        if new_application:
            self._forget_old_application(obs, new_application)
        warmup_samples = _samples_in_warmup(obs, settings.warmup_s)
        k.capacity.learn(obs, skip_first=warmup_samples)
        self._measure_recovery(obs)
        k.forecaster.observe(obs.workload_per_s, step_s=obs.step_s, end_s=obs.time_s)
        k.history.add_workload(obs, self.config.forecast.resolution_s)
        if warmup_samples >= len(obs.workload_per_s):
            return self._hold(obs, now_s, Reason.SKIP_WARMUP, SkipEvidence(uptime_s=obs.uptime_s))
        last_target = self._last_applied_target()
        lost = self.losses.lost(obs, now_s=now_s, our_target=last_target, hold_s=self._replacement_within_s())
        if lost.hold:
            return self._hold(obs, now_s, Reason.SKIP_MISSING_DATA, SkipEvidence(problem=lost.hold))
        if not settings.max_scaleout:
            # Never a scale on missing data: without the partition count there is no largest scale-out to plan to.
            problem = (
                "controller.max_scaleout is the source topic's partition count, and no observation has listed the "
                "topic's partitions yet (monitor.query_partition_workload); set controller.max_scaleout to scale "
                "without it"
            )
            return self._hold(obs, now_s, Reason.WAITING_FOR_PARTITION_COUNT, SkipEvidence(problem=problem))
        # Batches sized to the plan's share of the objective: a record waits up to one batch and is processed in the
        # next, so batches of half that share keep the sawtooth within it, and the backlog the plan allows (the
        # same share) fits in the rest of the objective.
        table = k.capacity.table(obs, settings.max_scaleout, target_latency_s=planning_objective_s(settings))
        if table is None:
            return self._hold(
                obs, now_s, Reason.SKIP_MISSING_DATA, SkipEvidence(problem="no executor capacity known yet")
            )
        k.capacity.remember(table)
        k.history.latest_table = table
        forecast = k.forecaster.predict(now_s)
        k.history.add_forecast(
            forecast_record(
                now_s,
                forecast,
                arima_order=k.forecaster.arima_order,
                refits=k.forecaster.refits,
                last_wape=k.forecaster.last_wape,
                planned_per_s=provisioned_per_s(forecast, settings),
            )
        )
        decision = self._plan(obs, now_s, table, forecast, last_target)
        if decision.target_scaleout < decision.current_scaleout:
            decision = self._after_gap(decision)
        if decision.target_scaleout < decision.current_scaleout:
            decision = self._after_scale_out(decision)
        notes = table.notes + lost.notes
        return replace(decision, notes=notes + decision.notes) if notes else decision

    def _follow_topic(self, obs: Observation) -> None:
        """Take the source topic's partition count from an observation that lists the partitions: the first one, and
        again when the topic gains partitions. The settings left at 0 follow it (config.with_topic_partitions); what
        disagrees with it is logged once per count."""
        count = len({(p.topic, p.partition) for p in obs.partitions})
        if count == 0 or (self.topic_partitions is not None and count <= self.topic_partitions):
            return
        before = self.topic_partitions
        self.topic_partitions = count
        self.config, warnings = with_topic_partitions(self.configured, count)
        self.knowledge.capacity.config = self.config.capacity
        log.info(
            "source topic: %d partitions%s; controller.max_scaleout %d, capacity.partitions %d",
            count,
            "" if before is None else f" (was {before})",
            self.config.controller.max_scaleout,
            self.config.capacity.partitions,
        )
        for warning in warnings:
            log.warning("%s", warning)

    def _after_scale_out(self, decision: Decision) -> Decision:
        """A scale-in waits while the last rescale, a scale-out, is still recovering (its recovery not yet measured
        to an end, for at most controller.target_recovery_s): until then the job has not shown what the new
        scale-out carries, and its backlog is the scale-out's own stall. A live demo scaled 1 -> 3 and, 30 s later
        and mid-stall, back to 2 on a capacity at 3 read from the stalled batches; both stalls added up, and the
        lag reached 69 s of input."""
        pending = self.knowledge.recovery.pending
        if pending is None or pending.direction != "out":
            return decision
        since_s = decision.time_s - pending.rescale_time_s
        if since_s >= self.config.controller.target_recovery_s:
            return decision
        note = (
            f"a scale-in to {decision.target_scaleout} waits: the scale-out {pending.from_scaleout} -> "
            f"{pending.to_scaleout} of {since_s:.0f} s ago has not recovered yet"
        )
        return _scale_in_held(decision, Reason.SCALE_IN_DURING_RECOVERY, note)

    def _after_gap(self, decision: Decision) -> Decision:
        """A scale-in waits, after the monitor could not read the job, until the workload has been seen again for as
        long as it was not (at most one forecast horizon): the first minute after a 15-minute gap tells nothing of
        the cycle the gap hid, and a scale-in on it met a load three times higher within a minute."""
        step_s = self.config.forecast.resolution_s
        seen_s, gap_s = seen_since_gap(self.knowledge.history.workload, step_s=step_s)
        wait_s = min(gap_s, self.config.forecast.horizon_s)
        if seen_s >= wait_s:
            return decision
        note = (
            f"a scale-in to {decision.target_scaleout} waits: the workload went unseen for {gap_s:.0f} s and has been "
            f"seen again for {seen_s:.0f} s of the {wait_s:.0f} s it needs"
        )
        return _scale_in_held(decision, Reason.SCALE_IN_AFTER_GAP, note)

    def _plan(
        self, obs: Observation, now_s: float, table: CapacityTable, forecast: Forecast, last_target: int | None
    ) -> Decision:
        """The configured planner on what this tick analyzed: the shared inputs with the rescale budget built once,
        and the tick it may read more from."""
        k, settings = self.knowledge, self.config.controller
        inputs = PlanInputs(
            now_s=now_s,
            current_scaleout=obs.scaleout,
            capacities=table,
            workload_avg_per_s=sum(obs.workload_per_s) / len(obs.workload_per_s),
            replay_records=replay_backlog_records(
                obs.workload_per_s, step_s=obs.step_s, checkpoint_interval_s=settings.checkpoint_interval_s
            ),
            forecast=forecast,
            consumer_lag_records=obs.consumer_lag_records,
            last_rescale_s=k.last_rescale_s,
            downtime_scale_out_s=k.recovery.downtime_scale_out_s,
            downtime_scale_in_s=k.recovery.downtime_scale_in_s,
            warmup_scale_out_s=self.config.recovery.scale_out_warmup_s,
            warmup_capacity_ratio=self.config.recovery.scale_out_warmup_capacity_ratio,
            budget=self._rescale_budget(now_s),
            last_target=last_target,
        )
        tick = TickContext(observation=obs, config=self.config, workload_history=k.history.workload)
        return planner_named(settings.planner).plan(inputs, tick)

    def _rescale_budget(self, now_s: float) -> RescaleBudget:
        """The rescale budget now, over the rescales remembered that changed the job."""
        decisions = self.knowledge.decisions
        return RescaleBudget.at(
            [d.time_s for d in decisions if d.rescale and _changed_the_job(d)],
            now_s,
            per_hour=self.config.controller.max_rescales_per_hour,
            since_s=decisions[0].time_s if decisions else now_s,
        )

    def _forget_old_application(self, obs: Observation, why: str) -> None:
        """Drop what held only for the previous application: the recovery measurement of a rescale sent to it (the
        restart would be timed as that recovery), the cool-down from that rescale and its live count (the new one's
        executors are not losses). The capacity per executor (same job, same executor size) and the workload history
        stay true and are kept."""
        k = self.knowledge
        pending, k.recovery.pending = k.recovery.pending, None
        last_rescale_s, k.last_rescale_s = k.last_rescale_s, None
        self.losses = LossWatch()
        log.warning(
            "new application: %s at %.0f (the driver restarted); dropped %s and %s; capacity kept",
            why,
            obs.time_s,
            "the recovery measurement of its last rescale" if pending is not None else "no recovery measurement",
            f"the cool-down from the rescale at {last_rescale_s:.0f}" if last_rescale_s is not None else "no cool-down",
        )

    def _last_applied_target(self) -> int | None:
        """The scale-out our last rescale that changed the job asked for (None: none remembered)."""
        for d in reversed(self.knowledge.decisions):
            if d.rescale and _changed_the_job(d):
                return d.target_scaleout
        return None

    def _restart_within_s(self) -> float:
        """How soon after our rescale a job that restarts to rescale starts again (analyze/restart.py)."""
        recovery = self.knowledge.recovery
        longer_s = max(recovery.downtime_scale_out_s, recovery.downtime_scale_in_s)
        return 2.0 * longer_s + self.config.controller.loop_interval_s

    def _replacement_within_s(self) -> float:
        """How long lost executors may take to be replaced before the tick plans on the live count
        (analyze/losses.py): twice the learned scale-out downtime (an executor starting) and a loop interval."""
        return 2.0 * self.knowledge.recovery.downtime_scale_out_s + self.config.controller.loop_interval_s

    def _measure_recovery(self, obs: Observation) -> None:
        k = self.knowledge
        totals = [sum(col) for col in zip(*(w.throughput_per_s for w in obs.executors), strict=False)]
        n = len(obs.workload_per_s)
        behind = _behind_objective(obs, self.config.controller.target_latency_s)
        worked: set[str] = set()
        for i, (workload, throughput) in enumerate(zip(obs.workload_per_s, totals, strict=False)):
            time_s = obs.time_s - (n - 1 - i) * obs.step_s
            worked |= {
                w.executor_id for w in obs.executors if i < len(w.throughput_per_s) and w.throughput_per_s[i] > 0
            }
            if not (math.isfinite(workload) and math.isfinite(throughput)):
                continue
            executors = Executors(listed=obs.scaleout, working=len(worked))
            measured = k.recovery.feed(
                time_s, workload, throughput, step_s=obs.step_s, executors=executors, behind=behind
            )
            if measured is not None:
                k.recoveries.append(measured)

    def _hold(self, obs: Observation, now_s: float, reason: Reason, why: SkipEvidence) -> Decision:
        return Decision(now_s, obs.scaleout, obs.scaleout, reason, Evidence(skip=why))


def _behind_objective(obs: Observation, target_latency_s: float) -> bool:
    """Whether the tick's lag holds more than `target_latency_s` seconds of the tick's mean arrival rate (the
    latency the user's rule bounds; False where no arrival rate was seen)."""
    arriving = obs.mean_workload_per_s
    return arriving > 0 and obs.consumer_lag_records > target_latency_s * arriving


def _scale_in_held(decision: Decision, reason: Reason, note: str) -> Decision:
    """The scale-in `decision` held at the current scale-out for `reason`, without its target, `note` added."""
    held = replace(decision, target_scaleout=decision.current_scaleout, reason=reason, notes=(*decision.notes, note))
    return replace(held, evidence=replace(held.evidence, target=None))


def provisioned_per_s(forecast: Forecast, settings: ControllerConfig) -> tuple[float, ...]:
    """The load per forecast step the configured planner provisions for (its registry entry says)."""
    return planner_named(settings.planner).provisions(forecast, settings)


def seen_since_gap(workload: Sequence[tuple[float, float]], *, step_s: float) -> tuple[float, float]:
    """Over the workload history (step ends, oldest first, one per `step_s` where it was seen): how long the latest
    unbroken stretch has been seen, and how long the gap before it lasted (0: no gap remembered)."""
    if not workload:
        return 0.0, 0.0
    end, later = workload[-1][0], workload[-1][0]
    for t, _ in reversed(workload):
        if later - t > 1.5 * step_s:
            return end - later + step_s, later - t - step_s
        later = t
    return end - later + step_s, 0.0


def _changed_the_job(decision: Decision) -> bool:
    return decision.actuation is not None and decision.actuation.outcome.changed_the_job


def _missing(obs: Observation) -> str:
    """What makes an observation unusable for scaling ('' if nothing)."""
    if not (math.isfinite(obs.time_s) and math.isfinite(obs.step_s) and obs.step_s > 0):
        return f"time {obs.time_s} s or sample step {obs.step_s} s is not a positive finite number"
    if math.isnan(obs.uptime_s) or obs.uptime_s < 0:
        return f"uptime {obs.uptime_s} s is not a duration"
    if obs.scaleout < 1:
        return f"scale-out {obs.scaleout} is not an executor count"
    if not obs.workload_per_s:
        return "no workload samples"
    if not all(math.isfinite(x) and x >= 0 for x in obs.workload_per_s):
        return "workload has missing or negative samples"
    if not obs.executors:
        return "no executor metrics"
    if len(obs.executors) != obs.scaleout:
        # A partial view would read as missing capacity and trigger a scale-out on missing data.
        return f"metrics for {len(obs.executors)} executors but the scale-out is {obs.scaleout}"
    ragged = [w.executor_id for w in obs.executors if len(w.throughput_per_s) != len(obs.workload_per_s)]
    if ragged:
        return f"executor series not aligned with the workload's {len(obs.workload_per_s)} samples: {', '.join(ragged)}"
    if not (math.isfinite(obs.consumer_lag_records) and obs.consumer_lag_records >= 0):
        return f"consumer lag {obs.consumer_lag_records} is not a record count"
    return ""


def _samples_in_warmup(obs: Observation, warmup_s: float) -> int:
    """How many leading samples of the window overlap warm-up after the job's last (re)start.

    A sample is stamped with the end of the `step_s` it covers, so it is clean only if it starts after warm-up.
    """
    if math.isinf(obs.uptime_s):
        return 0
    n = len(obs.workload_per_s)
    warm_until_s = obs.time_s - obs.uptime_s + warmup_s
    first_start_s = obs.time_s - n * obs.step_s
    return max(0, min(n, math.ceil((warm_until_s - first_start_s) / obs.step_s)))
