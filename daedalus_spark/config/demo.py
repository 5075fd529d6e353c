"""Configuration: the live demo's job and load (`daedalus-spark demo`), sized from a calibration; the controller
ignores this section."""

from __future__ import annotations

from pydantic import field_validator

from daedalus_spark.config.fields import Section, setting


class DemoConfig(Section):
    cpus_per_executor: float = setting(
        0.25,
        "CPUs",
        "CPU quota (cgroup) of each standalone worker of the live demo, one 1-core executor each; "
        "controller.max_scaleout workers are started.",
        gt=0,
        le=64,
    )
    record_cost_rounds: int = setting(
        0,
        "rounds",
        "Extra CPU per line of the demo's WordCount: chained SHA-256 rounds over each line, results unchanged "
        "(workloads/pipeline.py), so that its per-record cost dominates its per-batch cost.",
        ge=0,
        le=100_000,
    )
    trace_scale: float = setting(
        0.015,
        "ratio",
        "The bundled WordCount trace's counts (5,000-40,000 per s) are multiplied by this and by the compression "
        "(trace seconds per demo second) to give the lines/s produced.",
        gt=0,
        le=1000,
    )
    trace_start_s: int = setting(
        0,
        "s",
        "The trace second the demo's load cycle starts at (its 3-hour cycle played from there).",
        ge=0,
        le=86400,
    )
    load_cycle_s: float = setting(
        480, "s", "One 3-hour cycle of the trace is played in this many seconds.", ge=10, le=86400
    )
    history_cycles: int = setting(
        0,
        "cycles",
        "Load cycles the topic had before the demo, written into the demo's Prometheus as kafka-exporter's offsets "
        "(Kafka source with Prometheus only); the controller reads them at start (controller.backfill_s). 0: the "
        "topic is new and the controller starts cold.",
        ge=0,
        le=100,
    )
    capacity_lines_per_s: list[float] = setting(
        [],
        "lines/s",
        "The calibration trace_scale was chosen from: the capacity at the latency objective at 1, 2, ... executors, "
        "the highest rate whose back-to-back batches keep every line within controller.target_latency_s, from the "
        "saturated throughput at two batch sizes (benchmarks/spark_capacity.py --experiment kafka prints it). Empty: "
        "not calibrated.",
    )

    capacity_live_share_ratio: float = setting(
        1.0,
        "ratio",
        "The share of capacity_lines_per_s the job keeps in the demo itself, where the generator, the broker and "
        "Prometheus share the machine with it (measured from a live run that loaded the maximum past it); the sizing "
        "rules use the capacities times this.",
        gt=0,
        le=1,
    )

    @field_validator("capacity_lines_per_s")
    @classmethod
    def _positive(cls, value: list[float]) -> list[float]:
        if any(not rate > 0 for rate in value):
            raise ValueError(f"every capacity must be > 0, got {value}")
        return value

    @property
    def capacity_in_demo_per_s(self) -> list[float]:
        """The calibrated capacities at the objective as the demo keeps them (times capacity_live_share_ratio)."""
        return [rate * self.capacity_live_share_ratio for rate in self.capacity_lines_per_s]
