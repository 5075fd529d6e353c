"""Simulation: the simulated job's settings (capacity, skew, downtime, checkpoints, micro-batches, in-place rescales),
validated at the boundary; packaged profiles (`local`, `kubernetes`) by name."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from daedalus_spark.config import ConfigError, load_model, parse_model


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


class DowntimeModel(_Model):
    """How long a rescale stops processing: uniform in [low_s, high_s] (equal bounds give a fixed downtime). Also the
    shape of the in-place rescale's durations (registration, stall, leave)."""

    low_s: float = Field(30, ge=0, le=3600, description="Shortest duration (s).")
    high_s: float = Field(60, ge=0, le=3600, description="Longest duration (s).")

    @model_validator(mode="after")
    def _ordered(self) -> DowntimeModel:
        if self.low_s > self.high_s:
            raise ValueError(f"low_s ({self.low_s}) must not exceed high_s ({self.high_s})")
        return self


class MicroBatchModel(_Model):
    """Spark's micro-batch execution (engine: microbatch): a trigger, a fixed cost per batch, one task per source
    partition with data, run in waves over the executors' cores (sim/waves.py)."""

    trigger_s: float = Field(default=1.0, gt=0, le=3600, description="Processing-time trigger interval (s).")
    batch_overhead_s: float = Field(
        default=0.2, ge=0, le=3600, description="Fixed cost of every batch: driver planning, offsets, commit (s)."
    )
    task_overhead_s: float = Field(
        default=0.02, ge=0, le=3600, description="Fixed cost of every task: launch, setup (s)."
    )
    max_offsets_per_trigger: int | None = Field(
        default=None,
        ge=1,
        le=10**15,
        description="Most records one batch takes, over all partitions in proportion to their backlog, as Kafka's "
        "maxOffsetsPerTrigger (None: unbounded).",
    )
    cores_per_executor: int = Field(default=1, ge=1, le=256, description="Task slots of each executor.")


class InPlaceRescaleModel(_Model):
    """An in-place rescale (rescale: in_place): executors join and leave a running application."""

    registration: DowntimeModel = Field(
        default=DowntimeModel(low_s=10, high_s=40),
        description="From the request until a new executor is registered and can take tasks; idle meanwhile.",
    )
    stall: DowntimeModel = Field(
        default=DowntimeModel(low_s=5, high_s=15),
        description="State moving to a new executor in the first batch it takes: CPU busy, no records; that batch "
        "does not commit before the stall ends.",
    )
    leave: DowntimeModel = Field(
        default=DowntimeModel(low_s=2, high_s=10),
        description="From a kill until the driver retries the killed executor's unfinished tasks elsewhere.",
    )
    warmup_s: float = Field(
        default=0.0,
        ge=0,
        le=3600,
        description="After its stall a new executor runs its tasks at `warmup_capacity_ratio` of its speed this long "
        "(JIT compilation on a small CPU quota).",
    )
    warmup_capacity_ratio: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="A new executor's speed while it warms up, as a share of its speed when warm.",
    )


class StartupModel(_Model):
    """The query's start (engine: microbatch): the load begins before the query's first batch, and that batch runs on
    cold executors and a cold driver."""

    query_start: DowntimeModel = Field(
        default=DowntimeModel(low_s=0, high_s=0),
        description="From the load's start until the query's first batch starts (the first trigger tick after it); "
        "records arriving meanwhile wait for that batch.",
    )
    first_batch_stall: DowntimeModel = Field(
        default=DowntimeModel(low_s=0, high_s=0),
        description="Every initial executor's stall in the query's first batch, as a joining executor's "
        "`in_place.stall` (CPU busy, no records; the batch does not commit before it ends): JIT, Python workers, "
        "the state store's creation.",
    )


