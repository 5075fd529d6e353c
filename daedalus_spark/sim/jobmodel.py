"""Simulation: the simulated job's settings (capacity, skew, downtime, checkpoints), validated at the boundary."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from daedalus_spark.config import ConfigError, load_model, parse_model


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


class DowntimeModel(_Model):
    """How long a rescale stops processing: uniform in [low_s, high_s] (equal bounds give a fixed downtime)."""

    low_s: float = Field(30, ge=0, le=3600, description="Shortest downtime (s).")
    high_s: float = Field(60, ge=0, le=3600, description="Longest downtime (s).")

    @model_validator(mode="after")
    def _ordered(self) -> DowntimeModel:
        if self.low_s > self.high_s:
            raise ValueError(f"low_s ({self.low_s}) must not exceed high_s ({self.high_s})")
        return self


class JobModel(_Model):
    """The simulated Spark Structured Streaming job on Kubernetes reading from Kafka."""

    executor_capacity_per_s: float | None = Field(
        None,
        gt=0,
        le=1e12,
        allow_inf_nan=False,
        description="Records/s one executor processes at full utilization (None: derived from the "
        "trace peak so that `reference_scaleout` executors carry peak x capacity_headroom_ratio).",
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


def load_job_model(path: str | Path | None) -> JobModel:
    """Read a job-model YAML; None gives the defaults."""
    return load_model(JobModel, path, JobModelError)
