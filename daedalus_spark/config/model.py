"""Configuration: the whole config — knowledge retention and the checks across sections."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field, model_validator

from daedalus_spark.config.actuation import ActuatorConfig, AgentSettings, KubernetesConfig, RuntimeConfig
from daedalus_spark.config.control import CapacityConfig, ControllerConfig, ForecastConfig, RecoveryConfig
from daedalus_spark.config.demo import DemoConfig
from daedalus_spark.config.fields import Section, setting
from daedalus_spark.config.monitor import MonitorConfig, monitor_problem

HISTORY_LIMIT = 1000  # the newest decisions and recoveries the controller and `report` read back from a store
RESCALE_BUDGET_WINDOW_S = 3600.0  # the rescale budget's bucket refills in an hour: older rescales no longer count


class KnowledgeConfig(Section):
    retention_days: float = setting(
        30,
        "days",
        "Decisions and measured recoveries older than this (by tick time) are deleted from the store; the newest "
        f"{HISTORY_LIMIT} of each always stay (the controller and `report` read them back). Must cover the longest "
        "history window the planner reads (docs/hardening.md). 0 = no age bound.",
        ge=0,
        le=3650,
    )
    retention_rows: int = setting(
        100_000,
        "rows",
        "At most this many decisions, and this many recoveries, are kept in the store (the oldest go first). At least "
        f"{HISTORY_LIMIT} and one per loop interval over the longest history window. 0 = no row bound.",
        ge=0,
        le=1_000_000_000,
    )
    decision_log_max_bytes: int = setting(
        64 * 1024 * 1024,
        "bytes",
        "The decision log is rotated (renamed to .1, .1 to .2, ...: Python's logging.handlers naming) before a line "
        "would take it past this size. 0 = never rotated (grows without bound).",
        ge=0,
        le=1 << 40,
    )
    decision_log_backups: int = setting(
        3, "files", "Rotated decision logs kept beside the current one; the oldest is deleted.", ge=1, le=1000
    )


def history_windows(config: Config) -> dict[str, float]:
    """The history windows the planner and the forecaster read, by YAML path (seconds): retention must cover them."""
    c = config.controller
    windows = {
        "forecast.history_window_s": config.forecast.history_window_s,
        "controller.cost_aware.scale_in_lookback_s": c.cost_aware.scale_in_lookback_s,
        "controller.recent_rescale_window_s": c.recent_rescale_window_s,
        "controller.cooldown_s": c.cooldown_s,
    }
    if c.max_rescales_per_hour > 0:
        windows["controller.max_rescales_per_hour (its hour)"] = RESCALE_BUDGET_WINDOW_S
    return windows


def _retention_problem(config: Config) -> str:
    """Why the knowledge retention would delete history the planner or `report` still reads ('' if it does not)."""
    k = config.knowledge
    name, window_s = max(history_windows(config).items(), key=lambda item: item[1])
    if k.retention_days and k.retention_days * 86400 < window_s:
        days = math.ceil(window_s / 86400 * 1e4) / 1e4
        return (
            f"knowledge.retention_days ({k.retention_days:g} days) is shorter than {name} ({window_s:g} s), history "
            f"the planner reads: keep at least {days:g} days, or 0 for no age bound"
        )
    rows = max(HISTORY_LIMIT, math.ceil(window_s / config.controller.loop_interval_s))
    if k.retention_rows and k.retention_rows < rows:
        return (
            f"knowledge.retention_rows ({k.retention_rows}) is fewer than the {rows} rows the controller and `report` "
            f"read back (the newest {HISTORY_LIMIT}, and one decision per controller.loop_interval_s "
            f"({config.controller.loop_interval_s:g} s) over {name} ({window_s:g} s)): keep at least {rows}, or 0 for "
            "no row bound"
        )
    return ""


class Config(Section):
    # Keys that moved (old YAML path -> new): the old name still loads, with a warning naming both and the file.
    MOVED_KEYS: ClassVar[Mapping[str, str]] = {
        "controller.horizon_upper_weight_ratio": "controller.horizon.upper_weight_ratio",
        "controller.horizon_target_share_ratio": "controller.horizon.target_share_ratio",
        "controller.scale_in_lookback_s": "controller.cost_aware.scale_in_lookback_s",
    }

    # built when a Config is: its planner is checked against plan/registry.py, which imports the configuration
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    capacity: CapacityConfig = CapacityConfig()
    forecast: ForecastConfig = ForecastConfig()
    recovery: RecoveryConfig = RecoveryConfig()
    monitor: MonitorConfig = MonitorConfig()
    actuator: ActuatorConfig = ActuatorConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    agent: AgentSettings = AgentSettings()
    kubernetes: KubernetesConfig = KubernetesConfig()
    knowledge: KnowledgeConfig = KnowledgeConfig()
    demo: DemoConfig = DemoConfig()

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        c = self.controller
        if c.max_scaleout and c.min_scaleout > c.max_scaleout:  # 0: the topic's partition count (with_topic_partitions)
            raise ValueError(
                f"controller.min_scaleout ({c.min_scaleout}) must not exceed controller.max_scaleout ({c.max_scaleout})"
            )
        if self.agent.min_executors > self.agent.max_executors:
            raise ValueError(
                f"agent.min_executors ({self.agent.min_executors}) must not exceed agent.max_executors "
                f"({self.agent.max_executors})"
            )
        if self.forecast.resolution_s > self.forecast.horizon_s:
            raise ValueError("forecast.resolution_s must not exceed forecast.horizon_s")
        if not self.monitor.prometheus_url and not self.monitor.scrape_urls:
            raise ValueError("monitor: set prometheus_url or at least one of scrape_urls (nothing to observe)")
        if self.forecast.resolution_s != int(self.forecast.resolution_s):
            # Workload samples arrive per whole second; a fractional bucket would split them unevenly.
            raise ValueError(
                f"forecast.resolution_s must be a whole number of seconds, got {self.forecast.resolution_s}"
            )
        if self.monitor.step_s > c.loop_interval_s:
            raise ValueError(
                f"monitor.step_s ({self.monitor.step_s:g} s) must not exceed controller.loop_interval_s "
                f"({c.loop_interval_s:g} s): a tick's window would hold no sample"
            )
        # With max_scaleout 0 the most is the topic's partition count, held to agent.max_executors when it is known
        # (with_topic_partitions): here only the fewest has to lie within the agent's range.
        most = c.max_scaleout or c.min_scaleout
        if self.actuator.kind == "agent" and not (
            self.agent.min_executors <= c.min_scaleout and most <= self.agent.max_executors
        ):
            shown = c.max_scaleout or "the topic's partition count"
            raise ValueError(
                f"controller.min_scaleout..max_scaleout ({c.min_scaleout}..{shown}) must lie within "
                f"agent.min_executors..agent.max_executors ({self.agent.min_executors}..{self.agent.max_executors}): "
                "the agent refuses targets outside them"
            )
        problem = monitor_problem(self.monitor) or _retention_problem(self)
        if problem:
            raise ValueError(problem)
        return self


def planning_warnings(config: Config) -> tuple[str, ...]:
    """Settings that load but keep the horizon planner from seeing a need in time, one line each: a forecast shorter
    than a tick, a scale-out's downtime and its recovery target together. A rescale planned at the next tick cannot
    be followed to its recovery's end, so the plan holds until the load is nearly there (live demos with a 35-s
    downtime and a 60-s target, on the rise: with a 60-s horizon the plan held 1 executor throughout; at the same
    tick with 120 s it planned 3 from 40 s on)."""
    c = config.controller
    needed = c.loop_interval_s + config.recovery.initial_downtime_scale_out_s + c.target_recovery_s
    if c.planner != "horizon" or config.forecast.horizon_s >= needed:
        return ()
    return (
        f"forecast.horizon_s ({config.forecast.horizon_s:g} s) is shorter than controller.loop_interval_s + "
        f"recovery.initial_downtime_scale_out_s + controller.target_recovery_s ({needed:g} s): the horizon planner "
        "cannot follow a scale-out at the next tick to the end of its recovery, and plans it late",
    )


def with_topic_partitions(config: Config, partitions: int) -> tuple[Config, tuple[str, ...]]:
    """`config` with the settings left at 0 to follow the source topic set from its partition count, and what is
    worth a warning, one line each.

    controller.max_scaleout 0 becomes `partitions`, raised to controller.min_scaleout and, with actuator.kind agent,
    held to agent.max_executors (the agent refuses targets above it); capacity.partitions 0 becomes `partitions`.
    A max_scaleout set above `partitions` stays, with a warning: the executors beyond the partition count get no
    Kafka partition (Spark's Kafka source reads each partition in one task unless minPartitions says otherwise).
    """
    if partitions < 1:
        raise ValueError(f"a topic's partition count is at least 1, got {partitions}")
    c, warnings = config.controller, []
    update: dict[str, object] = {}
    if c.max_scaleout == 0:
        most = max(partitions, c.min_scaleout)
        if most > partitions:
            warnings.append(
                f"the source topic has {partitions} partitions, fewer than controller.min_scaleout ({c.min_scaleout}): "
                f"controller.max_scaleout is {most}; executors beyond {partitions} get no Kafka partition"
            )
        if config.actuator.kind == "agent" and most > config.agent.max_executors:
            warnings.append(
                f"the source topic has {partitions} partitions, more than agent.max_executors "
                f"({config.agent.max_executors}), which the agent accepts: controller.max_scaleout is "
                f"{config.agent.max_executors}"
            )
            most = config.agent.max_executors
        update["controller"] = c.model_copy(update={"max_scaleout": most})
    elif c.max_scaleout > partitions:
        warnings.append(
            f"controller.max_scaleout ({c.max_scaleout}) exceeds the source topic's partition count ({partitions}): "
            f"executors beyond {partitions} get no Kafka partition with Spark's default minPartitions"
        )
    if config.capacity.partitions == 0:
        update["capacity"] = config.capacity.model_copy(update={"partitions": partitions})
    return (config.model_copy(update=update) if update else config), tuple(warnings)
