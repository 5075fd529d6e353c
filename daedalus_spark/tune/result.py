"""Tuning (pure core): from the rows to the answer — the front, the choice on the older part, and what it gives
on the held-out part against the config as it is."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from daedalus_spark.config import Config
from daedalus_spark.tune.diff import changed_knobs
from daedalus_spark.tune.grid import Candidate, TuneGrid
from daedalus_spark.tune.pareto import Totals, choose, pareto_front, totals
from daedalus_spark.tune.split import HOLDOUT, SELECT
from daedalus_spark.tune.task import WindowRow


@dataclass(frozen=True)
class Answer:
    candidates: list[Candidate]
    select: dict[int, Totals]
    holdout: dict[int, Totals]
    front: list[int]  # candidate indices on the selection part's Pareto front
    chosen: int  # 0: keep the config
    changes: dict[str, Any]  # YAML path -> value, what the recommendation changes
    budget_per_hour: float
    max_violations: int
    note: str  # why the config is kept, else empty

    def saving_ratio(self) -> float:
        """Executor-hours saved on the held-out part against the config as it is (negative: more)."""
        base = self.holdout[0].executor_hours
        return 1.0 - self.holdout[self.chosen].executor_hours / base if base > 0 else 0.0


def rescale_budget(grid: TuneGrid, config: Config) -> float:
    """The recommendation's rescale budget per hour (0: none): the grid's, else the config's own."""
    own = grid.constraints.max_rescales_per_hour
    return config.controller.max_rescales_per_hour if own is None else own


def decide(rows: list[WindowRow], candidates: list[Candidate], grid: TuneGrid, config: Config) -> Answer:
    """Choose on the selection part; the held-out figures are reported, never used to choose."""
    select, holdout = totals(rows, SELECT), totals(rows, HOLDOUT)
    budget = rescale_budget(grid, config)
    best = choose(select.values(), max_violations=grid.constraints.max_violations, max_rescales_per_hour=budget)
    note = ""
    if best is None:
        note = "no candidate kept within the violations allowed and the rescale budget on the older part"
    chosen = 0 if best is None else best.candidate
    knobs = dict(candidates[chosen].knobs)
    current = config.model_dump(mode="python")
    front = [t.candidate for t in pareto_front(select.values())]
    changes = changed_knobs(knobs, current)
    allowed = grid.constraints.max_violations
    return Answer(candidates, select, holdout, front, chosen, changes, budget, allowed, note)


@dataclass(frozen=True)
class CandidateFigures:
    """One candidate's knobs and totals on both parts, and whether it is on the older part's Pareto front."""

    candidate: int
    knobs: dict[str, Any]  # YAML path -> value
    select: Totals
    holdout: Totals
    pareto: bool


@dataclass(frozen=True)
class Risk:
    """What the recommended candidate did on the held-out part, against the rescale budget."""

    violations: int
    rescales_per_hour: float
    rescales: int
    allowed_rescales: float
    within_budget: bool


@dataclass(frozen=True)
class Recommendation:
    candidate: int  # 0: keep the config
    changes: dict[str, Any]  # YAML path -> value
    note: str  # why the config is kept, else empty
    holdout: Totals
    current_holdout: Totals  # the config as it is, held out
    saving_ratio: float
    risk: Risk
    yaml: str  # the recommended config file
    diff: str  # against the user's file


@dataclass(frozen=True)
class TuneResult:
    """The answer as `tune` reports it: the inputs, every candidate, the recommendation."""

    inputs: dict[str, Any]
    rescale_budget_per_hour: float
    max_violations: int
    candidates: list[CandidateFigures]
    recommendation: Recommendation

    def to_json(self) -> dict[str, Any]:
        """Everything `--json` prints and tune.json holds."""
        rec = self.recommendation
        return {
            "inputs": self.inputs,
            "rescale_budget_per_hour": self.rescale_budget_per_hour,
            "max_violations": self.max_violations,
            "candidates": [
                {**asdict(c), "select": _figures(c.select), "holdout": _figures(c.holdout)} for c in self.candidates
            ],
            "recommendation": {
                **asdict(rec),
                "holdout": _figures(rec.holdout),
                "current_holdout": _figures(rec.current_holdout),
            },
        }


def _figures(t: Totals) -> dict[str, Any]:
    return {**asdict(t), "rescales_per_hour": t.rescales_per_hour}


def tune_result(answer: Answer, *, recommended_yaml: str, diff: str, inputs: dict[str, Any]) -> TuneResult:
    """The answer with what it recommends, for the terminal, the files and JSON."""
    chosen = answer.holdout[answer.chosen]
    budget = answer.budget_per_hour
    risk = Risk(
        violations=chosen.violations,
        rescales_per_hour=chosen.rescales_per_hour,
        rescales=chosen.rescales,
        allowed_rescales=chosen.allowed_rescales(budget),
        within_budget=chosen.within_budget(budget),
    )
    candidates = [
        CandidateFigures(
            c.index, dict(c.knobs), answer.select[c.index], answer.holdout[c.index], c.index in answer.front
        )
        for c in answer.candidates
    ]
    recommendation = Recommendation(
        candidate=answer.chosen,
        changes=answer.changes,
        note=answer.note,
        holdout=chosen,
        current_holdout=answer.holdout[0],
        saving_ratio=answer.saving_ratio(),
        risk=risk,
        yaml=recommended_yaml,
        diff=diff,
    )
    return TuneResult(inputs, budget, answer.max_violations, candidates, recommendation)
