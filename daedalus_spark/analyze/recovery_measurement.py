"""Analyze: measured recovery time by anomaly detection on (workload − throughput), correcting downtimes (§3.5)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from daedalus_spark.analyze.stats import ExponentialMoments
from daedalus_spark.config import RecoveryConfig
from daedalus_spark.domain import Recovery
from daedalus_spark.untrusted import Damaged, boolean, check_version, integer, mapping, number, optional_number, text

# A rescale that shows no anomaly this long after it was seamless (e.g. executors added in place).
NO_ANOMALY_GRACE_S = 60.0
STATE_VERSION = 1
_MAX_SECONDS = 1e9  # a stored duration beyond this (~30 years) is not one we wrote
_MAX_SCALEOUT = 100_000


@dataclass(frozen=True)
class Executors:
    """The job's executors at a sample: how many are listed, and how many have processed records since the tick's
    window began."""

    listed: int
    working: int


@dataclass
class PendingRecovery:
    rescale_time_s: float
    direction: str
    from_scaleout: int
    to_scaleout: int
    predicted_recovery_s: float
    downtime_used_s: float
    anomaly_seen: bool = False
    overlapping: bool = False  # began while an earlier recovery was still under way: timed, not learned from
    normal_streak_start_s: float | None = None
    normal_streak: int = 0
    # When the rescale first stood in place: a recovery cannot end before then; None until then.
    applied_s: float | None = None

    def in_place(self, executors: Executors | None) -> bool:
        """Whether the rescale stands in place: a scale-out once the target's count of executors have processed
        records (the joining ones past registration and their first, cold tasks), a scale-in once no more than the
        target are listed. None: not known, taken as in place."""
        if executors is None:
            return True
        if self.direction == "out":
            return executors.working >= self.to_scaleout
        return executors.listed <= self.to_scaleout

    @classmethod
    def from_state(cls, raw: Any, where: str) -> PendingRecovery:
        p = mapping(raw, where)
        direction = text(p["direction"], f"{where}.direction")
        if direction not in ("out", "in"):
            raise Damaged(f"{where}.direction: {direction!r:.20} is neither 'out' nor 'in'")
        return cls(
            rescale_time_s=number(p["rescale_time_s"], f"{where}.rescale_time_s"),
            direction=direction,
            from_scaleout=integer(p["from_scaleout"], f"{where}.from_scaleout", lo=0, hi=_MAX_SCALEOUT),
            to_scaleout=integer(p["to_scaleout"], f"{where}.to_scaleout", lo=0, hi=_MAX_SCALEOUT),
            predicted_recovery_s=number(
                p["predicted_recovery_s"], f"{where}.predicted_recovery_s", lo=0.0, allow_inf=True
            ),
            downtime_used_s=number(p["downtime_used_s"], f"{where}.downtime_used_s", lo=0.0, hi=_MAX_SECONDS),
            anomaly_seen=boolean(p["anomaly_seen"], f"{where}.anomaly_seen"),
            overlapping=boolean(p["overlapping"], f"{where}.overlapping"),
            normal_streak_start_s=optional_number(p["normal_streak_start_s"], f"{where}.normal_streak_start_s"),
            normal_streak=integer(p["normal_streak"], f"{where}.normal_streak", lo=0, hi=2**53),
            applied_s=optional_number(p.get("applied_s"), f"{where}.applied_s"),  # absent in older states
        )


@dataclass
class RecoveryMeter:
    """Learns the normal gap between workload and throughput; after a rescale, times the anomaly it causes.

    The paper keeps all-time Welford moments; measured data shows the normal gap drifting with the workload's
    slope (metrics are sampled a few seconds apart), so the moments here forget with a half-life instead.
    """

    config: RecoveryConfig
    moments: ExponentialMoments = field(default_factory=lambda: ExponentialMoments(alpha=1.0))
    pending: PendingRecovery | None = None
    downtime_scale_out_s: float = -1.0
    downtime_scale_in_s: float = -1.0

    def __post_init__(self) -> None:
        if self.downtime_scale_out_s < 0:
            self.downtime_scale_out_s = self.config.initial_downtime_scale_out_s
        if self.downtime_scale_in_s < 0:
            self.downtime_scale_in_s = self.config.initial_downtime_scale_in_s

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "moments": self.moments.to_state(),
            "pending": None if self.pending is None else asdict(self.pending),
            "downtime_scale_out_s": self.downtime_scale_out_s,
            "downtime_scale_in_s": self.downtime_scale_in_s,
        }

    @classmethod
    def from_state(cls, config: RecoveryConfig, raw: Any, where: str = "recovery") -> RecoveryMeter:
        """The monitor as `to_state` wrote it, every value checked (`Damaged` names the first bad one)."""
        state = mapping(raw, where)
        check_version(state, where, STATE_VERSION)
        pending = state["pending"]
        return cls(
            config,
            moments=ExponentialMoments.from_state(state["moments"], f"{where}.moments"),
            pending=None if pending is None else PendingRecovery.from_state(pending, f"{where}.pending"),
            downtime_scale_out_s=number(
                state["downtime_scale_out_s"], f"{where}.downtime_scale_out_s", lo=-1.0, hi=_MAX_SECONDS
            ),
            downtime_scale_in_s=number(
                state["downtime_scale_in_s"], f"{where}.downtime_scale_in_s", lo=-1.0, hi=_MAX_SECONDS
            ),
        )

    def downtime_s(self, direction: str) -> float:
        return self.downtime_scale_in_s if direction == "in" else self.downtime_scale_out_s

    def start(self, pending: PendingRecovery) -> None:
        """A rescale was made: from now on, samples are timed rather than learned from."""
        if self.pending is not None and self.pending.anomaly_seen:
            pending.overlapping = True  # its backlog is partly the previous rescale's
        self.pending = pending

    def is_anomalous(self, workload_per_s: float, throughput_per_s: float) -> bool:
        gap = workload_per_s - throughput_per_s
        threshold = max(
            self.config.anomaly_threshold_stddevs * self.moments.stddev(),
            self.config.anomaly_min_relative_gap_ratio * abs(workload_per_s),
        )
        return abs(gap - self.moments.mean) > threshold

    def feed(
        self,
        time_s: float,
        workload_per_s: float,
        throughput_per_s: float,
        *,
        step_s: float = 1.0,
        executors: Executors | None = None,
        behind: bool = False,
    ) -> Recovery | None:
        """One sample covering `step_s`, with the job's executors then (None: unknown) and whether the job was
        behind its latency objective; returns the measured recovery when this sample completes one.

        A recovery is timed from the rescale's request, but it ends only once the rescale stands in place
        (`PendingRecovery.in_place`) and the job is within its latency objective. Until the new executors work,
        the job runs as before, and a quiet stretch then says nothing about the rescale; a job still behind has
        not recovered by the user's rule, whatever its throughput. (Live, a scale-out 1 -> 3 was read as recovered
        in 22 s, before its executors had registered; the job then stalled 62 s and stayed behind for minutes.)"""
        p = self.pending
        if p is None:
            # The weight follows the half-life in seconds, whatever the sample step (and the config, after a restart).
            self.moments.alpha = 1 - 0.5 ** (step_s / self.config.anomaly_halflife_s)
            self.moments.update(workload_per_s - throughput_per_s)
            return None
        elapsed = time_s - p.rescale_time_s
        if elapsed < 0:
            return None
        if p.applied_s is None and p.in_place(executors):
            p.applied_s = time_s
        if behind or self.is_anomalous(workload_per_s, throughput_per_s):
            p.anomaly_seen, p.normal_streak, p.normal_streak_start_s = True, 0, None
        elif p.applied_s is None:
            p.normal_streak, p.normal_streak_start_s = 0, None
        else:
            if p.normal_streak == 0:
                p.normal_streak_start_s = time_s
            p.normal_streak += 1
        if p.anomaly_seen and p.normal_streak >= self.config.stable_samples:
            assert p.normal_streak_start_s is not None
            return self._finish(p.normal_streak_start_s - p.rescale_time_s)
        if not p.anomaly_seen and p.applied_s is not None and time_s - p.applied_s >= NO_ANOMALY_GRACE_S:
            return self._finish(0.0)
        if elapsed >= self.config.max_recovery_s:
            self.pending = None  # never settled: no measurement beats a wrong one
        return None

    def _finish(self, recovery_s: float) -> Recovery:
        p = self.pending
        assert p is not None
        self.pending = None
        if not p.overlapping:
            self._correct_downtime(p, recovery_s)
        return Recovery(
            rescale_time_s=p.rescale_time_s,
            direction=p.direction,
            from_scaleout=p.from_scaleout,
            to_scaleout=p.to_scaleout,
            recovery_s=recovery_s,
            predicted_downtime_s=p.downtime_used_s,
        )

    def _correct_downtime(self, p: PendingRecovery, measured_s: float) -> None:
        # With the capacity and load believed at the rescale, a recovery grows in proportion to the downtime
        # (a backlog of D w records worked off at c - w a second: R = D c / (c - w)), so a recovery k times longer
        # than predicted implies a downtime k times longer, at most the whole recovery. Adding the whole difference
        # to the downtime instead read a scale-in onto a nearly saturated scale-out, which took 2,024 s to settle
        # against 631 s predicted, as a 1,400-s downtime, and no scale-in was planned again. A shorter recovery says
        # little about the downtime (a pessimistic capacity or forecast predicts slow recoveries; taking the
        # difference off the downtime drove the scale-in downtime to 0 in a few rescales while the job stopped
        # 16-29 s, docs/planning.md): it only caps it, since a downtime can never exceed the whole recovery.
        implied = min(p.downtime_used_s, measured_s)
        if measured_s > p.predicted_recovery_s > 0:
            implied = min(p.downtime_used_s * measured_s / p.predicted_recovery_s, measured_s)
        rate = self.config.downtime_learning_ratio
        if p.direction == "in":
            self.downtime_scale_in_s += rate * (implied - self.downtime_scale_in_s)
        else:
            self.downtime_scale_out_s += rate * (implied - self.downtime_scale_out_s)
