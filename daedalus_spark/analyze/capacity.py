"""Analyze: per-executor throughput/utilization regressions turned into capacity per scale-out, skew included (§3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.analyze.partitions import PartitionKey, busiest_share, even_weights
from daedalus_spark.analyze.stats import OnlineRegression
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import CapacityTable, ExecutorCapacity, ExecutorSeries, Observation
from daedalus_spark.untrusted import Damaged, check_version, integer, mapping, number, text

# Utilization slightly above 1 happens (sampling jitter, cgroup accounting); beyond this it is garbage.
MAX_PLAUSIBLE_UTILIZATION = 1.2
# Spark executor ids are never reused, so an executor unseen this long is gone for good.
FORGET_EXECUTOR_AFTER_S = 3600.0
STATE_VERSION = 2  # 2: partition shares
# Each tick moves the learned partition shares this far toward the window's (about 10 ticks of memory).
PARTITION_SHARE_LEARNING_RATIO = 0.1
_FORGOTTEN_SHARE = 1e-6
_MAX_SCALEOUT = 100_000  # a stored scale-out beyond this is not one we wrote


@dataclass
class CapacityModel:
    """What the loop has learned about capacity: one regression per executor and capacities seen per scale-out."""

    config: CapacityConfig
    regressions: dict[str, OnlineRegression] = field(default_factory=dict)
    pooled: OnlineRegression = field(default_factory=OnlineRegression)  # every executor's samples together
    last_seen_s: dict[str, float] = field(default_factory=dict)
    observed_per_scaleout: dict[int, float] = field(default_factory=dict)
    partition_shares: dict[PartitionKey, float] = field(default_factory=dict)  # of the source's records

    def learn(self, observation: Observation, *, skip_first: int = 0) -> int:
        """Feed every plausible sample after the first `skip_first` ones; returns how many were learned from."""
        self._learn_partition_shares(observation)
        learned = 0
        for executor in observation.executors:
            regression = self.regressions.setdefault(executor.executor_id, OnlineRegression())
            self.last_seen_s[executor.executor_id] = observation.time_s
            for x, y in _plausible_samples(executor, skip_first):
                regression.update(min(x, 1.0), y)
                self.pooled.update(min(x, 1.0), y)
                learned += 1
        self._forget_gone_executors(observation.time_s)
        return learned

    def _learn_partition_shares(self, observation: Observation) -> None:
        """Move the shares toward this window's; a window without a usable total leaves them as they are."""
        rates = {(p.topic, p.partition): p.records_per_s for p in observation.partitions}
        total = sum(rates.values())
        if not rates or not math.isfinite(total) or total <= 0:
            return
        if not self.partition_shares:
            self.partition_shares = {key: rate / total for key, rate in rates.items()}
            return
        a = PARTITION_SHARE_LEARNING_RATIO
        keys = self.partition_shares.keys() | rates.keys()
        shares = {key: (1 - a) * self.partition_shares.get(key, 0.0) + a * rates.get(key, 0.0) / total for key in keys}
        # A partition no longer reported (a topic replaced) fades out and is then forgotten.
        self.partition_shares = {key: share for key, share in shares.items() if share >= _FORGOTTEN_SHARE}

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "regressions": {w: r.to_state() for w, r in self.regressions.items()},
            "pooled": self.pooled.to_state(),
            "last_seen_s": self.last_seen_s,
            "observed_per_scaleout": {str(n): c for n, c in self.observed_per_scaleout.items()},
            "partition_shares": [[t, p, share] for (t, p), share in sorted(self.partition_shares.items())],
        }

    @classmethod
    def from_state(cls, config: CapacityConfig, raw: Any, where: str = "capacity") -> CapacityModel:
        """The model as `to_state` wrote it, every value checked (`Damaged` names the first bad one)."""
        state = mapping(raw, where)
        check_version(state, where, STATE_VERSION)
        observed: dict[int, float] = {}
        for n, c in mapping(state["observed_per_scaleout"], f"{where}.observed_per_scaleout").items():
            at = f"{where}.observed_per_scaleout.{n!s:.20}"
            if not isinstance(n, str) or not n.isdigit():
                raise Damaged(f"{at}: the scale-out is not a whole number")
            observed[integer(int(n), at, lo=1, hi=_MAX_SCALEOUT)] = number(c, at, lo=0.0)
        return cls(
            config,
            regressions={
                text(w, f"{where}.regressions key"): OnlineRegression.from_state(r, f"{where}.regressions.{w}")
                for w, r in mapping(state["regressions"], f"{where}.regressions").items()
            },
            pooled=OnlineRegression.from_state(state["pooled"], f"{where}.pooled"),
            last_seen_s={
                text(w, f"{where}.last_seen_s key"): number(t, f"{where}.last_seen_s.{w}")
                for w, t in mapping(state["last_seen_s"], f"{where}.last_seen_s").items()
            },
            observed_per_scaleout=observed,
            partition_shares=_partition_shares(state.get("partition_shares", []), f"{where}.partition_shares"),
        )

    def _forget_gone_executors(self, now_s: float) -> None:
        for executor_id, seen in list(self.last_seen_s.items()):
            if now_s - seen > FORGET_EXECUTOR_AFTER_S:
                del self.last_seen_s[executor_id]
                self.regressions.pop(executor_id, None)

    def own_capacity(self, executor_id: str) -> tuple[float, str]:
        """An executor's capacity at the expected maximum utilization as if it got all the load it could take."""
        reg = self.regressions.get(executor_id)
        u_max = self.config.expected_max_utilization_ratio
        if reg is None or reg.n == 0 or reg.mean_x <= 0:
            return math.nan, "peer_mean"
        if self._trusted(reg):
            return max(reg.predict(u_max), 0.0), "regression"
        if self._trusted(self.pooled):
            # Executors share hardware: the pooled slope, through this executor's own means, keeps its own speed.
            return max(reg.mean_y + self.pooled.slope * (u_max - reg.mean_x), 0.0), "pooled"
        # Throughput / utilization underestimates when the CPU has an idle floor: a safe side to err on.
        return reg.mean_y / reg.mean_x * u_max, "ratio"

    def _trusted(self, reg: OnlineRegression) -> bool:
        return (
            reg.n >= self.config.min_points
            and math.sqrt(reg.variance_x()) >= self.config.min_utilization_stddev_ratio
            and reg.slope > 0
            and reg.correlation >= self.config.min_correlation_ratio
        )

    def table(self, observation: Observation, max_scaleout: int) -> CapacityTable | None:
        """Capacity of the current executors and of every scale-out 1..max; None when nothing is known yet."""
        executors = _current_executors(observation)
        if not executors:
            return None
        owns = {w: self.own_capacity(w) for w in executors}
        known = [c for c, _ in owns.values() if math.isfinite(c) and c > 0]
        if not known:
            return None
        peer_mean = sum(known) / len(known)
        owns = {w: (c, m) if math.isfinite(c) and c > 0 else (peer_mean, "peer_mean") for w, (c, m) in owns.items()}
        shares = _load_shares(executors)
        # The job saturates when its most constrained executor does: each executor only reaches its share of that.
        saturation = min(owns[w][0] / s for w, s in shares.items() if s > 0)
        capacities = tuple(
            ExecutorCapacity(
                executor_id=w,
                samples=self.regressions[w].n if w in self.regressions else 0,
                intercept_per_s=self.regressions[w].intercept if w in self.regressions else 0.0,
                slope_per_s=self.regressions[w].slope if w in self.regressions else 0.0,
                own_capacity_per_s=owns[w][0],
                load_share_ratio=shares[w],
                capacity_per_s=shares[w] * saturation,
                method=owns[w][1],
            )
            for w in executors
        )
        return self._table(observation.scaleout, saturation, capacities, max_scaleout)

    def remember(self, table: CapacityTable) -> None:
        """Keep the current scale-out's capacity so later decisions prefer it over extrapolation."""
        if all(w.method == "regression" for w in table.executors):
            self.observed_per_scaleout[table.current_scaleout] = table.current_per_s

    def _table(
        self, scaleout: int, current: float, executors: tuple[ExecutorCapacity, ...], max_scaleout: int
    ) -> CapacityTable:
        extrapolated = self._extrapolate(current, scaleout, max(max_scaleout, scaleout))
        per_scaleout = tuple(
            current if n == scaleout else self.observed_per_scaleout.get(n, extrapolated[n - 1])
            for n in range(1, max(max_scaleout, scaleout) + 1)
        )
        return CapacityTable(
            current_scaleout=scaleout,
            current_per_s=current,
            per_scaleout_per_s=per_scaleout,
            observed_scaleouts=frozenset(self.observed_per_scaleout) | {scaleout},
            executors=executors,
        )

    def _extrapolate(self, current: float, scaleout: int, max_scaleout: int) -> list[float]:
        """Capacity at every scale-out 1..max as if unseen: by the busiest executor's share of the partitions' load
        (their measured shares, else equal shares of `partitions`), or without either the paper's mean executor x n.

        Either way discounted by the margin: an unseen scale-out's executors may differ from the observed ones.
        """
        keep = 1.0 - self.config.unobserved_margin_ratio
        sizes = range(1, max_scaleout + 1)
        weights = self.partition_shares or even_weights(self.config.partitions)
        if not weights:
            return [current / scaleout * n * keep for n in sizes]
        # The job saturates when its busiest executor does: capacity scales with 1 / the busiest executor's share.
        rule = self.config.partition_assignment
        now = busiest_share(weights, scaleout, rule)
        return [current * now / busiest_share(weights, n, rule) * keep for n in sizes]


