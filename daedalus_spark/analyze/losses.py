"""Analyze: executors the job lost by itself (a JVM killed, a worker gone) rather than by a rescale of ours.

The live count falls between two ticks below what we last applied: the cluster manager is still asking for the
executors it lost and usually replaces them within seconds. Planning meanwhile would send the target the job already
has (the agent's reconciliation and Spark's replacement are under way), count the replacement as our rescale and time
its arrival as that rescale's recovery; so the tick holds.

Where the monitor reports the agent's target (`Observation.agent_target`), the hold lasts while replacements are
pending: the live count below the agent's target, that target ours (or we applied none), since the count fell. It is
bounded by `hold_s` (the controller passes twice the learned scale-out downtime and a loop interval); after it, the
tick plans on the live count with a note naming the executors still missing. Without the agent's target the hold is
one tick: the next one, which sees what the cluster did, decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from daedalus_spark.domain import Observation


@dataclass(frozen=True)
class LossVerdict:
    hold: str = ""  # why the tick holds ('' = it does not)
    notes: tuple[str, ...] = ()  # for the decision when it plans on a count still short of the agent's target


@dataclass
class _Pending:
    since_s: float
    before: int  # the live count before the loss
    missing: tuple[str, ...]  # executor ids seen before and gone since


@dataclass
class LossWatch:
    """Remembers the last live executors seen and a pending replacement; in memory only."""

    scaleout: int | None = None
    executor_ids: tuple[str, ...] = ()
    pending: _Pending | None = field(default=None)

    def lost(self, obs: Observation, *, now_s: float, our_target: int | None, hold_s: float) -> LossVerdict:
        """Whether this tick holds for executors lost without a rescale of ours, or plans with a note."""
        previous, self.scaleout = self.scaleout, obs.scaleout
        previous_ids, self.executor_ids = self.executor_ids, obs.executor_ids
        fell = previous is not None and obs.scaleout < previous
        asked = obs.agent_target
        if asked is None:
            self.pending = None
            if not fell or (our_target is not None and obs.scaleout >= our_target):
                return LossVerdict()
            return LossVerdict(
                hold=f"executors lost: {previous} -> {obs.scaleout} live without a rescale of ours; "
                "waiting for replacements"
            )
        if obs.scaleout >= asked or (our_target is not None and asked != our_target):
            self.pending = None  # replaced, or the target is no longer ours: the planner decides
            return LossVerdict()
        gone = tuple(e for e in previous_ids if e not in obs.executor_ids)
        p = self.pending
        if fell and (p is None or now_s - p.since_s >= hold_s):
            p = self.pending = _Pending(now_s, previous or obs.scaleout, gone)
        elif fell and p is not None:
            p.missing = tuple(dict.fromkeys(p.missing + gone))
        if p is None:
            return LossVerdict()  # short of the target without a loss: a scale-out of ours on its way
        p.since_s = min(p.since_s, now_s)  # a clock stepped back does not stretch the hold
        return _verdict(p, live=obs.scaleout, asked=asked, waited_s=now_s - p.since_s, hold_s=hold_s)


def _verdict(p: _Pending, *, live: int, asked: int, waited_s: float, hold_s: float) -> LossVerdict:
    which = f" (executor {', '.join(p.missing)} gone)" if p.missing else ""
    lost = f"executors lost: {p.before} -> {live} live{which}, agent asking for {asked}"
    if waited_s < hold_s:
        return LossVerdict(hold=f"{lost}; waiting for replacements ({waited_s:.0f} s of {hold_s:.0f} s)")
    return LossVerdict(notes=(f"{lost}; not replaced within {hold_s:.0f} s: planning on the {live} live",))
