"""Benchmark: how closely the controller's capacity follows the simulated Spark job's true capacity, with each of
the live-Spark capacity rules switched off in turn (docs/capacity.md), on the demo's trace and the `local` profile.

Prints, per variant: ticks whose current-scale-out capacity is within 20 % of the truth, the median and worst
error, the range of the estimate, no_valid_scaleout_use_max decisions and executor-seconds. Usage:
python benchmarks/capacity_tracking.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from sim_vs_live import DemoPlan, demo_config, simulated  # the benchmarks' shared helpers, next to this file

VARIANTS: dict[str, dict[str, float]] = {
    "all rules": {},
    "no executor warm-up": {"executor_warmup_s": 0},
    "no stall outliers": {"outlier_stddevs": 0},
    "no change bound": {"max_change_ratio": 0},
    "no backlog floor": {"backlog_floor_lag_s": 0},
    "no batch economics": {"trigger_interval_s": 0},
    "none of them": {
        "executor_warmup_s": 0,
        "outlier_stddevs": 0,
        "max_change_ratio": 0,
        "backlog_floor_lag_s": 0,
        "trigger_interval_s": 0,
    },
}


def errors(run: dict[str, object]) -> list[float]:
    truth = run["true_capacity_per_scaleout"]
    return [
        c / truth[n - 1] - 1  # type: ignore[index]
        for n, c in run["capacity_by_tick"]  # type: ignore[attr-defined]
        if c is not None
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    plan = DemoPlan()
    base = demo_config(plan)
    print(
        f"{'variant':22} {'within 20%':>11} {'median err':>10} {'worst':>7} {'estimate range/s':>18} "
        f"{'use_max':>7} {'exec-s':>7}"
    )
    for name, change in VARIANTS.items():
        config = base.model_copy(update={"capacity": base.capacity.model_copy(update=change)})
        runs = [simulated(plan, seed, config) for seed in range(1, args.seeds + 1)]
        errs = np.array([e for r in runs for e in errors(r)])
        estimates = [c for r in runs for _, c in r["capacity_by_tick"] if c is not None]  # type: ignore[attr-defined]
        within = f"{np.mean(np.abs(errs) <= 0.2):.0%} of {len(errs)}"
        print(
            f"{name:22} {within:>11} {np.median(np.abs(errs)):>10.0%} {np.max(np.abs(errs)):>7.0%} "
            f"{min(estimates):>8,.0f}-{max(estimates):<9,.0f} "
            f"{np.mean([r['no_valid_scaleout_use_max'] for r in runs]):>7.1f} "
            f"{np.mean([r['executor_seconds'] for r in runs]):>7.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
