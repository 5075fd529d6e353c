"""Simulation: the scaling policies compared side by side, behind one interface, and their names on the CLI."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from daedalus_spark.config import Config

if TYPE_CHECKING:
    from daedalus_spark.sim.flink import FlinkSettings
    from daedalus_spark.sim.job import SimulatedJob


class Policy(Protocol):
    """Decides an absolute scale-out every `sync_interval_s` seconds (None: never)."""

    name: str
    sync_interval_s: int | None

    def decide(self, job: SimulatedJob) -> int | None:
        """The target scale-out at `job.now_s`, or None to leave it."""
        ...


@dataclass
class StaticPolicy:
    """A fixed scale-out, set once at the start."""

    scaleout: int
    name: str = ""
    sync_interval_s: int | None = None

    def __post_init__(self) -> None:
        self.name = self.name or f"static:{self.scaleout}"

    def decide(self, job: SimulatedJob) -> int | None:
        return self.scaleout


class PolicyNameError(ValueError):
    """An unknown or malformed policy name on the command line."""


KNOWN = (
    "daedalus[:paper|cost_aware|horizon], static:N, hpa:TARGET, flink[:TARGET][:KEY=VALUE...], "
    "spark-da[:KEY=VALUE...], batch-ratio[:KEY=VALUE...], oracle, optimum[:RESCALES_PER_20MIN]"
)
MICROBATCH_ONLY = frozenset({"spark-da", "batch-ratio"})  # they read tasks and batches: engine microbatch only
ORACLE = "oracle"
OPTIMUM = "optimum"
OFFLINE = frozenset({ORACLE, OPTIMUM})  # computed from the whole trace, not built by make_policy


def is_offline(name: str) -> bool:
    """The oracle and the optima (`optimum`, `optimum:R`) are computed from the whole trace, not by make_policy."""
    return name.strip().partition(":")[0] in OFFLINE


def optimum_rescale_limit(name: str) -> float | None:
    """`optimum:R` -> R, the most rescales per 20 minutes it may make on average; `optimum` -> None (no limit)."""
    kind, _, arg = name.strip().partition(":")
    if kind != OPTIMUM:
        raise PolicyNameError(f"policy {name!r} is not an optimum")
    return float(_number(name, arg, float, 0.0, 1000.0)) if arg else None


def _number(
    name: str, arg: str, kind: Callable[[str], float | int], low: float, high: float, *, low_open: bool = False
) -> float | int:
    try:
        value = kind(arg)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise PolicyNameError(f"policy {name!r}: {arg!r} is not {what}") from None
    # `not (...)` so that NaN, which fails every comparison, is refused too.
    if not (low < value <= high if low_open else low <= value <= high):
        raise PolicyNameError(f"policy {name!r}: {value} is outside {'(' if low_open else '['}{low:g}, {high:g}]")
    return value


def _boolean(name: str, key: str, raw: str) -> bool:
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise PolicyNameError(f"policy {name!r}: {key}={raw[:20]!r} is not true or false")


def make_policy(name: str, config: Config) -> Policy:
    """A policy from its CLI name (not the oracle or the optimum, which are computed offline)."""
    kind, _, arg = name.strip().partition(":")
    limit = config.controller.max_scaleout
    if limit == 0:  # a caller's slip, not the user's: sim.evaluate.controller_config sets it from the job model
        raise ValueError("controller.max_scaleout 0 (the topic's partition count): resolve it with controller_config")
    if kind == "static" and arg:
        # Above the limit the simulated job would clamp it, and the row would carry a name it did not run.
        return StaticPolicy(int(_number(name, arg, int, config.controller.min_scaleout, limit)), name=name)
    if kind == "hpa" and arg:
        from daedalus_spark.sim.hpa import HpaPolicy

        return HpaPolicy(
            target_ratio=float(_number(name, arg, float, 0.01, 1.0)),
            name=name,
            min_scaleout=config.controller.min_scaleout,
            max_scaleout=limit,
        )
    if kind == "flink":
        from daedalus_spark.sim.flink import FlinkPolicy

        settings = _flink_settings(name, arg)
        return FlinkPolicy(settings, name=name, min_scaleout=config.controller.min_scaleout, max_scaleout=limit)
    if kind in MICROBATCH_ONLY:
        return _spark_policy(name, kind, arg, config)
    if kind == "daedalus":  # daedalus:PLANNER runs the controller with that planner
        from daedalus_spark.plan.registry import PLANNERS
        from daedalus_spark.sim.daedalus import DaedalusPolicy

        if arg and arg not in PLANNERS:
            raise PolicyNameError(f"unknown policy {name!r} (known: {KNOWN})")
        if not arg:
            return DaedalusPolicy(config)
        controller = config.controller.model_copy(update={"planner": arg})
        return DaedalusPolicy(config.model_copy(update={"controller": controller}), name=name)
    raise PolicyNameError(f"unknown policy {name!r} (known: {KNOWN})")


# Flink settings that may be 0 (0 disables catch-up / restart-time allowance), and bounds tighter than a week.
_FLINK_MAY_BE_ZERO = frozenset({"catch_up_duration_s", "restart_time_s", "utilization_boundary_ratio"})
_FLINK_MAX = {"target_utilization_ratio": 1.0, "utilization_boundary_ratio": 1.0, "scale_down_max_factor": 1.0}


def _flink_settings(name: str, arg: str) -> FlinkSettings:
    """`flink`, `flink:0.8` (target utilization) or `flink:KEY=VALUE:KEY=VALUE` over FlinkSettings' fields."""
    from daedalus_spark.sim.flink import FlinkSettings

    values: dict[str, float | int | bool] = {}
    fields = FlinkSettings.__dataclass_fields__
    for part in filter(None, arg.split(":")):
        key, eq, raw = part.partition("=")
        if not eq:
            key, raw = "target_utilization_ratio", part
        if key not in fields:
            raise PolicyNameError(f"policy {name!r}: unknown setting {key!r} (known: {', '.join(fields)})")
        default = getattr(FlinkSettings(), key)
        if key in values:
            raise PolicyNameError(f"policy {name!r}: {key} given twice")
        if isinstance(default, bool):
            values[key] = _boolean(name, key, raw)
        else:
            # Intervals and windows of 0 divide by zero or never tick; the ratios have their own ranges below.
            low_open = key not in _FLINK_MAY_BE_ZERO
            values[key] = _number(name, raw, type(default), 0, _FLINK_MAX.get(key, 86400 * 7), low_open=low_open)
    if not 0 < float(values.get("target_utilization_ratio", 0.7)) <= 1:
        raise PolicyNameError(f"policy {name!r}: target utilization must be in (0, 1]")
    return FlinkSettings(**values)  # type: ignore[arg-type]


