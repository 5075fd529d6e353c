"""Simulation: the scaling policies compared side by side, behind one interface, and their names on the CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from daedalus_spark.config import Config
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

    workers: int
    name: str = ""
    sync_interval_s: int | None = None

    def __post_init__(self) -> None:
        self.name = self.name or f"static:{self.workers}"

    def decide(self, job: SimulatedJob) -> int | None:
        return self.workers


class PolicyNameError(ValueError):
    """An unknown or malformed policy name on the command line."""


KNOWN = "daedalus, static:N, hpa:TARGET, flink[:TARGET], oracle"
ORACLE = "oracle"


def _number(name: str, arg: str, kind: Callable[[str], float | int], low: float, high: float) -> float | int:
    try:
        value = kind(arg)
    except ValueError:
        raise PolicyNameError(f"policy {name!r}: {arg!r} is not a number") from None
    if not low <= value <= high:
        raise PolicyNameError(f"policy {name!r}: {value} is outside {low}..{high}")
    return value


def make_policy(name: str, config: Config) -> Policy:
    """A policy from its CLI name (not the oracle, which is computed offline)."""
    kind, _, arg = name.strip().partition(":")
    limit = config.controller.max_scaleout
    if kind == "static" and arg:
        return StaticPolicy(int(_number(name, arg, int, 1, 10000)), name=name)
    if kind == "hpa" and arg:
        from daedalus_spark.sim.hpa import HpaPolicy

        return HpaPolicy(target_ratio=float(_number(name, arg, float, 0.01, 1.0)), name=name,
                         min_scaleout=config.controller.min_scaleout, max_scaleout=limit)
    if kind == "flink":
        from daedalus_spark.sim.flink import FlinkPolicy, FlinkSettings

        settings = FlinkSettings(target_utilization_ratio=float(_number(name, arg, float, 0.01, 1.0))) \
            if arg else FlinkSettings()
        return FlinkPolicy(settings, name=name, min_scaleout=config.controller.min_scaleout, max_scaleout=limit)
    if kind == "daedalus" and not arg:
        from daedalus_spark.sim.daedalus import DaedalusPolicy

        return DaedalusPolicy(config)
    raise PolicyNameError(f"unknown policy {name!r} (known: {KNOWN})")


def parse_policy_list(text: str, config: Config) -> list[str]:
    """Validate a comma-separated policy list; returns the names (the oracle included if asked for)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise PolicyNameError(f"no policies given (known: {KNOWN})")
    if len(set(names)) != len(names):
        raise PolicyNameError(f"policy listed twice in {text!r}")
    for name in names:
        if name != ORACLE:
            _validate_only(name, config)
    return names


def _validate_only(name: str, config: Config) -> None:
    kind = name.partition(":")[0]
    if kind == "daedalus" and name == "daedalus":
        return  # building it would need the controller; the name is fine
    make_policy(name, config)
