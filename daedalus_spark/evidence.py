"""Evidence: the numbers behind one decision, typed and unit-suffixed, rendered to the decision log's flat fields.

Each record is a group of fields that a planner branch sets together. `Evidence.fields()` flattens them to the
same keys the decision log and the knowledge store have always carried (a group's fields all appear, a None one as
null; a field marked optional only when set), and `Evidence.from_fields` reads them back. Keys it does not know
(a row written by another version) stay in `other`, so a stored row round-trips unchanged.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Scalar = float | int | str | None


OPTIONAL = {"optional": True}  # the metadata of a field rendered only when set (not None)


@dataclass(frozen=True)
class TickEvidence:
    """What every planner looked at (the tick's numbers)."""

    workload_avg_per_s: float
    forecast_max_per_s: float
    forecast_model: str
    capacity_current_per_s: float
    capacity_catch_up_per_s: float
    consumer_lag_records: float
    since_rescale_s: float | None  # None: no rescale remembered
    capacity_basis: str | None = field(default=None, metadata=OPTIONAL)  # CapacityTable.current_basis, when known


@dataclass(frozen=True)
class TargetEvidence:
    """The scale-out a planner chose: its capacity, the downtime it assumed and the recovery it predicted."""

    capacity_target_per_s: float
    predicted_recovery_s: float
    downtime_used_s: float


@dataclass(frozen=True)
class ScaleInEvidence:
    """cost_aware: the scale-in it weighed best, in executor-seconds (plan/cost.py's ScaleIn)."""

    lookback_peak_per_s: float
    scale_in_target: int
    hold_s: float
    saved_executor_s: float
    downtime_executor_s: float
    catch_up_executor_s: float
    cost_executor_s: float
    dwell_s: float | None
    undo_executor_s: float
    cost_model: str


@dataclass(frozen=True)
class CostAwareEvidence:
    forecast_bound: str  # "upper" or "point"
    scale_in: ScaleInEvidence | None = field(
        default=None, metadata=OPTIONAL
    )  # only when Algorithm 1 proposed a scale-in
    rescale_tokens: float | None = field(
        default=None, metadata=OPTIONAL
    )  # only when the rescale budget held the scale-in


@dataclass(frozen=True)
class PlanScheduleEvidence:
    """horizon: the cheapest schedule it found."""

    plan_scaleouts: str  # comma-separated, one per interval
    plan_interval_s: int
    plan_executor_s: float


@dataclass(frozen=True)
class HorizonEvidence:
    plan_upper_weight_ratio: float
    plan_rescales_allowed: int | None  # None: no rescale budget
    plan_load_max_per_s: float | None = field(
        default=None, metadata=OPTIONAL
    )  # the load of the last schedule attempted
    schedule: PlanScheduleEvidence | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class BatchRatioEvidence:
    batch_ratio: float | None  # None: no batch completed in the window
    batches_completed: float
    trigger_interval_s: float


@dataclass(frozen=True)
class SkipEvidence:
    """A tick that did not plan: what was wrong, or how long the job has been up (warm-up)."""

    problem: str | None = field(default=None, metadata=OPTIONAL)
    monitor_error: str | None = field(default=None, metadata=OPTIONAL)
    uptime_s: float | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class Evidence:
    """The numbers that decided a tick, by group; empty for a tick without any."""

    tick: TickEvidence | None = field(default=None, metadata=OPTIONAL)
    forecast_next_loop_max_per_s: float | None = field(
        default=None, metadata=OPTIONAL
    )  # paper: only when it checked a recent rescale
    target: TargetEvidence | None = field(default=None, metadata=OPTIONAL)
    planner: str | None = field(default=None, metadata=OPTIONAL)  # the planner, where it is not Algorithm 1 alone
    cost_aware: CostAwareEvidence | None = field(default=None, metadata=OPTIONAL)
    horizon: HorizonEvidence | None = field(default=None, metadata=OPTIONAL)
    batches: BatchRatioEvidence | None = field(default=None, metadata=OPTIONAL)
    skip: SkipEvidence | None = field(default=None, metadata=OPTIONAL)
    other: Mapping[str, Scalar] = field(default_factory=dict)  # keys this version does not know (stored rows)

    def fields(self) -> dict[str, Scalar]:
        """The flat fields of the decision log and the knowledge store."""
        return {**_flatten(self), **self.other}

    @classmethod
    def from_fields(cls, raw: Mapping[str, Scalar]) -> Evidence:
        """The record `fields()` rendered; keys outside a complete group of the right types go to `other`."""
        used: set[str] = set()
        evidence = _unflatten(cls, raw, used)
        assert isinstance(evidence, Evidence)  # every field of Evidence is optional
        return dataclasses.replace(evidence, other={k: v for k, v in raw.items() if k not in used})


def _flatten(record: object) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        if f.name == "other" or (value is None and f.metadata.get("optional")):
            continue
        if dataclasses.is_dataclass(value):
            out.update(_flatten(value))
        else:
            out[f.name] = value
    return out


def _unflatten(cls: type, raw: Mapping[str, Scalar], used: set[str]) -> Any:
    """An instance of `cls` from the flat fields, or None when a field it must have is missing or mistyped."""
    values: dict[str, Any] = {}
    taken: set[str] = set()
    for name, hint in typing.get_type_hints(cls).items():
        if name == "other":
            continue
        kinds = typing.get_args(hint) or (hint,)
        group = next((k for k in kinds if dataclasses.is_dataclass(k)), None)
        if group is not None:
            values[name] = _unflatten(group, raw, taken)  # type: ignore[arg-type]
        elif name in raw and _fits(raw[name], kinds):
            values[name] = raw[name]
            taken.add(name)
        elif not _is_optional(cls, name):
            return None
    if not taken and cls is not Evidence:
        return None  # nothing of the group was there
    used |= taken
    return cls(**values)


def _is_optional(cls: type, name: str) -> bool:
    return bool(next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("optional"))


def _fits(value: Scalar, kinds: tuple[Any, ...]) -> bool:
    if value is None:
        return type(None) in kinds
    if isinstance(value, str):
        return str in kinds
    if isinstance(value, bool):
        return False
    return float in kinds or (int in kinds and isinstance(value, int))