def needs_microbatch(name: str) -> bool:
    """Spark's own autoscalers read tasks and batches, which only the micro-batch job model has."""
    return name.strip().partition(":")[0] in MICROBATCH_ONLY


def _spark_policy(name: str, kind: str, arg: str, config: Config) -> Policy:
    """`spark-da[:KEY=VALUE...]` or `batch-ratio[:KEY=VALUE...]`; min/max executors default to the controller's."""
    from daedalus_spark.plan.batchratio import BatchRatioSettings
    from daedalus_spark.sim.batchratio import BatchRatioPolicy
    from daedalus_spark.sim.sparkda import DynamicAllocationSettings, SparkDaPolicy

    low, high = config.controller.min_scaleout, config.controller.max_scaleout
    defaults: dict[str, Any] = {"min_executors": low, "max_executors": high}
    if kind == "spark-da":
        given = _key_values(name, arg, DynamicAllocationSettings, low, high)
        if "scheduler_backlog_timeout_s" in given:  # Spark: the sustained timeout defaults to the first one
            given.setdefault("sustained_backlog_timeout_s", given["scheduler_backlog_timeout_s"])
        da = DynamicAllocationSettings(**{**defaults, **given})
        return SparkDaPolicy(da, name=name)
    br = BatchRatioSettings(**{**defaults, **_key_values(name, arg, BatchRatioSettings, low, high)})
    if br.scaling_up_ratio <= br.scaling_down_ratio:
        raise PolicyNameError(f"policy {name!r}: scaling_up_ratio must exceed scaling_down_ratio")
    return BatchRatioPolicy(br, name=name)


def _key_values(name: str, arg: str, settings: type, low: int, high: int) -> dict[str, Any]:
    """KEY=VALUE parts over a settings dataclass: executors within the controller's bounds, ratios positive,
    timeouts and intervals positive up to a week (shuffle_tracking_timeout_s may be `inf`)."""
    values: dict[str, Any] = {}
    fields = settings.__dataclass_fields__  # type: ignore[attr-defined]
    for part in filter(None, arg.split(":")):
        key, eq, raw = part.partition("=")
        if not eq or key not in fields:
            raise PolicyNameError(f"policy {name!r}: {part[:40]!r} is not KEY=VALUE (keys: {', '.join(fields)})")
        if key in values:
            raise PolicyNameError(f"policy {name!r}: {key} given twice")
        default = getattr(settings(), key)
        if isinstance(default, bool):
            values[key] = _boolean(name, key, raw)
        elif key.endswith("_executors"):
            values[key] = _number(name, raw, int, low, high)
        elif key.endswith("_ratio"):  # Spark: executorAllocationRatio in (0, 1]; the scaling ratios > 0
            values[key] = _number(name, raw, float, 0.0, 1.0 if key == "allocation_ratio" else 10.0, low_open=True)
        else:
            limit = math.inf if key == "shuffle_tracking_timeout_s" else 86400 * 7
            values[key] = _number(name, raw, type(default), 0, limit, low_open=True)
    lowest, highest = values.get("min_executors", low), values.get("max_executors", high)
    if lowest > highest:
        raise PolicyNameError(f"policy {name!r}: min_executors {lowest} exceeds max_executors {highest}")
    return values


def parse_policy_list(text: str, config: Config) -> list[str]:
    """Validate a comma-separated policy list; returns the names (the oracle and optimum included if asked for)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise PolicyNameError(f"no policies given (known: {KNOWN})")
    if len(set(names)) != len(names):
        raise PolicyNameError(f"policy listed twice in {text!r}")
    for name in names:
        if name.strip().partition(":")[0] == OPTIMUM:
            optimum_rescale_limit(name)
        elif name.strip() != ORACLE:
            make_policy(name, config)  # cheap for every policy (daedalus builds its loop on the first decision)
    return names
