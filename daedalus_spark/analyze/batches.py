"""Analyze: a micro-batch job's per-batch economics (fixed cost per batch, seconds per record) per scale-out.

Spark runs a query as micro-batches: each pays a fixed cost (planning, task launch and deserialization, state
store commits) and then time per record. From the query's progress, seconds per batch = fixed + records per batch x
seconds per record. That line tells the two capacities of a scale-out apart:
- steady state: the largest rate whose batches last at most L seconds, (1 - fixed / L) / per_record, where L is the
  trigger interval T, or twice the fixed cost when even an empty batch does not fit T (then batches always run back to
  back, and sizing for batches twice the job's own floor latency keeps half of each batch for records; measured on
  the local cluster: fixed 1.4 s at 2 executors against a 1-s trigger, and the lag stayed bounded up to 159,000
  lines/s where this gives 149,000, benchmarks/results/spark_local.json);
- at a latency objective T (the user's `target_latency_s`): a job a little behind its trigger takes larger batches
  and amortizes the fixed cost. Back to back at rate r a batch lasts D = fixed / (1 - r x per_record), and a record
  waits for the running batch and then its own, so its latency is at most 2 D. The highest rate with 2 D <= T is the
  steady one with L = T / 2, (1 - 2 fixed / T) / per_record (never below the trigger's): this one sizes;
- catch-up while a backlog is worked off: batches run back to back and grow to B records, so B / (fixed + B x
  per_record), which approaches 1 / per_record. Recovery predictions use this one.

The two sizing rates read the line where the job has seldom been: batches of L seconds, often larger than any seen.
A line fitted on a few windows of similar batches can put them far off. So they are read off the line's upper
confidence bound on a batch's seconds (`BATCH_LINE_CONFIDENCE`), which widens with the residuals and with the
distance from the batches seen, and meets the line as evidence accumulates. The largest batch of B records whose
bound is at most L gives B / L.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from daedalus_spark.analyze.stats import OnlineRegression
from daedalus_spark.domain import BatchWindow
from daedalus_spark.untrusted import Damaged, mapping, number, scaleout_key

# Batch sizes must vary this much (coefficient of variation) before the fixed cost can be told from the slope.
MIN_BATCH_SIZE_SPREAD_RATIO = 0.1
# The one-sided confidence of the bound on a batch's seconds that the sizing rates are read off.
BATCH_LINE_CONFIDENCE = 0.9
_BISECTION_STEPS = 60


@dataclass(frozen=True)
class BatchFit:
    """The learned line at one scale-out, and the moments it came from (None: an exact line, such as a model's)."""

    fixed_s: float
    per_record_s: float
    largest_batch_records: float
    line: OnlineRegression | None = None

    def batch_bound_s(self, trigger_s: float) -> float:
        """The longest batch the steady state allows: the trigger, or twice the fixed cost where that exceeds it."""
        return max(trigger_s, 2.0 * self.fixed_s)

    def steady_per_s(self, trigger_s: float) -> float | None:
        """Records/s whose back-to-back batches last at most `batch_bound_s`; None without a trigger."""
        if trigger_s <= 0:
            return None
        return self._within_per_s(self.batch_bound_s(trigger_s))

    def at_latency_per_s(self, trigger_s: float, target_latency_s: float) -> float | None:
        """Records/s whose back-to-back batches keep every record's latency (at most two batches) within
        `target_latency_s`, never below the trigger's steady rate; None without a trigger."""
        if trigger_s <= 0:
            return None
        return self._within_per_s(max(self.batch_bound_s(trigger_s), 0.5 * target_latency_s))

    def seconds_bound(self, records: float) -> float:
        """A batch's seconds at `records` by the line's upper confidence bound (never below the line)."""
        point = self.fixed_s + self.per_record_s * records
        return point if self.line is None else max(point, self.line.mean_upper_bound(records, BATCH_LINE_CONFIDENCE))

    def _within_per_s(self, bound_s: float) -> float:
        """B / bound for the largest batch of B records whose `seconds_bound` is at most `bound_s` (0: none is).

        The line alone gives B = (bound - fixed) / per_record. The bound is convex in B (a line plus the root of a
        quadratic), so the batches within it are an interval; bisection finds its right end."""
        high = (bound_s - self.fixed_s) / self.per_record_s
        if high <= 0:
            return 0.0
        if self.line is None or self.seconds_bound(high) <= bound_s:
            return high / bound_s
        low = min(max(self.line.mean_x, 0.0), high)  # the bound is tightest near the batches seen
        if self.seconds_bound(low) > bound_s:
            low = 0.0
            if self.seconds_bound(low) > bound_s:
                return 0.0
        for _ in range(_BISECTION_STEPS):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if self.seconds_bound(middle) <= bound_s else (low, middle)
        return low / bound_s

    def catch_up_per_s(self) -> float:
        """Records/s with back-to-back batches of the largest size seen at this scale-out."""
        size = self.largest_batch_records
        return size / (self.fixed_s + size * self.per_record_s)


@dataclass
class BatchEconomics:
    """One regression of seconds per batch on records per batch for every scale-out the job ran at."""

    min_points: int = 5
    min_correlation_ratio: float = 0.6
    fits: dict[int, OnlineRegression] = field(default_factory=dict)
    largest_batch_records: dict[int, float] = field(default_factory=dict)

    def learn(self, scaleout: int, window: BatchWindow | None) -> bool:
        """Learn one window's mean batch at `scaleout`; False when the window has no usable batches."""
        if window is None or not window.usable:
            return False
        size, seconds = window.records_per_batch, window.seconds_per_batch
        self.fits.setdefault(scaleout, OnlineRegression()).update(size, seconds)
        self.largest_batch_records[scaleout] = max(self.largest_batch_records.get(scaleout, 0.0), size)
        return True

    def fit(self, scaleout: int) -> BatchFit | None:
        """The line at `scaleout` once it is trustworthy: enough windows, varied sizes, time rising with records."""
        reg = self.fits.get(scaleout)
        if reg is None or reg.n < self.min_points or reg.mean_x <= 0:
            return None
        spread = math.sqrt(reg.variance_x()) / reg.mean_x
        if spread < MIN_BATCH_SIZE_SPREAD_RATIO or reg.slope <= 0 or reg.correlation < self.min_correlation_ratio:
            return None
        return BatchFit(max(reg.intercept, 0.0), reg.slope, self.largest_batch_records[scaleout], replace(reg))

    def to_state(self) -> dict[str, Any]:
        return {
            "fits": {str(n): r.to_state() for n, r in self.fits.items()},
            "largest_batch_records": {str(n): v for n, v in self.largest_batch_records.items()},
        }

    @classmethod
    def from_state(cls, raw: Any, where: str, *, min_points: int, min_correlation_ratio: float) -> BatchEconomics:
        state = mapping(raw, where)
        fits = {
            scaleout_key(n, f"{where}.fits"): OnlineRegression.from_state(r, f"{where}.fits.{n}")
            for n, r in mapping(state["fits"], f"{where}.fits").items()
        }
        largest = {
            scaleout_key(n, f"{where}.largest_batch_records"): number(v, f"{where}.largest_batch_records.{n}", lo=0.0)
            for n, v in mapping(state["largest_batch_records"], f"{where}.largest_batch_records").items()
        }
        if fits.keys() != largest.keys():
            raise Damaged(f"{where}: fits and largest batches name different scale-outs")
        return cls(min_points, min_correlation_ratio, fits, largest)
