"""Simulation: the offline optimum — a lower bound on the executor-seconds of any schedule of scale-outs at the
loop's decision points that passes the acceptance rule (sim/metrics.py: latency within the user's objective outside
recoveries, every recovery within its target), by dynamic programming with perfect knowledge of the trace.

It errs on one side only, the cheap one: every modelling choice is the job's best case, so no policy that passes
the rule can cost less (tests/sim/test_optimum.py checks it against every baseline, every static and the replayed
oracle, tests/unit/test_bound.py against brute force, and the suite on every trace it runs):
- decisions at the loop's decision points t = k * loop_interval_s (k >= 1), as run_policy calls the controller; the
  scale-out of the first interval is free to choose (other policies start at max_scaleout);
- capacity: for the micro-batch engine, what a scale-out works off with ever larger batches (the catch-up rate:
  no batch's fixed cost, `max_offsets_per_trigger` kept), above its rate at any latency; for the continuous engine
  its capacity. Latency is the fluid backlog over that capacity (the micro-batch job's batches only add to it);
- rescales: in place, the new capacity from the request (a joining executor only helps after it registers and
  stalls; a leaving one's capacity is gone at once); a driver restart stops for its shortest downtime; nothing is
  replayed;
- the rule as the judges apply it, at its most lenient (plan/bound.py): a rescale may come while earlier ones are
  still recovering, and a recovery may end at any caught-up second after its stop, before its deadline and before
  the trace ends;
- objective: executor-seconds (scale-out summed per second, as metrics.summarize counts executor-hours);
- optionally at most `max_rescales` rescales (policy `optimum:R`: R rescales per 20 minutes on average), the
  yardstick for a controller held to that rate.

Its schedule is replayed through the simulated job (run_optimum) for the table's other columns; being a bound, that
replay need not pass the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from daedalus_spark.plan.bound import lowest_cost
from daedalus_spark.plan.schedule import QueueModel, Schedule, ScheduleInfeasible, Stop
from daedalus_spark.sim.job import SimulatedJob
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.policies import OPTIMUM
from daedalus_spark.sim.runner import RunResult, SimSetup, run_policy


class OptimumInfeasible(ValueError):
    """No schedule within min..max scale-out keeps latency and every recovery within the target."""


# The scale-out of each loop interval; its executor-seconds are the DP's own estimate (worst-case downtimes), the
# replay through the simulated job (run_optimum) gives the reported figure.
OptimumSchedule = Schedule


@dataclass
class ReplayPolicy:
    """Replays a fixed schedule: scale-out `scaleouts[k]` from decision point k * sync_interval_s on."""

    scaleouts: tuple[int, ...]
    sync_interval_s: int | None
    name: str = OPTIMUM

    @property
    def initial_scaleout(self) -> int:
        return self.scaleouts[0]

    def decide(self, job: SimulatedJob) -> int | None:
        step = self.sync_interval_s or job.duration_s
        k = min(job.now_s // step, len(self.scaleouts) - 1)
        return self.scaleouts[k]


def solve_optimum(setup: SimSetup, *, max_rescales: int | None = None) -> OptimumSchedule:
    """The lower bound's DP (plan/bound.py) over the whole trace under the acceptance rule,
    with the job model's best cases; raises OptimumInfeasible when no schedule meets the rule (with
    `max_rescales`, none that rescales at most that often)."""
    w = setup.workload_per_s
    ctl = setup.config.controller
    model = setup.job_model
    sizes = tuple(range(max(1, ctl.min_scaleout), setup.max_scaleout + 1))
    micro = model.engine == "microbatch"
    (out_from, out_to), (in_from, in_to) = rescale_stops(model)
    # micro-batch: the rate of ever larger batches, which no batch size beats
    caps = setup.capacity.catchup_capacity_per_s if micro else setup.capacity.job_capacity_per_s
    queue = QueueModel(
        scaleouts=sizes,
        capacity_per_s=tuple(float(caps[n - 1]) for n in sizes),
        target_recovery_s=float(ctl.target_recovery_s),
        scale_out_stop=Stop(out_from, out_to),
        scale_in_stop=Stop(in_from, in_to),
        base_latency_s=0.0 if micro else model.base_latency_s,
        target_latency_s=float(ctl.target_latency_s),
    )
    try:
        # micro-batch: the judge's latency is a record's wait from arrival to commit
        interval_s = max(1, round(ctl.loop_interval_s))
        return lowest_cost(w, queue, interval_s=interval_s, max_rescales=max_rescales, latency_by_age=micro)
    except ScheduleInfeasible as exc:
        raise OptimumInfeasible(_infeasible_message(exc.t_s, setup.max_scaleout)) from exc


def rescale_stops(model: JobModel) -> tuple[tuple[int, int], tuple[int, int]]:
    """(from, to) seconds after a rescale's request in which the optimum gives the job no capacity, for a scale-out
    and a scale-in: the old capacity before `from`, the new one from `to` on, at the job model's best cases. In
    place: none (the new capacity from the request, which a joining executor only reaches later, after its warm-up,
    and a leaving one only loses capacity to); a driver restart: its shortest downtime."""
    if model.rescale == "in_place":
        return (0, 0), (0, 0)
    return (0, math.floor(model.downtime_scale_out.low_s)), (0, math.floor(model.downtime_scale_in.low_s))


def _infeasible_message(t_s: int, max_scaleout: int) -> str:
    return (
        f"offline optimum infeasible: from second {t_s} no schedule of up to {max_scaleout} executors keeps every "
        "second's latency and every recovery within the recovery target (the load needs more than max_scaleout)"
    )


def run_optimum(setup: SimSetup, schedule: OptimumSchedule | None = None) -> RunResult:
    """The optimum's schedule replayed through the simulated job (the figures every policy is judged by)."""
    schedule = schedule or solve_optimum(setup)
    return run_policy(setup, ReplayPolicy(schedule.scaleouts, schedule.interval_s))
