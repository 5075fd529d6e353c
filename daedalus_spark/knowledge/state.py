"""Knowledge: everything the loop learns, and its conversion to and from plain records for any store."""

from __future__ import annotations

import json
import logging
from collections import deque
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from typing import Protocol

from daedalus_spark.analyze.anomaly import RecoveryMonitor
from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.analyze.forecast import WorkloadForecaster
from daedalus_spark.config import HISTORY_LIMIT, Config
from daedalus_spark.domain import Decision, Reason, Recovery
from daedalus_spark.knowledge.history import History
from daedalus_spark.untrusted import mapping, optional_number

_log = logging.getLogger(__name__)

FORMAT_VERSION = 1


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
    def fresh(cls, config: Config, *, refit_pool: Executor | None = None) -> Knowledge:
        return cls(
            capacity=CapacityModel(config.capacity),
            forecaster=WorkloadForecaster(config.forecast, refit_pool=refit_pool),
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
    """Each learned component writes its own versioned state; the store keeps it as JSON text."""
    return Snapshot(
        format_version=FORMAT_VERSION,
        components={
            "capacity": json.dumps(k.capacity.to_state(), sort_keys=True),
            "recovery": json.dumps(k.recovery.to_state(), sort_keys=True),
            "controller": json.dumps({"last_rescale_s": k.last_rescale_s}),
            "history": json.dumps(k.history.to_state(), sort_keys=True),
        },
        forecaster=k.forecaster.to_bytes(),
        decisions=tuple(decision_to_json(d) for d in k.decisions),
        recoveries=tuple(json.dumps(asdict(r), sort_keys=True) for r in k.recoveries),
    )


class IncompatibleKnowledge(ValueError):
    """A knowledge file written by a newer daedalus-spark, or damaged."""


def restore(s: Snapshot, config: Config, *, refit_pool: Executor | None = None) -> Knowledge:
    if s.format_version > FORMAT_VERSION:
        raise IncompatibleKnowledge(
            f"knowledge format {s.format_version} is newer than this version understands ({FORMAT_VERSION})"
        )
    try:
        knowledge = _restore_learned(s, config, refit_pool)
    except (KeyError, TypeError, ValueError, RecursionError) as exc:  # JSONDecodeError and Damaged are ValueErrors
        raise IncompatibleKnowledge(f"knowledge damaged or from another version: {exc}") from None
    try:
        knowledge.forecaster = WorkloadForecaster.from_bytes(s.forecaster, config.forecast, refit_pool=refit_pool)
    except ValueError as exc:  # damaged, or another forecast.resolution_s: relearn the forecast, keep the rest
        _log.warning("stored forecaster not used, the forecast is relearned: %s", exc)
    return knowledge


def _history(raw: str | None) -> History:
    """The reports' history; damaged, it is started afresh (the learned models do not depend on it)."""
    if raw is None:
        return History()
    try:
        return History.from_state(json.loads(raw))
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        _log.warning("stored report history not used, it starts afresh: %s", exc)
        return History()


def _restore_learned(s: Snapshot, config: Config, refit_pool: Executor | None) -> Knowledge:
    controller = mapping(json.loads(s.components["controller"]), "controller")
    return Knowledge(
        capacity=CapacityModel.from_state(config.capacity, json.loads(s.components["capacity"])),
        forecaster=WorkloadForecaster(config.forecast, refit_pool=refit_pool),
        recovery=RecoveryMonitor.from_state(config.recovery, json.loads(s.components["recovery"])),
        last_rescale_s=optional_number(controller["last_rescale_s"], "controller.last_rescale_s"),
        decisions=deque((decision_from_json(d) for d in s.decisions), maxlen=HISTORY_LIMIT),
        recoveries=deque((Recovery(**json.loads(r)) for r in s.recoveries), maxlen=HISTORY_LIMIT),
        history=_history(s.components.get("history")),
    )


class InMemoryKnowledgeStore:
    """Keeps the latest snapshot in memory (tests, the simulator)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None

    def save(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def load(self) -> Snapshot | None:
        return self._snapshot