class JobModel(_Model):
    """The simulated Spark Structured Streaming job on Kubernetes reading from Kafka."""

    engine: Literal["continuous", "microbatch"] = Field(
        "continuous",
        description="continuous: an ideal fluid job (capacity linear in executors, no per-batch cost); microbatch: "
        "Spark's micro-batches, task waves and per-batch costs (the `microbatch` settings).",
    )
    rescale: Literal["restart", "in_place"] = Field(
        "restart",
        description="restart: stop, downtime, replay from the checkpoint (a driver restart); in_place: executors "
        "join and leave the running application (`in_place` settings; needs engine microbatch).",
    )
    microbatch: MicroBatchModel = MicroBatchModel()
    in_place: InPlaceRescaleModel = InPlaceRescaleModel()
    startup: StartupModel | None = Field(
        None, description="The query's start (needs engine microbatch; None: its first batch starts at once, warm)."
    )
    executor_capacity_per_s: float | None = Field(
        None,
        gt=0,
        le=1e12,
        allow_inf_nan=False,
        description="Records/s one executor processes at full utilization (microbatch: while its cores run tasks, "
        "task overheads aside) (None: derived from the trace peak so that `reference_scaleout` executors carry "
        "peak x capacity_headroom_ratio; microbatch: at steady state, sim/waves.py).",
    )
    reference_scaleout: int = Field(12, ge=1, le=10000, description="Scale-out that just carries the peak.")
    capacity_headroom_ratio: float = Field(1.1, ge=0.5, le=10, description="Reference capacity / trace peak.")
    partitions: int = Field(24, ge=1, le=100000, description="Kafka partitions; caps useful scale-out.")
    topic: str = Field("events", min_length=1, max_length=200, description="Kafka topic (its hash places tasks).")
    partition_assignment: Literal["kafka", "any_core"] = Field(
        "kafka",
        description="How tasks land on executors: kafka (pinned at floorMod(TopicPartition hash, n), as Spark's "
        "Kafka source prefers) or any_core (longest task first to the least-loaded executor).",
    )
    partition_weights: tuple[float, ...] | None = Field(
        None,
        strict=False,
        description="Share of the records on each partition, one per partition (normalized), instead of Zipf keys "
        "hashed onto partitions (e.g. measured partition rates; 0 = a partition without data).",
    )
    keys: int = Field(1000, ge=1, le=1_000_000, description="Distinct keys hashed onto partitions.")
    zipf_exponent: float = Field(0.5, ge=0, le=5, description="Key popularity ~ 1/rank^s (0: uniform keys).")
    skew_seed: int = Field(7, ge=0, description="Seed of the key-to-partition hash.")
    # A YAML list is fine here (strict mode alone would want a tuple); each index is still a strict integer.
    slow_executors: tuple[StrictInt, ...] = Field((), strict=False, description="Executors (0-based) that are slow.")
    slow_executor_capacity_ratio: float = Field(0.7, gt=0, le=1, description="Capacity of a slow executor.")
    utilization_signal: Literal["cpu", "busy_time"] | None = Field(
        None, description="Signal emitted as utilization (None: the controller config's utilization_signal)."
    )
    cpu_idle_ratio: float = Field(0.1, ge=0, lt=1, description="CPU of an idle executor (measured: ~0.08-0.12).")
    utilization_noise_ratio: float = Field(0.02, ge=0, le=0.5, description="Stddev of utilization noise.")
    downtime_scale_out: DowntimeModel = DowntimeModel(low_s=30, high_s=60)
    downtime_scale_in: DowntimeModel = DowntimeModel(low_s=15, high_s=30)
    checkpoint_interval_s: float = Field(
        10,
        ge=0,
        le=3600,
        description="Replay after a restart: records processed since the last checkpoint (checkpoints at multiples).",
    )
    base_latency_s: float = Field(0.5, ge=0, le=3600, description="Latency of a record that does not wait.")
    initial_scaleout: int | None = Field(None, ge=1, description="Executors at t=0 (None: max_scaleout).")

    @model_validator(mode="after")
    def _consistent(self) -> JobModel:
        if self.rescale == "in_place" and self.engine != "microbatch":
            raise ValueError("rescale: in_place needs engine: microbatch (a continuous job only restarts)")
        if self.startup is not None and self.engine != "microbatch":
            raise ValueError("startup needs engine: microbatch (a continuous job has no batches)")
        weights = self.partition_weights
        if weights is not None:
            if len(weights) != self.partitions:
                raise ValueError(f"partition_weights has {len(weights)} values for {self.partitions} partitions")
            if not all(math.isfinite(v) and v >= 0 for v in weights) or sum(weights) <= 0:
                raise ValueError("partition_weights must be finite, non-negative and not all 0")
        return self

    def executor_capacity_for(self, peak_per_s: float, unit_capacity_at_reference: float) -> float:
        """Per-executor capacity: explicit, or so that the reference scale-out carries peak x headroom."""
        if self.executor_capacity_per_s is not None:
            return self.executor_capacity_per_s
        return max(peak_per_s, 1.0) * self.capacity_headroom_ratio / unit_capacity_at_reference


class JobModelError(ConfigError):
    """A job model that cannot be used; each line names the YAML path of one problem."""

    kind = "job model"


def parse_job_model(data: Any, source: str = "job model") -> JobModel:
    return parse_model(JobModel, data, source, JobModelError)


PROFILES_PACKAGE = "daedalus_spark.sim"
PROFILES_DIR = "profiles"


def profile_names() -> list[str]:
    """The packaged job-model profiles (sim/profiles/*.yaml), by name."""
    root = resources.files(PROFILES_PACKAGE).joinpath(PROFILES_DIR)
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def _looks_like_a_name(text: str) -> bool:
    return "/" not in text and "\\" not in text and not text.endswith((".yaml", ".yml", ".json"))


def load_job_model(path: str | Path | None) -> JobModel:
    """Read a job-model YAML, or a packaged profile by name (`local`, `kubernetes`); None gives the defaults. A file
    of that name wins over a profile; a name that is neither is an error naming the profiles."""
    if path is None:
        return load_model(JobModel, None, JobModelError)
    text = str(path)
    if not Path(text).exists() and _looks_like_a_name(text):
        names = profile_names()
        if text not in names:
            raise JobModelError(
                text, [f"no such file, and no job-model profile of that name (profiles: {', '.join(names)})"]
            )
        profile = resources.files(PROFILES_PACKAGE).joinpath(PROFILES_DIR, f"{text}.yaml")
        with resources.as_file(profile) as file:
            return load_model(JobModel, file, JobModelError)
    return load_model(JobModel, path, JobModelError)
