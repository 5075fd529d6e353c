"""Simulation: key skew and heterogeneity — load shares per executor and the job's capacity at every scale-out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from daedalus_spark.analyze.partitions import executor_loads
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.waves import WaveModel


def partition_weights(*, keys: int, partitions: int, zipf_exponent: float, seed: int) -> np.ndarray:
    """Share of the records landing on each Kafka partition: Zipf keys hashed onto partitions; sums to 1."""
    ranks = np.arange(1, keys + 1, dtype=float)
    popularity = ranks**-zipf_exponent
    # A seeded random assignment stands in for the producer's key hash.
    partition_of_key = np.random.default_rng(seed).integers(0, partitions, size=keys)
    weights = np.bincount(partition_of_key, weights=popularity, minlength=partitions)
    return np.asarray(weights / weights.sum(), dtype=float)


def executor_shares(model: JobModel, weights: np.ndarray, scaleout: int) -> np.ndarray:
    """Load share of each of `scaleout` executors under the job's partition assignment; sums to 1."""
    keyed = {(model.topic, p): float(w) for p, w in enumerate(weights)}
    loads = np.asarray(executor_loads(keyed, scaleout, model.partition_assignment), dtype=float)
    return np.asarray(loads / loads.sum(), dtype=float)


def executor_capacity_ratios(model: JobModel, max_scaleout: int) -> np.ndarray:
    """Relative capacity of each executor (1 = nominal; slow ones lower)."""
    ratios = np.ones(max_scaleout)
    for index in model.slow_executors:
        if 0 <= index < max_scaleout:
            ratios[index] = model.slow_executor_capacity_ratio
    return ratios


def job_capacity_ratio(shares: np.ndarray, capacity_ratios: np.ndarray) -> float:
    """Job capacity in nominal-executor units: the job saturates when its most constrained executor does."""
    used = shares > 0
    return float(np.min(capacity_ratios[: len(shares)][used] / shares[used]))


@dataclass(frozen=True)
class SimulatedCapacity:
    """Per-executor capacities and, for every scale-out 1..max_scaleout, the shares and the job capacity.

    `job_capacity_per_s` is what a scale-out carries while keeping up: for the micro-batch engine the steady-state
    capacity (`steady_capacity_per_s`: back-to-back batches of at most `batch_bound_s`, max(trigger, 2 x the empty
    batch's duration)); `catchup_capacity_per_s` is the rate while a backlog is
    worked off in large back-to-back batches (equal to the steady one for the continuous engine)."""

    executor_capacity_per_s: np.ndarray  # per executor, records/s at full utilization (microbatch: while running)
    shares_by_scaleout: tuple[np.ndarray, ...]  # index n-1: shares of executors 0..n-1
    job_capacity_per_s: np.ndarray  # index n-1: capacity of scale-out n
    partition_weights: np.ndarray  # share of the records on each partition
    catchup_per_s: np.ndarray | None = None  # index n-1: catch-up capacity of scale-out n (microbatch)
    waves: WaveModel | None = None  # the micro-batch engine's batches (None: continuous)
    batch_bound_per_scaleout_s: np.ndarray | None = None  # index n-1: L of scale-out n (microbatch)

    @property
    def max_scaleout(self) -> int:
        return len(self.executor_capacity_per_s)

    @property
    def steady_capacity_per_s(self) -> np.ndarray:
        return self.job_capacity_per_s

    @property
    def catchup_capacity_per_s(self) -> np.ndarray:
        return self.job_capacity_per_s if self.catchup_per_s is None else self.catchup_per_s

    def lag_allowance_s(self, scaleout: np.ndarray) -> np.ndarray | float:
        """Seconds of arrivals a job that keeps up holds in its lag at each scale-out: 1 for the continuous engine;
        micro-batch: the next batch's input and the running one's, each up to L seconds of arrivals: max(1, 2 L)."""
        if self.batch_bound_per_scaleout_s is None:
            return 1.0
        n = np.clip(np.asarray(scaleout, dtype=np.int64), 1, self.max_scaleout)
        return np.maximum(1.0, 2.0 * self.batch_bound_per_scaleout_s[n - 1])

    def shares(self, scaleout: int) -> np.ndarray:
        return self.shares_by_scaleout[scaleout - 1]

    def capacity(self, scaleout: int) -> float:
        return float(self.job_capacity_per_s[scaleout - 1]) if scaleout > 0 else 0.0

    def fewest_executors_for(self, workload_per_s: np.ndarray, max_scaleout: int) -> np.ndarray:
        """Per second, the smallest scale-out (1..max) whose capacity covers the workload (max if none does)."""
        caps = np.maximum.accumulate(self.job_capacity_per_s[:max_scaleout])
        return np.minimum(np.searchsorted(caps, workload_per_s, side="left") + 1, max_scaleout)


