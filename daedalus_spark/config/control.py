"""Configuration: the sections that steer the decision — controller, capacity, forecast, recovery."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import field_validator

from daedalus_spark.config.fields import OneOf, Section, nonblank, openable_path, setting


def _planner_names() -> tuple[str, ...]:
    """The planners plan/registry.py names (read when a value is checked: the registry sits above the configuration,
    and is the one list of them)."""
    from daedalus_spark.plan.registry import PLANNERS

    return tuple(PLANNERS)


_PLANNER = OneOf(_planner_names, "planner")


def _registered_planner(value: str) -> str:
    return _PLANNER.check(value)


class HorizonPlannerConfig(Section):
    """Keys only the horizon planner reads (plan/horizon.py): `controller.horizon.*`."""

    upper_weight_ratio: float = setting(
        0.5,
        "ratio",
        "The most headroom the plan provisions above the forecast's point, as a share of the way to its interval's "
        "upper bound (0: the point, 1: the upper bound). Within it, headroom is bought only where a load at the upper "
        "bound, seen at the next tick, would break the latency objective (docs/planning.md).",
        ge=0,
        le=1,
    )
    target_share_ratio: float = setting(
        0.5,
        "ratio",
        "The plan keeps latency within this share of controller.target_latency_s and every recovery within this "
        "share of controller.target_recovery_s; the rest is left for what the forecast and the learned capacities "
        "and downtimes get wrong.",
        gt=0,
        le=1,
    )


class CostAwarePlannerConfig(Section):
    """Keys only the cost_aware planner reads (plan/cost.py): `controller.cost_aware.*`."""

    scale_in_lookback_s: float = setting(
        600,
        "s",
        "No scale-in to a capacity the observed workload rose back above within this window (a forecast that missed "
        "a 10-min cycle made paper scale in and out every 6 min; docs/planning.md). 0 = off.",
        ge=0,
        le=86400,
    )


class ControllerConfig(Section):
    loop_interval_s: float = setting(60, "s", "How often the MAPE-K loop runs.", ge=5, le=3600)
    min_scaleout: int = setting(1, "executors", "Fewest executors the controller may set.", ge=1, le=10000)
    max_scaleout: int = setting(
        0,
        "executors",
        "Most executors the controller may set. 0 = the source topic's partition count, as the monitor's first "
        "observation that lists the partitions reports it (raised if the topic gains partitions; at most "
        "agent.max_executors with actuator.kind agent): until then the controller does not scale. A number wins; "
        "above the partition count it is logged once, since the executors beyond it get no Kafka partition "
        "(Spark's Kafka source reads each partition in one task unless minPartitions says otherwise).",
        ge=0,
        le=10000,
    )
    target_recovery_s: float = setting(
        600, "s", "Longest acceptable time from a rescale's stop until the backlog is worked off.", gt=0, le=86400
    )
    target_latency_s: float = setting(
        30,
        "s",
        "End-to-end latency the job may have outside a recovery: the consumer lag in seconds of input. A micro-batch "
        "job behind its trigger takes larger batches and keeps up at a latency of a few seconds, so the controller "
        "sizes each scale-out for the rate it carries within this latency (analyze/batches.py), and a run passes when "
        "every second outside a recovery has latency within it and every rescale recovers within target_recovery_s.",
        gt=0,
        le=86400,
    )
    checkpoint_interval_s: float = setting(
        10,
        "s",
        "Streaming checkpoint (micro-batch commit) interval; the worst-case replay after a restart.",
        ge=0,
        le=3600,
    )
    recent_rescale_window_s: float = setting(
        600,
        "s",
        "After a rescale this recent, keep the scale-out while it still carries the load (Alg. 1).",
        ge=0,
        le=86400,
    )
    cooldown_s: float = setting(180, "s", "No new rescale this soon after the previous one.", ge=0, le=86400)
    scale_in_lag_s: float = setting(
        60,
        "s",
        "A scale-in waits while the consumer lag exceeds this many seconds of the smaller scale-out's capacity (still "
        "catching up). 1 = the paper's rule (capacity below the lag), which a micro-batch job never passes: it always "
        "holds a batch or more of lag (docs/planning.md).",
        ge=0,
        le=86400,
    )
    planner: Annotated[str, _PLANNER] = setting(
        "horizon",
        "-",
        "paper: Algorithm 1 as published. cost_aware: Algorithm 1 on the forecast's upper bound, and a scale-in only "
        "if the forecast says it outlasts the cool-down and the executor-seconds it saves exceed its downtime and "
        "catch-up. horizon: the cheapest schedule over the forecast that keeps latency and every recovery within "
        "the target (the offline optimum's DP), of which the first step is applied (docs/planning.md). "
        "batch_ratio: not ours but Spark's DStreams batch-duration rule, a baseline to compare against, one scaling "
        "round per tick (plan/batchratio.py).",
    )
    horizon: HorizonPlannerConfig = setting(
        HorizonPlannerConfig(), "-", "The horizon planner's own keys (read only with planner horizon)."
    )
    cost_aware: CostAwarePlannerConfig = setting(
        CostAwarePlannerConfig(), "-", "The cost_aware planner's own keys (read only with planner cost_aware)."
    )
    max_rescales_per_hour: float = setting(
        3,
        "rescales",
        "cost_aware and horizon: rescale budget, a token bucket refilled at this rate and holding at most this many: "
        "every applied rescale takes a token, and a scale-in waits for a whole one (scale-outs never wait: safety "
        "first; they may leave the bucket in debt). The bucket fills from empty at the oldest tick remembered, so a "
        "fresh controller earns its budget. horizon plans with the tokens plus the refill over its horizon. "
        "3 = one per 20 minutes on average. 0 = off.",
        ge=0,
        le=3600,
    )
    warmup_s: float = setting(
        60, "s", "Samples from this soon after a (re)start are not learned from (JIT, state reload).", ge=0, le=3600
    )
    utilization_signal: Literal["cpu", "busy_time"] = setting(
        "cpu", "-", "Executor utilization: CPU ratio (the paper's) or Spark busy time per core-second."
    )
    knowledge_path: str = setting(
        "daedalus-knowledge.sqlite", "path", "SQLite file holding everything learned; survives restarts."
    )
    backfill_s: float = setting(
        86400,
        "s",
        "At start, read this much of the job's recent past from Prometheus (the monitor's queries at its step) and "
        "learn capacity, the batch line and the forecast from it before the first tick; after a restart, only what "
        "came after the stored knowledge. Gaps are reported and never crossed; Prometheus's retention bounds it. "
        "Without monitor.prometheus_url nothing is read. 0 = off (a cold start).",
        ge=0,
        le=30 * 86400,
    )

    _planner = field_validator("planner")(_registered_planner)
    _path = field_validator("knowledge_path")(nonblank)
    _path_chars = field_validator("knowledge_path")(openable_path)


class CapacityConfig(Section):
    expected_max_utilization_ratio: float = setting(
        1.0,
        "ratio",
        "Utilization an executor reaches when saturated; capacity is read off the regression there.",
        gt=0.1,
        le=1.0,
    )
    partitions: int = setting(
        0,
        "partitions",
        "Partitions of the source topic, used until the monitor reports each partition's rate. 0 = the topic's "
        "partition count once an observation lists the partitions (unknown until then). An executor with "
        "ceil(partitions / n) of them limits scale-out n, so capacities of unseen scale-outs follow that, not n alone.",
        ge=0,
        le=100000,
    )
    partition_assignment: Literal["kafka", "any_core"] = setting(
        "kafka",
        "-",
        "How Spark places the source's tasks, which decides the busiest executor of an unseen scale-out: kafka "
        "(Spark's Kafka source pins each partition to the executor at floorMod(hash, n)) or any_core (a source "
        "without preferred locations, like the local log: tasks go to any free core).",
    )
    unobserved_margin_ratio: float = setting(
        0.1,
        "ratio",
        "Capacities extrapolated to scale-outs never observed are discounted by this much: the partitions' shares "
        "are averages and the new executors may differ (at 0.05 the simulator's flash crowds caught the job at a "
        "scale-out 8 % above the load: 2 recovery-target misses; docs/planning.md).",
        ge=0,
        le=0.5,
    )
    min_points: int = setting(
        5,
        "samples",
        "Fewer samples than this and an executor's capacity is throughput / utilization instead.",
        ge=2,
        le=100000,
    )
    min_correlation_ratio: float = setting(
        0.6,
        "ratio",
        "An executor's own regression is used only when throughput and utilization correlate this well; "
        "otherwise the regression pooled over all executors (noise flattens a slope fitted on a narrow range).",
        ge=0,
        le=1,
    )
    min_utilization_stddev_ratio: float = setting(
        0.01,
        "ratio",
        "Below this spread of utilization the slope is not trusted (ratio estimate instead).",
        ge=0,
        le=0.5,
    )
    executor_warmup_s: float = setting(
        30,
        "s",
        "An executor that joins while the controller watches is learned from only once it has read records for "
        "this long: before that its JVM starts, it registers and state partitions load (CPU busy, no records; "
        "docs/spark.md). Until then it counts as its peers.",
        ge=0,
        le=3600,
    )
    outlier_stddevs: float = setting(
        3,
        "stddevs",
        "Once an executor's fit is trusted, a sample this many residual standard deviations below it (a stall: "
        "CPU busy, few records) is not learned. 0 = learn every sample.",
        ge=0,
        le=100,
    )
    max_change_ratio: float = setting(
        0.5,
        "ratio",
        "The current scale-out's capacity moves at most this far (relative) from what the previous tick said, "
        "unless the change holds for `change_confirm_ticks` ticks in a row or a backlog shows the job doing it; "
        "every held change is a note on the decision. 0 = no bound.",
        ge=0,
        le=100,
    )
    change_confirm_ticks: int = setting(
        2, "ticks", "Ticks in a row a change beyond max_change_ratio must hold to be believed.", ge=1, le=1000
    )
    backlog_floor_lag_s: float = setting(
        10,
        "s",
        "A window that ends with more lag than this many seconds of its throughput was working off a backlog: "
        "its throughput is what the job can do at that scale-out with large batches (the catch-up capacity), a "
        "floor for it and a check on the regression. 0 = off.",
        ge=0,
        le=86400,
    )
    trigger_interval_s: float = setting(
        0,
        "s",
        "The query's processing-time trigger. With it and the query's batch progress, steady-state capacity is "
        "what fits one trigger interval per batch (sizing), apart from catch-up capacity with large batches "
        "(recovery). 0 = unknown or as fast as possible: sizing from the utilization regression alone.",
        ge=0,
        le=3600,
    )


class ForecastConfig(Section):
    horizon_s: float = setting(900, "s", "How far ahead the workload is forecast.", ge=60, le=86400)
    resolution_s: float = setting(
        10,
        "s",
        "The workload is averaged over steps this long before ARIMA sees it (1-s data is slow).",
        ge=1,
        le=600,
    )
    history_window_s: float = setting(
        3600, "s", "How much recent workload an (re)fit of auto-ARIMA uses.", ge=300, le=7 * 86400
    )
    min_history_s: float = setting(
        600, "s", "Until this much history exists, the linear forecast is used.", ge=60, le=86400
    )
    seasonal_period_s: float = setting(0, "s", "Seasonal period for auto-ARIMA (0 = non-seasonal).", ge=0, le=86400)
    wape_threshold_ratio: float = setting(
        0.15,
        "ratio",
        "A previous forecast with a WAPE above this was poor; the linear fallback is used.",
        gt=0,
        le=10,
    )
    poor_forecasts_before_refit: int = setting(
        15, "ticks", "This many poor forecasts in a row trigger a background refit.", ge=1, le=10000
    )
    linear_window_s: float = setting(
        300, "s", "The linear fallback projects the slope of this much recent workload.", ge=10, le=86400
    )
    refit_interval_s: float = setting(
        900,
        "s",
        "A fresh auto-ARIMA search on the latest history_window_s this often, in the background (0 = only after a "
        "poor streak): an order chosen on the first minutes goes stale.",
        ge=0,
        le=7 * 86400,
    )
    interval_level: float = setting(
        0.9,
        "ratio",
        "Share of actual workloads the forecast's upper bound should cover (one-sided level of the prediction "
        "interval the planner provisions for).",
        gt=0.5,
        lt=1,
    )
    select_by_horizon: bool = setting(
        False,
        "-",
        "Each auto-ARIMA search keeps the candidate with the lowest WAPE over horizon_s from recent origins in the "
        "window (what the planner pays for), not the lowest AIC.",
    )
    seasonality: bool = setting(
        True,
        "-",
        "Detect a period in the recent history (autocorrelation) and model it when seasonal_period_s is 0.",
    )
    background_refit: bool = setting(
        True, "-", "Refit in a background process (false: refit inside the tick; the simulator's choice)."
    )


class RecoveryConfig(Section):
    initial_downtime_scale_out_s: float = setting(
        30, "s", "Downtime of a scale-out until one has been measured.", ge=0, le=3600
    )
    initial_downtime_scale_in_s: float = setting(
        15, "s", "Downtime of a scale-in until one has been measured.", ge=0, le=3600
    )
    scale_out_warmup_s: float = setting(
        0,
        "s",
        "After a scale-out's downtime its new executors run below their capacity this long (JIT compilation on a "
        "small CPU quota): plans count on the old capacity plus `scale_out_warmup_capacity_ratio` of what the "
        "scale-out adds until then. 0 = at full capacity at once.",
        ge=0,
        le=3600,
    )
    scale_out_warmup_capacity_ratio: float = setting(
        0.5, "ratio", "Share of what a scale-out adds that its new executors carry while they warm up.", ge=0, le=1
    )
    anomaly_threshold_stddevs: float = setting(
        1.0, "stddevs", "(workload - throughput) further than this from its mean is anomalous.", gt=0, le=10
    )
    anomaly_halflife_s: float = setting(
        120,
        "s",
        "Half-life of the running mean/variance of (workload - throughput): old regimes fade out.",
        ge=1,
        le=86400,
    )
    anomaly_min_relative_gap_ratio: float = setting(
        0.05,
        "ratio",
        "A gap below this share of the workload is never anomalous (absorbs metric skew).",
        ge=0,
        le=1,
    )
    stable_samples: int = setting(5, "samples", "Consecutive normal samples that end a recovery.", ge=1, le=3600)
    max_recovery_s: float = setting(
        3600, "s", "Stop measuring a recovery that has not ended after this long.", ge=60, le=86400
    )
    downtime_learning_ratio: float = setting(
        0.5, "ratio", "Weight of a newly measured downtime against the previous estimate.", gt=0, le=1
    )
