"""Benchmark: what the start-up backfill buys. The simulated job runs under a plain HPA (80 % CPU) until the
controller is attached halfway through the trace; from then on Daedalus scales it, once cold (a fresh controller) and
once warm (its past read back through the backfill, `monitor/backfill.py`, from the windows the monitor would have
seen: a replay of the Prometheus answers). Prints the first hour after the attach, and the rest of the trace, per
trace and seed: executor-hours, rescales, p95 latency, recovery violations, seconds late and seconds behind.

A measurement, not a test: it never asserts.
  python benchmarks/backfill_warm_start.py                      # slow_growth, step_changes, taylor_demand, seed 1
  python benchmarks/backfill_warm_start.py --trace fast_cycle --seeds 3
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from daedalus_spark.config import Config, load_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.backfill import backfill
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.replay import RecordedPast
from daedalus_spark.sim.daedalus import DaedalusPolicy, SimulatedJobMonitor
from daedalus_spark.sim.evaluate import controller_config
from daedalus_spark.sim.job import SimulatedJob
from daedalus_spark.sim.jobmodel import load_job_model
from daedalus_spark.sim.metrics import scored_part, seconds_behind, summarize
from daedalus_spark.sim.policies import Policy, make_policy
from daedalus_spark.sim.runner import RunResult, make_setup, run_policy
from daedalus_spark.sim.suite import suite_workload

BEFORE = "hpa:0.8"  # what scaled the job before the controller was attached
TRACES = ("slow_growth", "step_changes", "taylor_demand")
HOUR_S = 3600


@dataclass
class Attached:
    """`before` until `attach_s`, recording each loop window as the monitor would have seen it; Daedalus after."""

    before: Policy
    after: DaedalusPolicy
    attach_s: int
    interval_s: int
    name: str = "attached"
    sync_interval_s: int | None = 15
    recorded: list[Observation] = field(default_factory=list)
    _monitor: SimulatedJobMonitor = field(default_factory=SimulatedJobMonitor)
    _last_s: int = 0

    def decide(self, job: SimulatedJob) -> int | None:
        now = job.now_s
        if now < self.attach_s:
            if now % self.interval_s == 0:
                self._record(job, now)
            return self.before.decide(job)
        return self.after.decide(job) if now % self.interval_s == 0 else None

    def _record(self, job: SimulatedJob, now: int) -> None:
        self._monitor.job = job
        with contextlib.suppress(MonitorError):  # a window the monitor cannot read is a gap of the past, as live
            self.recorded.append(self._monitor.observe(start_s=self._last_s, end_s=now))
        self._last_s = now


def run(config: Config, workload: np.ndarray, seed: int, *, warm: bool) -> tuple[RunResult, int, float, int]:
    """The run, the attach time, the backfill's seconds and how many ticks of the first hour after the attach held
    without planning (warm-up, no capacity known yet)."""
    job_model = load_job_model("kubernetes")
    config = controller_config(config, job_model)
    setup = make_setup(workload, job_model, config, seed)
    interval = round(config.controller.loop_interval_s)
    attach = (len(workload) // 2) // interval * interval
    after = DaedalusPolicy(config)
    policy = Attached(make_policy(BEFORE, config), after, attach, interval)
    spent = [0.0]

    def warm_start(controller: Controller) -> None:
        started = time.perf_counter()
        # the loop's first step observes (attach - interval, attach]: the past read ends where it begins
        report = backfill(controller, RecordedPast.of(policy.recorded), config, now_s=attach - interval)
        spent[0] = time.perf_counter() - started
        assert report is not None

    if warm:
        after.warm = warm_start
    result = run_policy(setup, policy)
    held = sum(d.evidence.skip is not None for d in after.decisions if d.time_s < attach + HOUR_S)
    return result, attach, spent[0], held


def part(result: RunResult, start: int, end: int) -> RunResult:
    """The run from `start` to `end` (rescales in it only)."""
    tail = scored_part(result, start)
    n = end - start
    cut = tail.lag_allowance_s
    return dataclasses.replace(
        tail,
        workload_per_s=tail.workload_per_s[:n],
        scaleout=tail.scaleout[:n],
        processing=tail.processing[:n],
        processed_per_s=tail.processed_per_s[:n],
        lag_records=tail.lag_records[:n],
        latency_s=tail.latency_s[:n],
        capacity_per_s=tail.capacity_per_s[:n],
        rescales=tuple(r for r in tail.rescales if r.time_s < n),
        lag_allowance_s=cut[:n] if isinstance(cut, np.ndarray) else cut,
    )


def figures(result: RunResult, config: Config) -> str:
    ctl = config.controller
    m = summarize(
        result,
        static_executors=1,
        oracle_executor_hours=0.0,
        target_recovery_s=ctl.target_recovery_s,
        target_latency_s=ctl.target_latency_s,
    )
    behind = seconds_behind(result, ctl.target_recovery_s)
    return (
        f"{m.executor_hours:6.2f} {m.rescales:3d} {m.latency_p95_s:7.1f} "
        f"{m.recovery_violations:3d} {m.latency_violation_s:6d} {behind:6d}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="append", help=f"suite trace (default: {', '.join(TRACES)})")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 1..N")
    parser.add_argument("--config", default=None, help="controller config (default: the defaults)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # statsmodels' convergence chatter
    config = load_config(args.config)
    print(f"before the attach: {BEFORE}; after: daedalus ({config.controller.planner}); job model kubernetes")
    print("held: ticks of the first hour that did not plan; then executor-h, rescales, p95 latency s, recovery")
    print("violations, seconds of latency above the objective outside recoveries, seconds behind the trigger")
    head = f"{'trace':14} {'seed':>4} {'attach':>7} {'':5} {'held':>4}"
    print(f"{head} {'first hour after the attach':>30}   {'rest of the trace':>30}")
    for trace in args.trace or TRACES:
        for seed in range(1, args.seeds + 1):
            workload = suite_workload(trace, seed)
            for warm in (False, True):
                started = time.perf_counter()
                result, attach, spent, held = run(config, workload, seed, warm=warm)
                end = len(workload)
                hour = figures(part(result, attach, min(attach + HOUR_S, end)), config)
                rest = figures(part(result, attach, end), config)
                label = "warm" if warm else "cold"
                note = f"  (backfill {spent:.1f} s, run {time.perf_counter() - started:.0f} s)" if warm else ""
                print(f"{trace:14} {seed:4d} {attach / 3600:6.2f}h {label:5} {held:4d} {hour:>30}   {rest:>30}{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
