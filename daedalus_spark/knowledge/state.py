"""Knowledge: everything the loop learns, and its conversion to and from plain records for any store."""

from __future__ import annotations

import json
import logging
import math
from collections import deque
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from daedalus_spark.analyze.anomaly import PendingRecovery, RecoveryMonitor
from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.analyze.forecast import WorkloadForecaster
from daedalus_spark.analyze.stats import ExponentialMoments, OnlineRegression
from daedalus_spark.config import Config
from daedalus_spark.domain import Decision, Reason, Recovery
from daedalus_spark.knowledge.history import History
from daedalus_spark.untrusted import Damaged, boolean, integer, mapping, number, optional_number, text

_log = logging.getLogger(__name__)

FORMAT_VERSION = 1
HISTORY_LIMIT = 1000  # decisions and recoveries kept in memory; stores may keep more


@dataclass
class Knowledge:
    capacity: CapacityModel
    forecaster: WorkloadForecaster
    recovery: RecoveryMonitor
    last_rescale_s: float | None = None
    decisions: deque[Decision] = field(default_factory=lambda: deque(maxlen=HISTORY_LIMIT))
    recoveries: deque[Recovery] = field(default_factory=lambda: deque(maxlen=HISTORY_LIMIT))
    history: History = field(default_factory=History)

    @classmethod
    def fresh(cls, config: Config, *, refit_executor: Executor | None = None) -> Knowledge:
        return cls(
            capacity=CapacityModel(config.capacity),
            forecaster=WorkloadForecaster(config.forecast, refit_executor=refit_executor),
            recovery=RecoveryMonitor(config.recovery),
        )


@dataclass(frozen=True)
class Snapshot:
    """Knowledge as records: JSON for what people may read, bytes for the forecaster model."""

    format_version: int
    components: dict[str, str]  # name -> JSON text
    forecaster: bytes
    decisions: tuple[str, ...]  # JSON text each, oldest first
    recoveries: tuple[str, ...]


class KnowledgeStore(Protocol):
    def save(self, snapshot: Snapshot) -> None: ...

    def load(self) -> Snapshot | None:
        """The latest snapshot, or None if nothing was saved yet."""
        ...


def decision_to_json(d: Decision) -> str:
    return json.dumps({**asdict(d), "reason": d.reason.value}, sort_keys=True)


def decision_from_json(text: str) -> Decision:
    raw = json.loads(text)
    return Decision(
        time_s=raw["time_s"],
        current_scaleout=raw["current_scaleout"],
        target_scaleout=raw["target_scaleout"],
        reason=Reason(raw["reason"]),
        evidence=raw["evidence"],
        notes=tuple(raw["notes"]),
        actuation=raw.get("actuation"),
        actuation_detail=raw.get("actuation_detail", ""),
    )


def snapshot(k: Knowledge) -> Snapshot:
    capacity = {
        "regressions": {w: asdict(r) for w, r in k.capacity.regressions.items()},
        "pooled": asdict(k.capacity.pooled),
        "last_seen_s": k.capacity.last_seen_s,
        "observed_per_scaleout": {str(n): c for n, c in k.capacity.observed_per_scaleout.items()},
    }
    recovery = {
        "moments": asdict(k.recovery.moments),
        "pending": asdict(k.recovery.pending) if k.recovery.pending else None,
        "downtime_scale_out_s": k.recovery.downtime_scale_out_s,
        "downtime_scale_in_s": k.recovery.downtime_scale_in_s,
    }
    return Snapshot(
        format_version=FORMAT_VERSION,
        components={
            "capacity": json.dumps(capacity, sort_keys=True),
            "recovery": json.dumps(recovery, sort_keys=True),
            "controller": json.dumps({"last_rescale_s": k.last_rescale_s}),
            "history": json.dumps(k.history.to_json(), sort_keys=True),
        },
        forecaster=k.forecaster.to_bytes(),
        decisions=tuple(decision_to_json(d) for d in k.decisions),
        recoveries=tuple(json.dumps(asdict(r), sort_keys=True) for r in k.recoveries),
    )


class IncompatibleKnowledge(ValueError):
    """A knowledge file written by a newer daedalus-spark, or damaged."""


def restore(s: Snapshot, config: Config, *, refit_executor: Executor | None = None) -> Knowledge:
    if s.format_version > FORMAT_VERSION:
        raise IncompatibleKnowledge(
            f"knowledge format {s.format_version} is newer than this version understands ({FORMAT_VERSION})"
        )
    try:
        knowledge = _restore_learned(s, config, refit_executor)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:  # JSONDecodeError and Damaged are ValueErrors
        raise IncompatibleKnowledge(f"knowledge damaged or from another version: {exc}") from None
    try:
        knowledge.forecaster = WorkloadForecaster.from_bytes(s.forecaster, config.forecast, refit_executor=refit_executor)
    except ValueError as exc:  # damaged, or another forecast.resolution_s: relearn the forecast, keep the rest
        _log.warning("stored forecaster not used, the forecast is relearned: %s", exc)
    return knowledge


def _history(raw: str | None) -> History:
    """The reports' history; damaged, it is started afresh (the learned models do not depend on it)."""
    if raw is None:
        return History()
    try:
        return History.from_json(mapping(json.loads(raw), "history"))
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        _log.warning("stored report history not used, it starts afresh: %s", exc)
        return History()


