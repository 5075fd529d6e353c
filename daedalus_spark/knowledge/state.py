"""Knowledge: everything the loop learns, and its conversion to and from plain records for any store."""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.analyze.forecast import RefitScheduler, WorkloadForecaster
from daedalus_spark.analyze.recovery_measurement import RecoveryMeter
from daedalus_spark.config import HISTORY_LIMIT, Config
from daedalus_spark.domain import APPLICATION_ID_MAX, Actuation, Decision, Outcome, Reason, Recovery, is_application_id
from daedalus_spark.evidence import Evidence
from daedalus_spark.knowledge.history import History
from daedalus_spark.untrusted import Damaged, integer, mapping, number, optional_number, text
from daedalus_spark.untrusted import field as field_of

_log = logging.getLogger(__name__)

FORMAT_VERSION = 1
FUTURE_TOLERANCE_S = 60.0  # stored times this far ahead of the clock (or one loop interval) are still believed
_MOST = 100_000  # the largest scale-out a stored row may name
_REASONS = frozenset(r.value for r in Reason)
_OUTCOMES = frozenset(o.value for o in Outcome)


@dataclass
class Knowledge:
    capacity: CapacityModel
    forecaster: WorkloadForecaster
    recovery: RecoveryMeter
    last_rescale_s: float | None = None
    application_id: str = ""  # the Spark application last observed ('' = none named): analyze/restart.py
    decisions: deque[Decision] = field(default_factory=lambda: deque(maxlen=HISTORY_LIMIT))
    recoveries: deque[Recovery] = field(default_factory=lambda: deque(maxlen=HISTORY_LIMIT))
    history: History = field(default_factory=History)
    damage: list[str] = field(default_factory=list)  # what restore left out of a damaged store, one line each

    @classmethod
    def fresh(cls, config: Config, *, refits: RefitScheduler | None = None) -> Knowledge:
        return cls(
            capacity=CapacityModel(config.capacity),
            forecaster=WorkloadForecaster(config.forecast, refits=refits),
            recovery=RecoveryMeter(config.recovery),
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
    """A decision as the store keeps it: its evidence as the decision log's flat fields, outcome and reason as text."""
    row = {
        "time_s": d.time_s,
        "current_scaleout": d.current_scaleout,
        "target_scaleout": d.target_scaleout,
        "reason": d.reason.value,
        "evidence": d.evidence.fields(),
        "notes": list(d.notes),
        "actuation": None if d.actuation is None else d.actuation.outcome.value,
        "actuation_detail": "" if d.actuation is None else d.actuation.detail,
    }
    return json.dumps(row, sort_keys=True)


def decision_from_json(row: str, where: str = "decision") -> Decision:
    """A stored decision, every field checked like any other stored value (Damaged names the first bad one)."""
    raw = mapping(json.loads(row), where)
    reason = str_field(raw, "reason", where)
    if reason not in _REASONS:
        raise Damaged(f"{where}.reason: {reason!r:.40} is not a reason this version knows")
    evidence = mapping(field_of(raw, "evidence", where), f"{where}.evidence")
    for key, value in evidence.items():
        if value is not None and not isinstance(value, (str, int, float)):
            raise Damaged(f"{where}.evidence.{key!s:.40}: expected a number or a string, got {type(value).__name__}")
    notes = field_of(raw, "notes", where)
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise Damaged(f"{where}.notes: expected a list of strings")
    actuation = raw.get("actuation")
    if actuation is not None and text(actuation, f"{where}.actuation", max_len=40) not in _OUTCOMES:
        raise Damaged(f"{where}.actuation: {actuation!r:.40} is not an outcome this version knows")
    detail = text(raw.get("actuation_detail", ""), f"{where}.actuation_detail", max_len=10_000)
    target = integer(field_of(raw, "target_scaleout", where), f"{where}.target_scaleout", lo=0, hi=_MOST)
    return Decision(
        time_s=number(field_of(raw, "time_s", where), f"{where}.time_s"),
        current_scaleout=integer(field_of(raw, "current_scaleout", where), f"{where}.current_scaleout", lo=0, hi=_MOST),
        target_scaleout=target,
        reason=Reason(reason),
        evidence=Evidence.from_fields(evidence),
        notes=tuple(notes),
        # The store keeps the outcome and its detail; the live count and the request's duration are the log's.
        actuation=None if actuation is None else Actuation(target, Outcome(actuation), detail),
    )


def recovery_from_json(row: str, where: str = "recovery") -> Recovery:
    raw = mapping(json.loads(row), where)
    direction = str_field(raw, "direction", where)
    if direction not in ("out", "in"):
        raise Damaged(f"{where}.direction: {direction!r:.20} is neither 'out' nor 'in'")
    return Recovery(
        rescale_time_s=number(field_of(raw, "rescale_time_s", where), f"{where}.rescale_time_s"),
        direction=direction,
        from_scaleout=integer(field_of(raw, "from_scaleout", where), f"{where}.from_scaleout", lo=0, hi=_MOST),
        to_scaleout=integer(field_of(raw, "to_scaleout", where), f"{where}.to_scaleout", lo=0, hi=_MOST),
        recovery_s=number(field_of(raw, "recovery_s", where), f"{where}.recovery_s", lo=0),
        predicted_downtime_s=number(
            field_of(raw, "predicted_downtime_s", where), f"{where}.predicted_downtime_s", lo=0
        ),
    )


def str_field(raw: Mapping[str, Any], key: str, where: str) -> str:
    return text(field_of(raw, key, where), f"{where}.{key}", max_len=200)


def snapshot(k: Knowledge) -> Snapshot:
    """Each learned component writes its own versioned state; the store keeps it as JSON text."""
    return Snapshot(
        format_version=FORMAT_VERSION,
        components={
            "capacity": json.dumps(k.capacity.to_state(), sort_keys=True),
            "recovery": json.dumps(k.recovery.to_state(), sort_keys=True),
            "controller": json.dumps({"last_rescale_s": k.last_rescale_s, "application_id": k.application_id}),
            "history": json.dumps(k.history.to_state(), sort_keys=True),
        },
        forecaster=k.forecaster.to_bytes(),
        decisions=tuple(decision_to_json(d) for d in k.decisions),
        recoveries=tuple(json.dumps(asdict(r), sort_keys=True) for r in k.recoveries),
    )


class IncompatibleKnowledge(ValueError):
    """A knowledge file written by a newer daedalus-spark, or damaged."""


def restore(
    s: Snapshot, config: Config, *, now_s: float | None = None, refits: RefitScheduler | None = None
) -> Knowledge:
    """The knowledge in a snapshot. Damaged learned state is refused (IncompatibleKnowledge); damaged decisions and
    recoveries are left out, and with `now_s` (the clock) so are stored times ahead of it: a rescale "in the future"
    would hold the cool-down, the rescale budget or a recovery measurement until the clock got there. Each is one
    line of `Knowledge.damage`, logged as a warning."""
    if s.format_version > FORMAT_VERSION:
        raise IncompatibleKnowledge(
            f"knowledge format {s.format_version} is newer than this version understands ({FORMAT_VERSION})"
        )
    try:
        knowledge = _restore_learned(s, config, refits)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:  # JSONDecodeError and Damaged are ValueErrors
        raise IncompatibleKnowledge(f"knowledge damaged or from another version: {exc}") from None
    knowledge.decisions.extend(_rows(s.decisions, decision_from_json, "decision", knowledge.damage))
    knowledge.recoveries.extend(_rows(s.recoveries, recovery_from_json, "recovery", knowledge.damage))
    if now_s is not None:
        _forget_the_future(knowledge, now_s + max(FUTURE_TOLERANCE_S, config.controller.loop_interval_s))
    try:
        knowledge.forecaster = WorkloadForecaster.from_bytes(s.forecaster, config.forecast, refits=refits)
    except ValueError as exc:  # damaged, or another forecast.resolution_s: relearn the forecast, keep the rest
        knowledge.damage.append(f"stored forecaster not used, the forecast is relearned: {exc}")
    for line in knowledge.damage:
        _log.warning("knowledge store: %s", line)
    return knowledge


def _history(raw: str | None, damage: list[str]) -> History:
    """The reports' history; damaged, it is started afresh (the learned models do not depend on it)."""
    if raw is None:
        return History()
    try:
        return History.from_state(json.loads(raw), damage=damage)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        damage.append(f"stored report history not used, it starts afresh: {exc}")
        return History()


def _restore_learned(s: Snapshot, config: Config, refits: RefitScheduler | None) -> Knowledge:
    controller = mapping(json.loads(s.components["controller"]), "controller")
    damage: list[str] = []
    return Knowledge(
        capacity=CapacityModel.from_state(config.capacity, json.loads(s.components["capacity"])),
        forecaster=WorkloadForecaster(config.forecast, refits=refits),
        recovery=RecoveryMeter.from_state(config.recovery, json.loads(s.components["recovery"])),
        last_rescale_s=optional_number(controller["last_rescale_s"], "controller.last_rescale_s"),
        application_id=_application_id(controller, damage),
        history=_history(s.components.get("history"), damage),
        damage=damage,
    )


def _application_id(controller: Mapping[str, Any], damage: list[str]) -> str:
    """The last application id seen ('' in a store written before it was kept); damaged, it is left out: the
    first tick then tells a new application by the uptime alone."""
    try:
        value = text(controller.get("application_id", ""), "controller.application_id", max_len=APPLICATION_ID_MAX)
        if value and not is_application_id(value):
            raise Damaged(f"controller.application_id: {value!r:.40} holds control characters")
    except Damaged as exc:
        damage.append(f"{exc}: ignored, the first tick compares no application id")
        return ""
    return value


Row = TypeVar("Row")


def _rows(texts: Sequence[str], parse: Callable[[str, str], Row], kind: str, damage: list[str]) -> list[Row]:
    """The rows that parse; each damaged one is left out with one line in `damage` (the learned models do not
    depend on them: the rescale budget and the report lose that row, nothing else)."""
    rows = []
    for i, row_text in enumerate(texts):
        try:
            rows.append(parse(row_text, f"{kind} {i + 1} of {len(texts)}"))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError and Damaged are ValueErrors
            damage.append(f"damaged {kind} left out: {exc}")
    return rows


def _forget_the_future(k: Knowledge, latest_s: float) -> None:
    """Times after `latest_s` (the clock, with a tolerance): forgotten, each with one line in `k.damage`."""

    def ahead(t: float) -> str:
        return f"{t:.0f} is {t - latest_s:.0f} s ahead of the clock (a clock stepped back, or damage)"

    if k.last_rescale_s is not None and k.last_rescale_s > latest_s:
        k.damage.append(f"controller.last_rescale_s {ahead(k.last_rescale_s)}: ignored, no cool-down from it")
        k.last_rescale_s = None
    pending = k.recovery.pending
    if pending is not None and pending.rescale_time_s > latest_s:
        k.damage.append(f"pending recovery's rescale time {ahead(pending.rescale_time_s)}: not measured")
        k.recovery.pending = None
    k.decisions = _until(k.decisions, latest_s, "decision", k.damage)
    k.recoveries = _until(k.recoveries, latest_s, "recovery", k.damage)


Stamped = TypeVar("Stamped", Decision, Recovery)


def _until(rows: deque[Stamped], latest_s: float, kind: str, damage: list[str]) -> deque[Stamped]:
    """The rows stamped at or before `latest_s`; those after it are left out with one line in `damage`."""
    future = [row for row in rows if _time_of(row) > latest_s]
    if not future:
        return rows
    ahead = _time_of(future[0]) - latest_s
    damage.append(f"{len(future)} {kind}(s) from the future left out, the first {ahead:.0f} s ahead of the clock")
    return deque((row for row in rows if _time_of(row) <= latest_s), maxlen=rows.maxlen)


def _time_of(row: Decision | Recovery) -> float:
    return row.rescale_time_s if isinstance(row, Recovery) else row.time_s


class InMemoryKnowledgeStore:
    """Keeps the latest snapshot in memory (tests, the simulator)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None

    def save(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def load(self) -> Snapshot | None:
        return self._snapshot
