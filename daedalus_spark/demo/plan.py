"""Demo: what one demo run is sized as (DemoPlan: executors, load, autoscaler, source), apart from the run itself
(demo/live.py) so that the summary and the CLI read it without importing the run."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from daedalus_spark.config import Config, DemoConfig, load_config
from daedalus_spark.monitor.files import BUNDLED_TRACES, read_trace
from daedalus_spark.workloads.pacing import Pacer

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "deploy" / "demo.yaml"
TRACE = BUNDLED_TRACES["wordcount"]
SOURCES = ("kafka", "local")


@functools.cache
def shipped_config() -> Config:
    """deploy/demo.yaml, read once."""
    return load_config(DEMO_CONFIG)


def shipped_demo() -> DemoConfig:
    """The `demo:` section of deploy/demo.yaml: the job and load sized by the calibration in docs/demo.md."""
    return shipped_config().demo


def shipped_max_scaleout() -> int:
    """deploy/demo.yaml's controller.max_scaleout: the workers the demo starts."""
    return shipped_config().controller.max_scaleout


@dataclass(frozen=True)
class DemoPlan:
    """Sizes measured on this machine (docs/demo.md; the defaults are deploy/demo.yaml's `demo:` section): one
    1-core executor per standalone worker, each worker under a CPU quota."""

    max_scaleout: int = field(default_factory=shipped_max_scaleout)  # standalone workers started, one executor each
    cpus_per_executor: float = field(default_factory=lambda: shipped_demo().cpus_per_executor)
    record_cost_rounds: int = field(default_factory=lambda: shipped_demo().record_cost_rounds)
    partitions: int = 8
    trace: Path = TRACE
    trace_start_s: int = field(default_factory=lambda: shipped_demo().trace_start_s)
    trace_seconds: int = 10800  # one 3-hour load cycle of the WordCount trace...
    duration_s: float = field(default_factory=lambda: shipped_demo().load_cycle_s)  # ...played in 8 minutes
    scale: float = field(default_factory=lambda: shipped_demo().trace_scale)
    initial_executors: int = 2
    history_cycles: int = field(default_factory=lambda: shipped_demo().history_cycles)  # the topic's earlier cycles
    use_prometheus: bool = True
    autoscaler: str = "daedalus"  # one of AUTOSCALERS
    # Before the query starts, this many seconds of the load that precedes the cycle are written at once: its first
    # batch then runs on cold executors before the cycle begins, as a job in production has long since (25-30 s on
    # the machine the demo was sized on, 119 s on one where the job ran at 0.6-0.8 of that speed; docs/demo.md).
    warmup_s: float = 10.0
    drain_s: float = 120.0  # after the load cycle: how long the job may take to work off its lag before counting
    source: str = "kafka"  # one of SOURCES: a local Kafka broker, or the local partitioned log
    static_executors: int = 0  # autoscaler static: this many held (0: max_scaleout)

    @property
    def compression(self) -> float:
        return self.trace_seconds / self.duration_s

    def pacer(self) -> Pacer:
        """The generator's pacing of this plan's load cycle."""
        trace = read_trace(self.trace)[self.trace_start_s : self.trace_start_s + self.trace_seconds]
        return Pacer(trace, self.compression, self.scale)


AUTOSCALERS = ("daedalus", "spark-da", "batch-ratio", "static")
