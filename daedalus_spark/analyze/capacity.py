"""Analyze: per-executor throughput/utilization regressions turned into capacity per scale-out, skew included (§3.1),
guarded against what a live Spark job feeds them: joining executors, stalls, untrusted fits and swings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from daedalus_spark.analyze.batches import BatchEconomics, BatchFit
from daedalus_spark.analyze.capacity_samples import (
    FITTED_METHODS,
    executor_rows,
    job_throughput_per_s,
    load_shares,
    plausible_samples,
    running_max,
    sample_times,
    saturation_point_per_s,
)
from daedalus_spark.analyze.capacity_state import STATE_VERSION, read_state
from daedalus_spark.analyze.partitions import PartitionKey, busiest_shares, even_weights
from daedalus_spark.analyze.stats import OnlineRegression
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import CapacityTable, ExecutorCapacity, Observation

# Spark executor ids are never reused, so an executor unseen this long is gone for good.
FORGET_EXECUTOR_AFTER_S = 3600.0
# Each tick moves the learned partition shares this far toward the window's (about 10 ticks of memory).
PARTITION_SHARE_LEARNING_RATIO = 0.1
# Each backlog window moves the floor this far toward its throughput: records of a batch that finished late
# arrive as one burst, so no single window sets it.
BACKLOG_FLOOR_LEARNING_RATIO = 0.3
# A window's batches that read records within this share of the arrival rate kept up, whatever lag the job held.
KEPT_UP_RATIO = 0.15
# What a table's current capacity rests on when the job was saturated: here, or at another scale-out in proportion.
SATURATED_BASES = ("backlog", "scaled_backlog")
# Below this a backlog's busiest executor is not the job's limit (the driver or the source is): nothing learned.
MIN_SATURATED_UTILIZATION_RATIO = 0.1
# A sample this close to the fit (relative) is never an outlier, however tight the fit's residuals are.
_MIN_RESIDUAL_RATIO = 0.05
_FORGOTTEN_SHARE = 1e-6


def _toward(old: float | None, new: float) -> float:
    """A running mean of backlog windows: `new` first, then each window moves it BACKLOG_FLOOR_LEARNING_RATIO of the
    way."""
    return new if old is None else old + BACKLOG_FLOOR_LEARNING_RATIO * (new - old)


@dataclass
class CapacityModel:
    """What the loop has learned about capacity: one regression per executor, capacities seen per scale-out, the
    job's own evidence (backlog floors, per-batch economics) and the previous table, which bounds the next one."""

    config: CapacityConfig
    regressions: dict[str, OnlineRegression] = field(default_factory=dict)
    pooled: OnlineRegression = field(default_factory=OnlineRegression)  # every executor's samples together
    last_seen_s: dict[str, float] = field(default_factory=dict)
    # When each executor first read records; an executor is learned from `executor_warmup_s` after that.
    active_since_s: dict[str, float] = field(default_factory=dict)
    observed_per_scaleout: dict[int, float] = field(default_factory=dict)
    partition_shares: dict[PartitionKey, float] = field(default_factory=dict)  # of the source's records
    backlog_floor_per_scaleout: dict[int, float] = field(default_factory=dict)  # catch-up throughput seen
    # What the job did in windows behind from start to end (saturated throughout) at a settled scale-out: what that
    # scale-out carries. A window that only ends behind may have kept up for most of it (a live demo's 1-executor
    # window read 459 lines/s with a micro-batch's usual 8 s of lag) and feeds the backlog floor only.
    saturated_per_scaleout: dict[int, float] = field(default_factory=dict)
    # The highest arrival rate of a window in which the job kept up: it can certainly carry that much.
    kept_up_per_scaleout: dict[int, float] = field(default_factory=dict)
    # The busiest executor's utilization while a backlog waited at a settled scale-out: what saturated reads here.
    # A micro-batch job never reaches a busy fraction of 1 (its executors wait on the driver between stages and
    # batches); reading the regression at 1 put a live demo's capacity at 2.2x what it carried.
    saturated_utilization_ratio: float | None = None
    batches: BatchEconomics = field(default_factory=BatchEconomics)
    last_per_scaleout: tuple[float, ...] = ()  # the previous table's sizing capacities
    unconfirmed: tuple[int, int] = (0, 0)  # (direction, ticks) of a change beyond the bound not yet believed
    # The scale-out of the last window and since when it has held: batches right after a rescale (joins stalling the
    # batch, a killed executor's tasks retried) say nothing about the new scale-out's economics.
    scaleout_since: tuple[int, float] = (0, 0.0)
    # This tick's findings, between `learn` and `table` (not knowledge: each tick sets them again).
    _backlog_now_per_s: float | None = field(default=None, repr=False)
    _trusted_now: bool = field(default=False, repr=False)
    _behind_now: bool = field(default=False, repr=False)  # this window ends with a backlog, settled or not
    # and so did the previous one, and its batches did not keep up with the arrivals: saturated throughout
    _behind_throughout: bool = field(default=False, repr=False)
    # The window's plausible samples and their throughputs per executor (`_samples_of`).
    _window: tuple[Observation, dict[str, list[tuple[int, float, float, float]]], dict[str, list[float]]] | None = (
        field(default=None, repr=False, compare=False)
    )

    def __post_init__(self) -> None:
        self.batches.min_points = self.config.min_points
        self.batches.min_correlation_ratio = self.config.min_correlation_ratio

    def learn(self, observation: Observation, *, skip_first: int = 0) -> int:
        """Feed every plausible sample of settled executors after the first `skip_first` ones (job warm-up);
        returns how many were learned from."""
        self._learn_partition_shares(observation)
        times = sample_times(observation)
        if not self.last_seen_s:  # the first look: executors already running are settled
            for w in observation.executor_ids:
                self.active_since_s.setdefault(w, times[0] - self.config.executor_warmup_s)
        # Working off a backlog, batches grow and records per CPU-second rise: catch-up, not steady state. Those
        # windows feed the backlog floor, not the regressions that size the job. Batches that read as fast as the
        # records arrived kept up, whatever lag they held: a live demo's 2 executors held 10 s of lag in 4-5-s batches
        # on a rising load, and their 815/s, taken for a backlog worked off, cut their capacity from 2,650 to 1,022/s.
        backlog = self._backlog(observation) and not self._batches_kept_up(observation)
        self._behind_throughout = backlog and self._behind_now
        self._behind_now = backlog
        learned: list[tuple[float, float]] = []  # (utilization, throughput) of every sample learned from, in order
        for executor_id, samples in self._plausible(observation).items():
            self.last_seen_s[executor_id] = observation.time_s
            first = len(samples) if backlog else skip_first  # the samples before it only mark an executor active
            learned += self._learn_executor(executor_id, samples, first)
        self.pooled.update_all(learned)
        self._learn_job_evidence(observation, times[0], skip_first, backlog)
        self._forget_gone_executors(observation.time_s)
        return len(learned)

    def _learn_executor(
        self, executor_id: str, samples: list[tuple[int, float, float, float]], first: int
    ) -> list[tuple[float, float]]:
        """Feed the executor's plausible samples from index `first` on, past its warm-up and not stalls, to its
        regression; returns the (utilization, throughput) pairs learned from.

        The hot loop of a tick (every sample of every executor): `settled`, the stall test and `OnlineRegression.update`
        are inlined on local copies of the moments, with the same arithmetic in the same order (their calls were a
        third of a tick in `tune`). A stall is a sample far below a trusted fit: CPU busy with few records (state
        loads, retried tasks), not capacity."""
        cfg = self.config
        k, min_points, warmup = cfg.outlier_stddevs, cfg.min_points, cfg.executor_warmup_s
        min_stddev, min_correlation = cfg.min_utilization_stddev_ratio, cfg.min_correlation_ratio
        reg = self.regressions.setdefault(executor_id, OnlineRegression())
        n, mean_x, mean_y, m2_x, m2_y, c_xy = reg.n, reg.mean_x, reg.mean_y, reg.m2_x, reg.m2_y, reg.c_xy
        since = self.active_since_s.get(executor_id)
        sqrt = math.sqrt
        learned: list[tuple[float, float]] = []
        for i, t, x, y in samples:
            if since is None and y > 0:
                since = self.active_since_s[executor_id] = t
            # No records: a stalled executor (CPU busy) or an idle one; neither says what it can carry.
            if i < first or y <= 0 or since is None or not t - since >= warmup:
                continue
            x = 1.0 if x > 1.0 else x  # min(x, 1.0)
            if not (k <= 0 or n < min_points or m2_x <= 0):  # m2_x 0: slope 0, never trusted
                slope = c_xy / m2_x
                denominator = sqrt(m2_x * m2_y)
                correlation = c_xy / denominator if denominator > 0 else 0.0
                if not (sqrt(m2_x / n) < min_stddev or slope <= 0 or correlation < min_correlation):  # trusted
                    expected = (mean_y - slope * mean_x) + slope * x
                    # max(a, b) written out as `b if b > a else a`, what max returns, without a call
                    residual_var = m2_y / n * (1.0 - correlation**2)
                    residual_sd = sqrt(0.0 if residual_var < 0.0 else residual_var)
                    least = _MIN_RESIDUAL_RATIO * abs(expected)
                    if y < expected - k * (least if least > residual_sd else residual_sd):
                        continue
            n += 1
            dx = x - mean_x
            dy = y - mean_y
            mean_x += dx / n
            mean_y += dy / n
            m2_x += dx * (x - mean_x)
            m2_y += dy * (y - mean_y)
            c_xy += dx * (y - mean_y)
            learned.append((x, y))
        reg.n, reg.mean_x, reg.mean_y, reg.m2_x, reg.m2_y, reg.c_xy = n, mean_x, mean_y, m2_x, m2_y, c_xy
        return learned

    def _plausible(self, observation: Observation) -> dict[str, list[tuple[int, float, float, float]]]:
        """Executor id -> (index, time, utilization, throughput) of its plausible samples in this window."""
        return self._samples_of(observation)[0]

    def _current_executors(self, observation: Observation) -> dict[str, list[float]]:
        """Executor id -> its plausible throughput samples in this window (all of them, warm-up included)."""
        return self._samples_of(observation)[1]

    def _samples_of(
        self, observation: Observation
    ) -> tuple[dict[str, list[tuple[int, float, float, float]]], dict[str, list[float]]]:
        """The window's plausible samples and their throughputs per executor, found once per observation (learn and
        table read them several times a tick)."""
        if self._window is None or self._window[0] is not observation:
            times = sample_times(observation)
            plausible = {w.executor_id: plausible_samples(w, times) for w in observation.executors}
            throughputs = {w: [y for _, _, _, y in samples] for w, samples in plausible.items()}
            self._window = (observation, plausible, throughputs)
        return self._window[1], self._window[2]

    def _batches_kept_up(self, obs: Observation) -> bool:
        """The window's batches read records as fast as they arrived, within KEPT_UP_RATIO: a micro-batch job that
        keeps up, whatever lag it holds. Each batch reads what arrived while the one before ran, so with a fixed cost
        per batch the job holds a batch or two of input, which can be more than `backlog_floor_lag_s` of it (a live
        demo's one executor held 4,000-6,500 lines at 550/s; its 624/s was taken for what it carries, 1,338, and
        capped 2 and 4 executors in proportion). Saturated, the batches read slower than the arrivals (falling
        behind) or faster (working a backlog off). A batch shorter than the trigger waits for it: it reads over the
        trigger's interval. False without the window's batches."""
        batches, mean_arrivals = obs.batches, obs.mean_workload_per_s
        if batches is None or not batches.usable:
            return False
        read_per_s = batches.input_records / max(batches.duration_s, batches.batches * self.config.trigger_interval_s)
        return mean_arrivals > 0 and abs(read_per_s / mean_arrivals - 1.0) <= KEPT_UP_RATIO

    def settled(self, executor_id: str, time_s: float) -> bool:
        """Past its warm-up at `time_s`: it has read records for `executor_warmup_s`."""
        since = self.active_since_s.get(executor_id)
        return since is not None and time_s - since >= self.config.executor_warmup_s

    def _backlog(self, obs: Observation) -> bool:
        """The window ends with more lag than `backlog_floor_lag_s` seconds of the job's throughput."""
        throughput = job_throughput_per_s(self._current_executors(obs))
        lag_s = self.config.backlog_floor_lag_s
        return lag_s > 0 and throughput > 0 and obs.consumer_lag_records >= lag_s * throughput

    def _learn_job_evidence(self, obs: Observation, window_start_s: float, skip_first: int, backlog: bool) -> None:
        """Batch economics and the backlog floor, from windows at one settled scale-out only (no joins, no warm-up)."""
        self._backlog_now_per_s = None
        if self.scaleout_since[0] != obs.scaleout:
            self.scaleout_since = (obs.scaleout, obs.time_s)
            # ticks in a row confirm a change at one scale-out: one at 4 and the next at 2 are two different claims
            self.unconfirmed = (0, 0)
        held_since_s = self.scaleout_since[1] + self.config.executor_warmup_s
        settled = all(self.settled(w, window_start_s) for w in obs.executor_ids)
        if skip_first or not settled or window_start_s < held_since_s:
            return
        self.batches.learn(obs.scaleout, obs.batches)
        throughput = job_throughput_per_s(self._current_executors(obs))
        if not backlog:
            # What it carried is the arrival rate: throughput above it was a backlog worked off (one late batch's
            # records land in the next window), not a rate the job keeps up with.
            mean_arrivals = obs.mean_workload_per_s
            carried = min(throughput, mean_arrivals) if mean_arrivals > 0 else throughput
            kept_up = self.kept_up_per_scaleout.get(obs.scaleout, 0.0)
            self.kept_up_per_scaleout[obs.scaleout] = max(kept_up, carried)
            return
        self._backlog_now_per_s = throughput
        n = obs.scaleout
        self.backlog_floor_per_scaleout[n] = _toward(self.backlog_floor_per_scaleout.get(n), throughput)
        if self._behind_throughout:
            self.saturated_per_scaleout[n] = _toward(self.saturated_per_scaleout.get(n), throughput)
        means = [sum(x for _, _, x, _ in s) / len(s) for s in self._plausible(obs).values() if s]
        busiest = min(max(means, default=0.0), 1.0)
        if busiest >= MIN_SATURATED_UTILIZATION_RATIO:
            self.saturated_utilization_ratio = _toward(self.saturated_utilization_ratio, busiest)

    def _learn_partition_shares(self, observation: Observation) -> None:
        """Move the shares toward this window's; a window without a usable total leaves them as they are. A window
        with a new partition of a known topic (its partition count raised) replaces them: the busiest executor's
        share of every scale-out follows the new count at once, not ten ticks later. (A new topic fades in.)"""
        rates = {(p.topic, p.partition): p.records_per_s for p in observation.partitions}
        total = sum(rates.values())
        if not rates or not math.isfinite(total) or total <= 0:
            return
        topics = {topic for topic, _ in self.partition_shares}
        if not self.partition_shares or any(k not in self.partition_shares and k[0] in topics for k in rates):
            self.partition_shares = {key: rate / total for key, rate in rates.items()}
            return
        a = PARTITION_SHARE_LEARNING_RATIO
        # Known partitions in their order, then new ones in the observation's: a set's order would follow string
        # hashing (PYTHONHASHSEED), and so would every sum over the shares, to the last bit.
        keys = dict.fromkeys([*self.partition_shares, *rates])
        shares = {key: (1 - a) * self.partition_shares.get(key, 0.0) + a * rates.get(key, 0.0) / total for key in keys}
        # A partition no longer reported (a topic replaced) fades out and is then forgotten.
        self.partition_shares = {key: share for key, share in shares.items() if share >= _FORGOTTEN_SHARE}

    def _forget_gone_executors(self, now_s: float) -> None:
        for executor_id, seen in list(self.last_seen_s.items()):
            if now_s - seen > FORGET_EXECUTOR_AFTER_S:
                del self.last_seen_s[executor_id]
                self.regressions.pop(executor_id, None)
                self.active_since_s.pop(executor_id, None)

    def saturated_at(self, micro: bool) -> float:
        """The utilization the regressions are read at: the expected maximum, or below it what a backlog showed the
        busiest executor at. Only until the job has a batch line anywhere (`micro`, `_micro_batch`): from then on it
        is sized by its batches, and the simulated suite's regressions read at 1 come closer to what a line sizes
        (fast_cycle: 19.1 executor-hours at 1, 22.8 where the backlog showed the executors saturated at 0.76)."""
        u_max = self.config.expected_max_utilization_ratio
        if self.saturated_utilization_ratio is None or micro:
            return u_max
        return min(u_max, self.saturated_utilization_ratio)

    def own_capacity(self, executor_id: str, u_max: float | None = None) -> tuple[float, str]:
        """An executor's capacity at utilization `u_max` (`saturated_at` by default) as if it got all the load it
        could take."""
        reg = self.regressions.get(executor_id)
        u_max = self.saturated_at(self._micro_batch()) if u_max is None else u_max
        if reg is None or reg.n == 0 or reg.mean_x <= 0:
            return math.nan, "peer_mean"
        if self._trusted(reg):
            return max(reg.predict(u_max), 0.0), "regression"
        if self._trusted(self.pooled):
            # Executors share hardware: the pooled slope, through this executor's own means, keeps its own speed.
            return max(reg.mean_y + self.pooled.slope * (u_max - reg.mean_x), 0.0), "pooled"
        # Throughput / utilization underestimates when the CPU has an idle floor: a safe side to err on.
        return reg.mean_y / reg.mean_x * u_max, "ratio"

    def _trusted(self, reg: OnlineRegression) -> bool:
        return (
            reg.n >= self.config.min_points
            and math.sqrt(reg.variance_x()) >= self.config.min_utilization_stddev_ratio
            and reg.slope > 0
            and reg.correlation >= self.config.min_correlation_ratio
        )

    def table(
        self, observation: Observation, max_scaleout: int, *, target_latency_s: float | None = None
    ) -> CapacityTable | None:
        """Capacity of the current executors and of every scale-out 1..max, at the latency objective where the
        batches' line is known (else at the trigger); None when nothing is known yet.

        Call once per tick, after `learn`: a change beyond the bound counts the ticks it has held.
        """
        samples = self._current_executors(observation)
        settled = [w for w in samples if self.settled(w, observation.time_s)]
        micro = self._micro_batch()
        u_max = self.saturated_at(micro)
        owns = {w: self.own_capacity(w, u_max) for w in settled}
        shares = load_shares({w: samples[w] for w in settled}) if settled else {}
        saturation = saturation_point_per_s(owns, shares)
        if saturation is None:
            return None
        n = observation.scaleout
        # Executors still joining count as their peers will once they run: the settled ones' capacity, scaled.
        measured = saturation * self._scale_factor(len(settled), n) if len(settled) != n else saturation
        rows = executor_rows(samples, owns, shares, saturation, measured, self.regressions)
        notes: list[str] = []
        fit = self.batches.fit(n)  # this scale-out's batch line, if known
        estimate, catch_up, basis = self._job_evidence(n, fit, measured, target_latency_s, micro, notes)
        floored = self._floor_kept_below(n, fit, estimate, owns, micro, notes)
        bounded = self._bounded(n, floored, notes)
        basis = "bounded" if bounded != floored else "previous" if floored != estimate else basis
        sizing, capped = (bounded, None) if fit is not None else self._in_proportion(n, bounded, notes)
        basis = capped or basis
        # What later tables prefer to extrapolation: a micro-batch job's own batch line here, else every executor's
        # own fit (a micro-batch job's utilization is no such evidence, `_job_evidence`).
        own = fit is not None if micro else all(m in FITTED_METHODS for _, m in owns.values())
        self._trusted_now = not notes and len(settled) == n and own
        table = self._table(n, sizing, max(catch_up, sizing), rows, max_scaleout, tuple(notes))
        at_trigger = fit.steady_per_s(self.config.trigger_interval_s) if fit is not None else None
        return replace(table, current_at_trigger_per_s=at_trigger, current_basis=basis)

    def _job_evidence(
        self,
        n: int,
        fit: BatchFit | None,
        measured: float,
        target_latency_s: float | None,
        micro: bool,
        notes: list[str],
    ) -> tuple[float, float, str]:
        """(sizing, catch-up, what sized) at the current scale-out: the batches' rate at the latency objective (at the
        trigger without one) sizes where it is known; else, behind at a settled scale-out, the rate it works the backlog
        off at; else the regression floored by what the job carried and worked off. Catch-up is the best of the
        batches' back-to-back rate, the backlog floor and sizing."""
        trigger = self.config.trigger_interval_s
        steady = None
        if fit is not None:
            objective = target_latency_s if target_latency_s is not None else 0.0
            steady = fit.at_latency_per_s(trigger, objective)
        floor = self.backlog_floor_per_scaleout.get(n, 0.0)
        kept_up = self.kept_up_per_scaleout.get(n, 0.0)
        reference = self._previous(n)
        evidence = max(kept_up, floor)
        basis = "utilization"
        if fit is None and self._backlog_now_per_s is not None and self._behind_throughout:
            # Behind at a settled scale-out from the window's start to its end, without its batches' line: the job
            # works the backlog off as fast as it can, so that rate is what it carries, a ceiling as much as a floor.
            # A live demo's table kept 5,487 lines/s at 4 executors while they worked 311,000 lines of lag off at
            # 4,100. (A window that only ends behind kept up for part of it: its mean is no ceiling.)
            saturated = self.saturated_per_scaleout.get(n, floor)  # learned from this very window
            return saturated, max(saturated, floor), "backlog"
        if fit is None and micro and measured > max(reference, evidence) and reference > 0:
            # A micro-batch job's utilization regression is no evidence that this scale-out carries more than the
            # table said (its CPU carries a fixed cost per batch, and while the driver plans the next batch or a
            # backlog is worked off its executors read idle): a live demo read 45,000 lines/s at 4 executors that
            # carry 6,000, and scaled in at the peak. Without this scale-out's own batch line, what it carried and
            # worked off raise it. (The first table has no other figure: a job kept at a low load never shows more.)
            kept = max(reference, evidence)
            notes.append(
                f"capacity at {n}: {measured:.0f}/s from utilization is not evidence of a rise; {kept:.0f}/s kept"
            )
            measured, basis = kept, "previous"
        # Without the batches' line, what the job did while a backlog waited is the best floor there is: the
        # utilization regression misses a micro-batch job's fixed cost per batch. Either way the job carries what it
        # carried.
        if steady is not None:
            sizing, basis = max((steady, "batch_line"), (kept_up, "kept_up"), key=lambda c: c[0])
        else:
            sizing, basis = max((measured, basis), (kept_up, "kept_up"), (floor, "backlog_floor"), key=lambda c: c[0])
        catch_up = max(sizing, floor)
        if fit is not None:
            catch_up = max(catch_up, fit.catch_up_per_s())
        return sizing, catch_up, basis

    def _in_proportion(self, n: int, estimate: float, notes: list[str]) -> tuple[float, str | None]:
        """At most what the job did saturated (behind throughout) at another scale-out, scaled by the busiest
        executor's share of the load (`_scale_factor`): executors carry in proportion to their share, never more.
        This scale-out's own evidence (what it carried, what it worked off) stands above it; the basis when it caps,
        else None. Live, a micro-batch job's utilization regressions at a scale-out without its batch line read
        2.5-3x what the job carried there (16,554 lines/s at 4 executors that the calibration puts at 5,229, and the
        controller scaled in at the peak)."""
        shown = self.saturated_per_scaleout
        scaled = max((c * self._scale_factor(m, n) for m, c in shown.items() if m != n and c > 0), default=math.inf)
        floor = self.backlog_floor_per_scaleout.get(n, 0.0)
        own = ((self.kept_up_per_scaleout.get(n, 0.0), "kept_up"), (floor, "backlog_floor"))
        ceiling, basis = max((scaled, "scaled_backlog"), *own, key=lambda c: c[0])
        if estimate <= ceiling:
            return estimate, None
        notes.append(
            f"capacity at {n}: {estimate:.0f}/s is more than the job did saturated at another scale-out, in "
            f"proportion to the executors' share of the load, or than it carried itself; {ceiling:.0f}/s"
        )
        return ceiling, basis

    def _previous(self, n: int) -> float:
        """The previous tick's capacity at scale-out `n` (0: none yet)."""
        return self.last_per_scaleout[n - 1] if len(self.last_per_scaleout) >= n else 0.0

    def _micro_batch(self) -> bool:
        """The job's batches have a line at some scale-out: a micro-batch job. (Not from its first batches: the
        simulated suite's utilization regressions are close to the truth before any line, and holding the table's
        figure against them until a line exists cost 7-10 executor-hours on two traces of 22-33.)"""
        return any(self.batches.fit(m) is not None for m in self.batches.fits)

    def _floor_kept_below(
        self,
        n: int,
        fit: BatchFit | None,
        estimate: float,
        owns: dict[str, tuple[float, str]],
        micro: bool,
        notes: list[str],
    ) -> float:
        """The previous capacity where the estimate is only a floor below it. A job that keeps up at a scale-out whose
        batches' line is not known yet says that it carries what it carried, and a micro-batch job's utilization
        regression (its CPU carries a fixed cost per batch at any load) extrapolates from a low load to well below
        what it carries. Neither is evidence that capacity fell; a backlog worked off at a settled scale-out, or the
        batches' line at this scale-out once known, is."""
        reference = self._previous(n)
        # a backlog at a settled scale-out is evidence; one while an executor joins (a replacement) is not
        if estimate >= reference or self._backlog_now_per_s is not None or fit is not None:
            return estimate
        if not micro and bool(owns) and all(m in FITTED_METHODS for _, m in owns.values()):
            return estimate
        notes.append(f"capacity at {n}: {estimate:.0f}/s carried while keeping up is a floor; {reference:.0f}/s kept")
        return reference

    def _bounded(self, n: int, estimate: float, notes: list[str]) -> float:
        """The estimate, or the previous tick's capacity moved by at most the bound when the change lacks evidence."""
        bound = self.config.max_change_ratio
        reference = self._previous(n)
        change = estimate / reference - 1.0 if reference > 0 else 0.0
        backlog = self._backlog_now_per_s
        shown_now = max(reference, backlog or 0.0)
        if change > 0 and self._behind_now and estimate > shown_now:
            # No rise while the job is behind beyond the rate it works its backlog off at: a live demo's regression
            # rose from 17,835 to 43,791 lines/s at 4 executors within 2 ticks while 316,000 lines of lag waited, was
            # believed, and the controller scaled in at the peak.
            notes.append(
                f"capacity at {n} {reference:.0f} -> {estimate:.0f}/s: no rise while the job is behind beyond what it "
                f"works the backlog off at; {shown_now:.0f}/s kept"
            )
            estimate = shown_now
            change = estimate / reference - 1.0
        if bound <= 0 or abs(change) <= bound:
            self.unconfirmed = (0, 0)
            return estimate
        direction = 1 if change > 0 else -1
        ticks = self.unconfirmed[1] + 1 if self.unconfirmed[0] == direction else 1
        needed = self.config.change_confirm_ticks
        shown = backlog is not None and direction * (backlog - reference * (1 + direction * bound)) >= 0
        said = f"capacity at {n} {reference:.0f} -> {estimate:.0f}/s ({change:+.0%})"
        if shown or ticks >= needed:
            why = f"the job worked a backlog off at {backlog:.0f}/s" if shown else f"it held {ticks} ticks in a row"
            notes.append(f"{said}: believed, {why}")
            self.unconfirmed = (0, 0)
            return estimate
        self.unconfirmed = (direction, ticks)
        held = reference * (1 + direction * bound)
        notes.append(
            f"{said}: held at {held:.0f}/s, a change beyond {bound:.0%} needs {needed} ticks in a row "
            f"(this is {ticks}) or a backlog"
        )
        return held

    def remember(self, table: CapacityTable) -> None:
        """Keep this tick's table as the next one's reference, and the current scale-out's capacity, when every
        executor's own fit made it, so later decisions prefer it over extrapolation. A kept figure that what the job
        did saturated puts lower (here, or elsewhere in proportion) is dropped: the simulated demo kept its first
        tick's 4,460/s at 2 executors (they carry 2,230) after the job showed 2,110 there, and scaled 4 -> 2 three
        times at 2,850-3,950/s."""
        self.last_per_scaleout = table.per_scaleout_per_s
        n, kept = table.current_scaleout, self.observed_per_scaleout.get(table.current_scaleout)
        if self._trusted_now:
            self.observed_per_scaleout[n] = table.current_per_s
        elif kept is not None and table.current_basis in SATURATED_BASES and table.current_per_s < kept:
            del self.observed_per_scaleout[n]

    def _table(
        self,
        scaleout: int,
        current: float,
        catch_up: float,
        executors: tuple[ExecutorCapacity, ...],
        max_scaleout: int,
        notes: tuple[str, ...],
    ) -> CapacityTable:
        size = max(max_scaleout, scaleout)
        extrapolated = self._extrapolate(current, scaleout, size)
        sizing = [
            current if n == scaleout else self.observed_per_scaleout.get(n, extrapolated[n - 1])
            for n in range(1, size + 1)
        ]
        # More executors never carry less: Spark's locality wait hands a task to any free executor in the end.
        sizing = running_max(sizing)
        ratio = catch_up / current if current > 0 else 1.0
        catch_ups = running_max(
            [max(c * ratio, self.backlog_floor_per_scaleout.get(n, 0.0)) for n, c in enumerate(sizing, start=1)]
        )
        return CapacityTable(
            current_scaleout=scaleout,
            current_per_s=sizing[scaleout - 1],
            per_scaleout_per_s=tuple(sizing),
            observed_scaleouts=frozenset(self.observed_per_scaleout) | {scaleout},
            executors=executors,
            catch_up_per_scaleout_per_s=tuple(catch_ups),
            notes=notes,
        )

    def _busiest_shares(self, scaleouts: list[int]) -> list[float]:
        """The busiest executor's share of the load at each of `scaleouts`, from the partitions' measured shares, else
        equal shares of `partitions`, else (neither known) 1 / scaleout."""
        weights = self.partition_shares or even_weights(self.config.partitions)
        if not weights:
            return [1.0 / n for n in scaleouts]
        return busiest_shares(weights, scaleouts, self.config.partition_assignment)

    def _scale_factor(self, from_scaleout: int, to_scaleout: int) -> float:
        """Capacity at `to_scaleout` over capacity at `from_scaleout` by the busiest executor's share of the load."""
        if from_scaleout < 1:
            return 1.0
        at_from, at_to = self._busiest_shares([from_scaleout, to_scaleout])
        return at_from / at_to

    def _extrapolate(self, current: float, scaleout: int, max_scaleout: int) -> list[float]:
        """Capacity at every scale-out 1..max as if unseen: by the busiest executor's share of the partitions' load
        (their measured shares, else equal shares of `partitions`), or without either the paper's mean executor x n.

        Either way discounted by the margin: an unseen scale-out's executors may differ from the observed ones.
        """
        busiest_now, *shares = self._busiest_shares([scaleout, *range(1, max_scaleout + 1)])
        at_current = current * busiest_now * (1.0 - self.config.unobserved_margin_ratio)
        return [at_current / share for share in shares]

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "regressions": {w: r.to_state() for w, r in self.regressions.items()},
            "pooled": self.pooled.to_state(),
            "last_seen_s": self.last_seen_s,
            "active_since_s": self.active_since_s,
            "observed_per_scaleout": {str(n): c for n, c in self.observed_per_scaleout.items()},
            "partition_shares": [[t, p, share] for (t, p), share in sorted(self.partition_shares.items())],
            "backlog_floor_per_scaleout": {str(n): c for n, c in self.backlog_floor_per_scaleout.items()},
            "kept_up_per_scaleout": {str(n): c for n, c in self.kept_up_per_scaleout.items()},
            "saturated_per_scaleout": {str(n): c for n, c in self.saturated_per_scaleout.items()},
            "saturated_utilization_ratio": self.saturated_utilization_ratio,
            "batches": self.batches.to_state(),
            "last_per_scaleout": list(self.last_per_scaleout),
            "unconfirmed": list(self.unconfirmed),
            "scaleout_since": list(self.scaleout_since),
        }

    @classmethod
    def from_state(cls, config: CapacityConfig, raw: Any, where: str = "capacity") -> CapacityModel:
        """The model as `to_state` wrote it, every value checked (`Damaged` names the first bad one); versions 1
        and 2 load with what they lack empty (their executors count as settled)."""
        return cls(config, **read_state(config, raw, where))
