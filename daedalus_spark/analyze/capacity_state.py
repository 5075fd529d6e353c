"""Analyze: the capacity model's stored form read back — every value checked, older versions upgraded."""

from __future__ import annotations

from typing import Any

from daedalus_spark.analyze.batches import BatchEconomics
from daedalus_spark.analyze.partitions import PartitionKey
from daedalus_spark.analyze.stats import OnlineRegression
from daedalus_spark.config import CapacityConfig
from daedalus_spark.untrusted import Damaged, check_version, integer, mapping, number, scaleout_key, text

STATE_VERSION = 3  # 2: partition shares; 3: executor activity, backlog floors, batch economics, the last table
_MAX_SCALEOUT = 100_000  # a stored scale-out beyond this is not one we wrote


def read_state(config: CapacityConfig, raw: Any, where: str) -> dict[str, Any]:
    """The `CapacityModel` fields `to_state` wrote, by name, every value checked (`Damaged` names the first bad
    one); versions 1 and 2 give what they lack empty (their executors count as settled)."""
    state = mapping(raw, where)
    version = check_version(state, where, STATE_VERSION)
    last_seen = {
        text(w, f"{where}.last_seen_s key"): number(t, f"{where}.last_seen_s.{w}")
        for w, t in mapping(state["last_seen_s"], f"{where}.last_seen_s").items()
    }
    fields: dict[str, Any] = {
        "regressions": {
            text(w, f"{where}.regressions key"): OnlineRegression.from_state(r, f"{where}.regressions.{w}")
            for w, r in mapping(state["regressions"], f"{where}.regressions").items()
        },
        "pooled": OnlineRegression.from_state(state["pooled"], f"{where}.pooled"),
        "last_seen_s": last_seen,
        "observed_per_scaleout": _per_scaleout(state["observed_per_scaleout"], f"{where}.observed_per_scaleout"),
        "partition_shares": _partition_shares(state.get("partition_shares", []), f"{where}.partition_shares"),
    }
    if version < 3:
        fields["active_since_s"] = {w: t - config.executor_warmup_s for w, t in last_seen.items()}
        return fields
    fields["active_since_s"] = {
        text(w, f"{where}.active_since_s key"): number(t, f"{where}.active_since_s.{w}")
        for w, t in mapping(state["active_since_s"], f"{where}.active_since_s").items()
    }
    fields["backlog_floor_per_scaleout"] = _per_scaleout(
        state["backlog_floor_per_scaleout"], f"{where}.backlog_floor_per_scaleout"
    )
    fields["kept_up_per_scaleout"] = _per_scaleout(state["kept_up_per_scaleout"], f"{where}.kept_up_per_scaleout")
    # absent from stores written before it was learned
    fields["saturated_per_scaleout"] = _per_scaleout(
        state.get("saturated_per_scaleout", {}), f"{where}.saturated_per_scaleout"
    )
    saturated = state.get("saturated_utilization_ratio")  # absent before it was learned
    if saturated is not None:
        fields["saturated_utilization_ratio"] = number(
            saturated, f"{where}.saturated_utilization_ratio", lo=0.0, hi=1.0
        )
    fields["batches"] = BatchEconomics.from_state(
        state["batches"],
        f"{where}.batches",
        min_points=config.min_points,
        min_correlation_ratio=config.min_correlation_ratio,
    )
    fields["last_per_scaleout"] = _capacities(state["last_per_scaleout"], f"{where}.last_per_scaleout")
    fields["unconfirmed"] = _unconfirmed(state["unconfirmed"], f"{where}.unconfirmed")
    since = state["scaleout_since"]
    if not isinstance(since, list) or len(since) != 2:
        raise Damaged(f"{where}.scaleout_since: expected [scale-out, time]")
    at = f"{where}.scaleout_since"
    fields["scaleout_since"] = (integer(since[0], f"{at}[0]", lo=0, hi=_MAX_SCALEOUT), number(since[1], f"{at}[1]"))
    return fields


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


def _per_scaleout(raw: Any, where: str) -> dict[int, float]:
    """{"n": records/s} as to_state writes it."""
    return {scaleout_key(n, where): number(c, f"{where}.{n!s:.20}", lo=0.0) for n, c in mapping(raw, where).items()}


def _capacities(raw: Any, where: str) -> tuple[float, ...]:
    if not isinstance(raw, list) or len(raw) > _MAX_SCALEOUT:
        raise Damaged(f"{where}: expected a list of capacities")
    return tuple(number(c, f"{where}[{i}]", lo=0.0) for i, c in enumerate(raw))


def _unconfirmed(raw: Any, where: str) -> tuple[int, int]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise Damaged(f"{where}: expected [direction, ticks]")
    return integer(raw[0], f"{where}[0]", lo=-1, hi=1), integer(raw[1], f"{where}[1]", lo=0, hi=1_000_000)
