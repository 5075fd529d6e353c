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


def decide(rows: list[dict[str, Any]], candidates: list[Candidate], grid: TuneGrid, config: Config) -> Answer:
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


def to_json(answer: Answer, *, recommended_yaml: str, diff: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Everything `--json` prints and tune.json holds."""

    def figures(t: Totals) -> dict[str, Any]:
        return {**asdict(t), "rescales_per_hour": t.rescales_per_hour}

    chosen = answer.chosen
    return {
        "inputs": inputs,
        "rescale_budget_per_hour": answer.budget_per_hour,
        "max_violations": answer.max_violations,
        "candidates": [
            {
                "candidate": c.index,
                "knobs": dict(c.knobs),
                "select": figures(answer.select[c.index]),
                "holdout": figures(answer.holdout[c.index]),
                "pareto": c.index in answer.front,
            }
            for c in answer.candidates
        ],
        "recommendation": {
            "candidate": chosen,
            "changes": answer.changes,
            "note": answer.note,
            "holdout": figures(answer.holdout[chosen]),
            "current_holdout": figures(answer.holdout[0]),
            "saving_ratio": answer.saving_ratio(),
            "risk": {
                "violations": answer.holdout[chosen].violations,
                "rescales_per_hour": answer.holdout[chosen].rescales_per_hour,
                "rescales": answer.holdout[chosen].rescales,
                "allowed_rescales": answer.holdout[chosen].allowed_rescales(answer.budget_per_hour),
                "within_budget": answer.holdout[chosen].within_budget(answer.budget_per_hour),
            },
            "yaml": recommended_yaml,
            "diff": diff,
        },
    }