def _restore_learned(s: Snapshot, config: Config, refit_executor: Executor | None) -> Knowledge:
    capacity: dict[str, Any] = json.loads(s.components["capacity"])
    recovery: dict[str, Any] = json.loads(s.components["recovery"])
    controller: dict[str, Any] = json.loads(s.components["controller"])
    pending = recovery["pending"]
    return Knowledge(
        capacity=CapacityModel(
            config.capacity,
            regressions={
                text(w, "capacity.regressions key"): _regression(r, f"capacity.regressions.{w}")
                for w, r in mapping(capacity["regressions"], "capacity.regressions").items()
            },
            pooled=_regression(capacity["pooled"], "capacity.pooled"),
            last_seen_s={
                text(w, "capacity.last_seen_s key"): number(t, f"capacity.last_seen_s.{w}")
                for w, t in mapping(capacity["last_seen_s"], "capacity.last_seen_s").items()
            },
            observed_per_scaleout=_observed(capacity["observed_per_scaleout"]),
        ),
        forecaster=WorkloadForecaster(config.forecast, refit_executor=refit_executor),
        recovery=RecoveryMonitor(
            config.recovery,
            moments=_moments(recovery["moments"]),
            pending=_pending(pending) if pending is not None else None,
            downtime_scale_out_s=number(recovery["downtime_scale_out_s"], "recovery.downtime_scale_out_s", lo=-1.0, hi=_MAX_SECONDS),
            downtime_scale_in_s=number(recovery["downtime_scale_in_s"], "recovery.downtime_scale_in_s", lo=-1.0, hi=_MAX_SECONDS),
        ),
        last_rescale_s=optional_number(controller["last_rescale_s"], "controller.last_rescale_s"),
        decisions=deque((decision_from_json(d) for d in s.decisions), maxlen=HISTORY_LIMIT),
        recoveries=deque((Recovery(**json.loads(r)) for r in s.recoveries), maxlen=HISTORY_LIMIT),
        history=_history(s.components.get("history")),
    )


# A stored duration beyond this (~30 years) is not one we wrote.
_MAX_SECONDS = 1e9
_MAX_SCALEOUT = 100_000


def _regression(raw: Any, where: str) -> OnlineRegression:
    """Stored Welford moments; NaN or a negative sum of squares would reach a division in a later tick."""
    r = mapping(raw, where)
    reg = OnlineRegression(
        n=integer(r["n"], f"{where}.n", lo=0, hi=2**53),
        mean_x=number(r["mean_x"], f"{where}.mean_x"),
        mean_y=number(r["mean_y"], f"{where}.mean_y"),
        m2_x=number(r["m2_x"], f"{where}.m2_x", lo=0.0),
        m2_y=number(r["m2_y"], f"{where}.m2_y", lo=0.0),
        c_xy=number(r["c_xy"], f"{where}.c_xy"),
    )
    # Cauchy-Schwarz: |c_xy| <= sqrt(m2_x m2_y); beyond rounding the moments were not accumulated by us.
    if abs(reg.c_xy) > math.sqrt(reg.m2_x * reg.m2_y) * (1 + 1e-6) + 1e-9:
        raise Damaged(f"{where}: co-moment larger than the variances allow")
    return reg


def _observed(raw: Any) -> dict[int, float]:
    out: dict[int, float] = {}
    for n, c in mapping(raw, "capacity.observed_per_scaleout").items():
        where = f"capacity.observed_per_scaleout.{n!s:.20}"
        if not isinstance(n, str) or not n.isdigit():
            raise Damaged(f"{where}: the scale-out is not a whole number")
        out[integer(int(n), where, lo=1, hi=_MAX_SCALEOUT)] = number(c, where, lo=0.0)
    return out


def _moments(raw: Any) -> ExponentialMoments:
    m = mapping(raw, "recovery.moments")
    return ExponentialMoments(
        alpha=number(m["alpha"], "recovery.moments.alpha", lo=0.0, hi=1.0),
        n=integer(m["n"], "recovery.moments.n", lo=0, hi=2**53),
        mean=number(m["mean"], "recovery.moments.mean"),
        var=number(m["var"], "recovery.moments.var", lo=0.0),
    )


def _pending(raw: Any) -> PendingRecovery:
    p, w = mapping(raw, "recovery.pending"), "recovery.pending"
    direction = text(p["direction"], f"{w}.direction")
    if direction not in ("out", "in"):
        raise Damaged(f"{w}.direction: {direction!r:.20} is neither 'out' nor 'in'")
    return PendingRecovery(
        rescale_time_s=number(p["rescale_time_s"], f"{w}.rescale_time_s"),
        direction=direction,
        from_scaleout=integer(p["from_scaleout"], f"{w}.from_scaleout", lo=0, hi=_MAX_SCALEOUT),
        to_scaleout=integer(p["to_scaleout"], f"{w}.to_scaleout", lo=0, hi=_MAX_SCALEOUT),
        predicted_recovery_s=number(p["predicted_recovery_s"], f"{w}.predicted_recovery_s", lo=0.0, allow_inf=True),
        downtime_used_s=number(p["downtime_used_s"], f"{w}.downtime_used_s", lo=0.0, hi=_MAX_SECONDS),
        anomaly_seen=boolean(p["anomaly_seen"], f"{w}.anomaly_seen"),
        overlapping=boolean(p["overlapping"], f"{w}.overlapping"),
        normal_streak_start_s=optional_number(p["normal_streak_start_s"], f"{w}.normal_streak_start_s"),
        normal_streak=integer(p["normal_streak"], f"{w}.normal_streak", lo=0, hi=2**53),
    )


class InMemoryKnowledgeStore:
    """Keeps the latest snapshot in memory (tests, the simulator)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None

    def save(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def load(self) -> Snapshot | None:
        return self._snapshot