def _plausible_samples(executor: ExecutorSeries, skip_first: int) -> list[tuple[float, float]]:
    pairs = zip(executor.utilization_ratio[skip_first:], executor.throughput_per_s[skip_first:], strict=False)
    return [
        (x, y)
        for x, y in pairs
        if math.isfinite(x) and math.isfinite(y) and 0.0 <= x <= MAX_PLAUSIBLE_UTILIZATION and y >= 0.0
    ]


def _current_executors(observation: Observation) -> dict[str, list[float]]:
    """Executor id -> its plausible throughput samples in this window (all of them, warm-up included)."""
    return {w.executor_id: [y for _, y in _plausible_samples(w, 0)] for w in observation.executors}


def _load_shares(executors: dict[str, list[float]]) -> dict[str, float]:
    means = {w: (sum(ys) / len(ys) if ys else 0.0) for w, ys in executors.items()}
    total = sum(means.values())
    if total <= 0:
        return {w: 1.0 / len(executors) for w in executors}
    return {w: m / total for w, m in means.items()}


def _partition_shares(raw: Any, where: str) -> dict[PartitionKey, float]:
    """[[topic, partition, share], ...] as to_state writes it (absent in version 1: none learned)."""
    if not isinstance(raw, list) or len(raw) > _MAX_SCALEOUT:
        raise Damaged(f"{where}: expected a list of [topic, partition, share]")
    shares: dict[PartitionKey, float] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, list) or len(item) != 3:
            raise Damaged(f"{where}[{i}]: expected [topic, partition, share]")
        key = (text(item[0], f"{where}[{i}][0]"), integer(item[1], f"{where}[{i}][1]", lo=0, hi=_MAX_SCALEOUT))
        shares[key] = number(item[2], f"{where}[{i}][2]", lo=0.0, hi=1.0)
    return shares
