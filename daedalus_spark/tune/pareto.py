"""Tuning (pure core): per-candidate totals of a part, the Pareto front, and the choice under the constraints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from daedalus_spark.plan.budget import RescaleBudget
from daedalus_spark.tune.task import WindowRow


@dataclass(frozen=True)
class Totals:
    """One candidate's figures over the windows of one part."""

    candidate: int
    hours: float
    executor_hours: float
    violations: int
    rescales: int
    latency_p95_s: float  # the worst window's
    windows: int = 1

    def allowed_rescales(self, per_hour: float) -> float:
        """At most what the controller's token bucket allows (0: no budget, infinite): each window's scored part
        starts with at most a full bucket of `per_hour` tokens (earned from empty in its lead-in since the budget
        change of 2026-11-24), refilled at `per_hour` an hour."""
        return RescaleBudget(per_hour).allowed_over(hours=self.hours, fresh_buckets=self.windows)

    def within_budget(self, per_hour: float) -> bool:
        return self.rescales <= self.allowed_rescales(per_hour) + 1e-9

    @property
    def rescales_per_hour(self) -> float:
        return self.rescales / self.hours if self.hours > 0 else 0.0


def totals(rows: Iterable[WindowRow], part: str) -> dict[int, Totals]:
    """Rows of (candidate, window) summed per candidate over the windows of `part`."""
    by_candidate: dict[int, list[WindowRow]] = {}
    for row in rows:
        if row.part == part:
            by_candidate.setdefault(row.candidate, []).append(row)
    return {c: _summed(c, mine) for c, mine in sorted(by_candidate.items())}


def _summed(candidate: int, rows: list[WindowRow]) -> Totals:
    return Totals(
        candidate,
        hours=sum(r.hours for r in rows),
        executor_hours=sum(r.executor_hours for r in rows),
        violations=sum(r.violations for r in rows),
        rescales=sum(r.rescales for r in rows),
        latency_p95_s=max(0.0, *(r.latency_p95_s for r in rows)),
        windows=len(rows),
    )


def _objectives(t: Totals) -> tuple[float, int, int]:
    return (round(t.executor_hours, 9), t.violations, t.rescales)


def dominates(a: Totals, b: Totals) -> bool:
    """a is no worse than b in executor-hours, violations and rescales, and better in one."""
    oa, ob = _objectives(a), _objectives(b)
    return all(x <= y for x, y in zip(oa, ob, strict=True)) and oa != ob


def pareto_front(items: Iterable[Totals]) -> list[Totals]:
    """The candidates no other dominates, by executor-hours (then violations, rescales, index); of candidates with
    equal figures only the first is kept."""
    ordered = sorted(items, key=lambda t: (*_objectives(t), t.candidate))
    front: list[Totals] = []
    for t in ordered:
        if not any(dominates(f, t) or _objectives(f) == _objectives(t) for f in front):
            front.append(t)
    return front


def feasible(t: Totals, *, max_violations: int, max_rescales_per_hour: float) -> bool:
    """Within the violations allowed and the rescale budget (0: no budget)."""
    return t.violations <= max_violations and t.within_budget(max_rescales_per_hour)


def choose(items: Iterable[Totals], *, max_violations: int, max_rescales_per_hour: float) -> Totals | None:
    """The feasible candidate with the fewest executor-hours (then fewer rescales, lower index); None if none is."""
    ok = [t for t in items if feasible(t, max_violations=max_violations, max_rescales_per_hour=max_rescales_per_hour)]
    return min(ok, key=lambda t: (round(t.executor_hours, 9), t.rescales, t.candidate), default=None)