def build_simulated_capacity(model: JobModel, *, max_scaleout: int, peak_per_s: float) -> SimulatedCapacity:
    if model.partition_weights is not None:
        given = np.asarray(model.partition_weights, dtype=float)
        weights = given / given.sum()
    else:
        weights = partition_weights(
            keys=model.keys, partitions=model.partitions, zipf_exponent=model.zipf_exponent, seed=model.skew_seed
        )
    ratios = executor_capacity_ratios(model, max_scaleout)
    shares = tuple(executor_shares(model, weights, n) for n in range(1, max_scaleout + 1))
    if model.engine == "microbatch":
        return _microbatch_capacity(model, weights, ratios, shares, peak_per_s)
    unit = np.array([job_capacity_ratio(s, ratios) for s in shares])
    reference = min(model.reference_scaleout, max_scaleout)
    per_executor = model.executor_capacity_for(peak_per_s, float(unit[reference - 1]))
    return SimulatedCapacity(
        executor_capacity_per_s=ratios * per_executor,
        shares_by_scaleout=shares,
        job_capacity_per_s=unit * per_executor,
        partition_weights=weights,
    )


def _microbatch_capacity(
    model: JobModel, weights: np.ndarray, ratios: np.ndarray, shares: tuple[np.ndarray, ...], peak_per_s: float
) -> SimulatedCapacity:
    """Capacities of the micro-batch engine (sim/waves.py). Both are linear in the core rate, so a rate derived from
    the trace's peak is the target over the capacity at rate 1."""
    mb = model.microbatch
    cap = float(mb.max_offsets_per_trigger) if mb.max_offsets_per_trigger is not None else None

    def waves(core_rate: float) -> WaveModel:
        return WaveModel(
            weights=weights,
            rule=model.partition_assignment,
            topic=model.topic,
            cores_per_executor=mb.cores_per_executor,
            core_rate_per_s=core_rate,
            capacity_ratios=ratios,
            task_overhead_s=mb.task_overhead_s,
            batch_overhead_s=mb.batch_overhead_s,
            trigger_s=mb.trigger_s,
            cap_records=cap,
        )

    if model.executor_capacity_per_s is not None:
        core_rate = model.executor_capacity_per_s / mb.cores_per_executor
    else:
        reference = min(model.reference_scaleout, len(ratios))
        unit = waves(1.0)
        unit.cap_records = None  # the cap does not scale with the rate; derive from the uncapped capacity
        per_unit = unit.steady_capacity_per_s(reference)
        if per_unit <= 0:
            raise ValueError(
                f"job model: at {reference} executors a batch's fixed costs (batch {mb.batch_overhead_s:g} s + "
                f"tasks x {mb.task_overhead_s:g} s) leave no time for records"
            )
        core_rate = max(peak_per_s, 1.0) * model.capacity_headroom_ratio / per_unit
    model_waves = waves(core_rate)
    n_max = len(ratios)
    steady = np.array([model_waves.steady_capacity_per_s(n) for n in range(1, n_max + 1)])
    catchup = np.array([model_waves.catchup_capacity_per_s(n) for n in range(1, n_max + 1)])
    bounds = np.array([model_waves.batch_bound_s(n) for n in range(1, n_max + 1)])
    return SimulatedCapacity(
        executor_capacity_per_s=ratios * core_rate * mb.cores_per_executor,
        shares_by_scaleout=shares,
        job_capacity_per_s=steady,
        partition_weights=weights,
        catchup_per_s=catchup,
        waves=model_waves,
        batch_bound_per_scaleout_s=bounds,
    )
