"""Benchmark: where Daedalus's executor-hours above the rescale-limited optimum come from. Per suite trace and seed,
the `kubernetes` micro-batch model at full length, the yardstick and three controllers on the same simulated job (the
same draws):
- `optimum:R`, the yardstick of decision_quality.py;
- `daedalus` as shipped;
- `future`: the same controller whose forecast is the trace itself (the mean load of every forecast step to come,
  no interval): what is left is the planner, the capacity it learns, and the rescale budget;
- `future+capacity`: besides, every tick's capacity table is the simulated job's own (sizing at the plan's latency
  objective, recovery at the catch-up rate): what is left is the planner, the budget and the bound's relaxations.

The differences split the gap: daedalus - future is the forecast's share, future - future+capacity the learned
capacity's, future+capacity - optimum:R the rest. A measurement, not a test: it never asserts.
  python benchmarks/planning_gap.py                              # every suite trace, seed 1 (~50 min here)
  python benchmarks/planning_gap.py --trace taylor_demand --seeds 2
  python benchmarks/planning_gap.py --config my.yaml             # e.g. another horizon.target_share_ratio
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import replace

import numpy as np

# the benchmarks' shared helpers, next to this file
from decision_quality import generated_shape, limited_optimum, suite_config, trace_names

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.analyze.forecast import WorkloadForecaster
from daedalus_spark.config import Config, load_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import CapacityTable, Forecast, Observation
from daedalus_spark.plan.horizon import planning_objective_s
from daedalus_spark.sim.daedalus import DaedalusPolicy
from daedalus_spark.sim.evaluate import evaluate
from daedalus_spark.sim.jobmodel import load_job_model
from daedalus_spark.sim.metrics import summarize
from daedalus_spark.sim.runner import RunResult, SimSetup, make_setup, run_policy
from daedalus_spark.sim.skew import SimulatedCapacity
from daedalus_spark.sim.suite import suite_workload
from daedalus_spark.sim.waves import steady_records

VARIANTS = ("daedalus", "future", "future+capacity")


def known_future(forecaster: WorkloadForecaster, workload_per_s: np.ndarray) -> None:
    """The forecaster's forecast becomes the trace's own mean load per step to come (no interval); it still
    fits and scores itself as shipped."""
    made_by = forecaster.predict

    def predict(now_s: float, horizon_s: float | None = None) -> Forecast:
        made = made_by(now_s, horizon_s)
        start, step, n = made.start_s, made.step_s, len(workload_per_s)
        values = []
        for k in range(len(made.values_per_s)):
            lo = min(int(start + k * step), n - 1)
            hi = max(lo + 1, min(int(start + (k + 1) * step), n))
            values.append(float(np.mean(workload_per_s[lo:hi])))
        return Forecast(start, step, tuple(values), "known-future")

    forecaster.predict = predict  # type: ignore[method-assign]


def at_latency_per_s(capacity: SimulatedCapacity, objective_s: float) -> tuple[float, ...]:
    """What each scale-out of the simulated job carries with every record's latency within `objective_s` (batches
    back to back of at most max(L, objective / 2) s): the job model's own figure for what the controller's batch line
    estimates (analyze/batches.py `at_latency_per_s`)."""
    waves = capacity.waves
    if waves is None:
        return tuple(float(c) for c in capacity.steady_capacity_per_s)
    out = []
    for n in range(1, capacity.max_scaleout + 1):
        bound = max(waves.batch_bound_s(n), 0.5 * objective_s)
        records = steady_records(waves.layout(tuple(range(n))), bound_s=bound, batch_overhead_s=waves.batch_overhead_s)
        if waves.cap_records is not None:
            records = min(records, waves.cap_records)
        out.append(records / bound)
    return tuple(out)


def known_capacity(model: CapacityModel, capacity: SimulatedCapacity, objective_s: float) -> None:
    """The capacity model's table holds the simulated job's capacities: sizing at the plan's latency objective,
    recovery at the catch-up rate; it still learns, and holds (None) where it would."""
    learned_by = model.table
    sizing = at_latency_per_s(capacity, objective_s)
    catch_up = tuple(float(c) for c in capacity.catchup_capacity_per_s)

    def table(obs: Observation, max_scaleout: int, **kw: float) -> CapacityTable | None:
        learned = learned_by(obs, max_scaleout, **kw)
        if learned is None:
            return None
        return replace(
            learned,
            current_per_s=sizing[learned.current_scaleout - 1],
            per_scaleout_per_s=sizing[:max_scaleout],
            catch_up_per_scaleout_per_s=catch_up[:max_scaleout],
            current_at_trigger_per_s=None,
            current_basis="known",
        )

    model.table = table  # type: ignore[method-assign]


def variant(config: Config, setup: SimSetup, name: str) -> DaedalusPolicy:
    """Daedalus with what `name` lets it know; named `daedalus` in every case, so the job draws the same."""

    def know(controller: Controller) -> None:
        k = controller.knowledge
        if name.startswith("future"):
            known_future(k.forecaster, setup.workload_per_s)
        if name.endswith("capacity"):
            known_capacity(k.capacity, setup.capacity, planning_objective_s(config.controller))

    return DaedalusPolicy(config, warm=None if name == "daedalus" else know)


def figures(run: RunResult, config: Config) -> tuple[float, bool, int]:
    ctl = config.controller
    m = summarize(
        run,
        static_executors=ctl.max_scaleout,
        oracle_executor_hours=0.0,
        target_recovery_s=ctl.target_recovery_s,
        target_latency_s=ctl.target_latency_s,
    )
    return m.executor_hours, m.passes, m.rescales


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", action="append", help="a suite trace (repeatable; default: all)")
    p.add_argument("--seeds", type=int, default=1, help="seeds 1..N")
    p.add_argument("--config", default=None, help="controller config (default: the defaults)")
    args = p.parse_args(argv)
    names = args.trace or trace_names()
    unknown = [n for n in names if n not in trace_names()]
    if unknown:
        p.error(f"unknown trace(s) {unknown}; known: {trace_names()}")
    warnings.simplefilter("ignore")  # statsmodels' convergence chatter
    job_model = load_job_model("kubernetes")
    config = suite_config(load_config(args.config), job_model)
    yardstick = limited_optimum(config)
    print(f"executor-hours on the kubernetes model; a '*' marks a run that fails the acceptance rule; {yardstick}")
    print(f"{'trace':28} {'seed':>4} {yardstick:>10} " + " ".join(f"{v:>17}" for v in VARIANTS) + "  wall s")
    totals = dict.fromkeys((yardstick, *VARIANTS), 0.0)
    for name in names:
        for seed in range(1, args.seeds + 1):
            started = time.perf_counter()
            workload = suite_workload(name, seed)
            shape = generated_shape(name)
            sized_for = float(np.max(workload)) * (shape.sized_for_ratio if shape else 1.0)
            blind = shape.monitor_blind(1) if shape else None
            blind = None if blind is None else blind[: len(workload)]
            kw = {"job_model": job_model, "config": config, "seed": seed, "sized_for_per_s": sized_for}
            solved = evaluate(name, workload, [yardstick], monitor_blind=blind, **kw)  # type: ignore[arg-type]
            bound = solved.runs.get(yardstick)
            bound_h = float(bound.scaleout.sum()) / 3600.0 if bound is not None else math.nan
            setup = make_setup(workload, job_model, config, seed, sized_for_per_s=sized_for, monitor_blind=blind)
            cells = []
            totals[yardstick] += bound_h
            for v in VARIANTS:
                hours, ok, rescales = figures(run_policy(setup, variant(config, setup, v)), config)
                totals[v] += hours
                ratio = hours / bound_h if bound_h > 0 else math.nan
                cells.append(f"{hours:6.1f}{'' if ok else '*'} ({ratio:4.2f}) {rescales:3d}r")
            wall = time.perf_counter() - started
            print(f"{name:28} {seed:4d} {bound_h:10.1f} " + " ".join(f"{c:>17}" for c in cells) + f"  {wall:5.0f}")
            sys.stdout.flush()
    bound_total = totals[yardstick]
    print("total: " + ", ".join(f"{k} {h:.1f} ({h / bound_total:.3f})" for k, h in totals.items() if bound_total > 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
