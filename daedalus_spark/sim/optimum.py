"""Simulation: the offline optimum — the cheapest schedule of scale-outs at the loop's decision points that keeps
every recovery within the target, found by dynamic programming with perfect knowledge of the trace.

Model (the simulated job's, sim/job.py, taken at its worst case so that the replay can only do better):
- decisions at the loop's decision points t = k * loop_interval_s (k >= 1), as run_policy calls a policy; the
  scale-out of the first interval is free to choose (other policies start at max_scaleout);
- a rescale stops processing for the LONGEST downtime of its direction (DowntimeModel.high_s) and replays the records
  processed in the last `checkpoint_interval_s` seconds (the longest checkpoint age); the job draws both uniformly,
  so its downtime and replay are never larger. Backlog follows the same Lindley recursion;
- constraints: every rescale recovers (lag <= one second of arrivals, metrics.recoveries) within the recovery
  target (metrics.recovery_violations' definition, but also before the trace ends, which metrics excuses), and no
  rescale starts before the previous one recovered (so a recovery is judged with its scale-out held); and, because
  a policy that never rescales has no recovery to miss, the lag must stay bounded: every second's latency (the
  job's latency_s) within the recovery target. The best static that meets these is what the optimum is compared to;
- objective: executor-seconds (scale-out summed per second, as metrics.summarize counts executor-hours);
- optionally at most `max_rescales` rescales (policy `optimum:R`: R rescales per 20 minutes on average), the
  yardstick for a controller held to that rate, which the unlimited optimum exceeds on fast cycles.

The DP and its approximation (an upper bound on the true optimum of this model) are plan/schedule.py's, shared with
the horizon planner; the schedule is verified by replaying it through the simulated job (run_optimum), which yields
the figures.

The micro-batch engine (sim/microbatch.py) is planned with the same fluid backlog, at the steady-state capacity at
the trigger of every scale-out (SimulatedCapacity.job_capacity_per_s: the task waves and the per-batch costs are in
it), and these differences:
- keeping up: a micro-batch job falls behind (metrics: more lag than two triggers of arrivals) as soon as a batch
  overruns its trigger, i.e. as soon as one second's arrivals exceed the steady capacity, so the plan allows no
  backlog beyond one record outside a recovery (the continuous job's plan allows one second of arrivals);
- an in-place scale-out (rescale: in_place) keeps the old capacity until the earliest registration, then nothing
  until the latest registration + the longest stall + one trigger + the batch overhead (the stalled batch may start
  up to a trigger after the registration and commits only after the stall), then the new capacity; no replay.
  This window covers every draw, so the plan's capacity is below the job's at every second; the job also works off
  a backlog faster than planned (catch-up capacity, larger batches);
- an in-place scale-in: nothing from the request until the longest leave + one trigger + the batch overhead (the
  running batch waits for its retried tasks), then the new capacity; no replay;
- a driver restart of a micro-batch job replays the uncommitted batch: bounded by what was processed in the last
  two triggers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from daedalus_spark.plan.schedule import QueueModel, Schedule, ScheduleInfeasible, Stop, cheapest_schedule
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
    """The shared DP (plan/schedule.py) over the whole trace with the job model's worst cases; raises
    OptimumInfeasible when no schedule meets the constraints (with `max_rescales`, none that rescales at most that
    often)."""
    w = setup.workload_per_s
    ctl = setup.config.controller
    model = setup.job_model
    sizes = tuple(range(max(1, ctl.min_scaleout), setup.max_scaleout + 1))
    micro = model.engine == "microbatch"
    replay = math.ceil(2.0 * model.microbatch.trigger_s) if micro else math.ceil(model.checkpoint_interval_s)
    (out_from, out_to), (in_from, in_to) = rescale_stops(model)
    queue = QueueModel(
        scaleouts=sizes,
        capacity_per_s=tuple(float(setup.capacity.job_capacity_per_s[n - 1]) for n in sizes),
        target_recovery_s=float(ctl.target_recovery_s),
        scale_out_stop=Stop(out_from, out_to),
        scale_in_stop=Stop(in_from, in_to),
        replay_s=0 if model.rescale == "in_place" else replay,  # in place: nothing to replay
        base_latency_s=model.base_latency_s,
    )
    try:
        return cheapest_schedule(
            w,
            queue,
            interval_s=max(1, round(ctl.loop_interval_s)),
            caught_up_records=np.full(len(w), 1.0) if micro else np.maximum(w, 1.0),
            max_rescales=max_rescales,
        )
    except ScheduleInfeasible as exc:
        raise OptimumInfeasible(_infeasible_message(exc.t_s, setup.max_scaleout)) from exc


def rescale_stops(model: JobModel) -> tuple[tuple[int, int], tuple[int, int]]:
    """(from, to) seconds after a rescale's request in which the plan gives the job no capacity, for a scale-out
    and a scale-in: the old capacity before `from`, the new one from `to` on (worst cases of the job model)."""
    if model.rescale == "in_place":
        mb, ip = model.microbatch, model.in_place
        settle = mb.trigger_s + mb.batch_overhead_s
        out = (math.floor(ip.registration.low_s), math.ceil(ip.registration.high_s + ip.stall.high_s + settle))
        return out, (0, math.ceil(ip.leave.high_s + settle))
    return (0, math.ceil(model.downtime_scale_out.high_s)), (0, math.ceil(model.downtime_scale_in.high_s))


def _infeasible_message(t_s: int, max_scaleout: int) -> str:
    return (
        f"offline optimum infeasible: from second {t_s} no schedule of up to {max_scaleout} executors keeps every "
        "second's latency and every recovery within the recovery target (the load needs more than max_scaleout)"
    )


def run_optimum(setup: SimSetup, schedule: OptimumSchedule | None = None) -> RunResult:
    """The optimum's schedule replayed through the simulated job (the figures every policy is judged by)."""
    schedule = schedule or solve_optimum(setup)
    return run_policy(setup, ReplayPolicy(schedule.scaleouts, schedule.interval_s))
