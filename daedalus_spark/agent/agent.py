"""Execute/Monitor (agent): wiring of poller, collector, scaler and HTTP server inside the Spark driver."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from pyspark.sql import SparkSession

from daedalus_spark.agent.collector import AgentCollector, DriverView
from daedalus_spark.agent.driverui import DriverUiReader, live_executors
from daedalus_spark.agent.queries import BoundedOffsets, LatestOffsets, ProgressTracker
from daedalus_spark.agent.scaler import ExecutorScaler, ScaleIn
from daedalus_spark.agent.server import Routes, serve
from daedalus_spark.agent.targets import TargetRefused

_log = logging.getLogger(__name__)
LOCALHOST = "127.0.0.1"
SURPLUS_GRACE_S = 30.0


@dataclass(frozen=True)
class AgentConfig:
    port: int = 9095  # 0 = any free port
    host: str = LOCALHOST  # listen beyond localhost only when set explicitly
    token: str | None = None  # bearer token required for /executors when set
    min_executors: int = 1
    max_executors: int = 16
    poll_s: float = 1.0
    initial_target: int | None = None
    # How executors leave on a scale-in: decommissioned where Spark can (spark.decommission.enabled), else killed.
    scale_in: ScaleIn = "decommission"


@dataclass
class Agent:
    config: AgentConfig
    reader: DriverUiReader
    tracker: ProgressTracker
    collector: AgentCollector
    scaler: ExecutorScaler
    registry: CollectorRegistry
    server: Any = None
    refusal: str = ""  # why this job's mode cannot take targets ('' = it can): see `unservable_mode`
    _stop: threading.Event = field(default_factory=threading.Event)
    _errors: int = 0

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    def poll_once(self) -> None:
        try:
            executors = self.reader.executors()
            self.reader.poll_stages()
        except Exception:  # noqa: BLE001 - a missed poll shows as an error count, never kills the driver
            self._errors += 1
            executors = self.collector.view.executors
        self.collector.publish(
            DriverView(
                executors=executors,
                records=dict(self.reader.records),
                queries=self.tracker.snapshot(),
                poll_errors=self._errors,
            )
        )

    def _loop(self, pending: int | None) -> None:
        surplus_since: float | None = None
        while not self._stop.is_set():
            if pending is not None:
                pending = self._apply_initial(pending)
            self.poll_once()
            if not self.refusal:
                surplus_since = self._reconcile(surplus_since, time.monotonic())
            self._stop.wait(self.config.poll_s)

    def _reconcile(self, surplus_since: float | None, now: float) -> float | None:
        """More live executors than the target for `SURPLUS_GRACE_S` (a standalone master launched one before the
        target reached it): apply the target again. The grace outlasts an executor's normal leave (~5 s), so one
        already leaving is never doubled by a second victim."""
        target = self.scaler.target
        live = len(live_executors(self.collector.view.executors))
        if target is None or live <= target:
            return None
        if surplus_since is None or now - surplus_since < SURPLUS_GRACE_S:
            return surplus_since if surplus_since is not None else now
        try:
            self.scaler.apply(target)
        except Exception:  # noqa: BLE001 - try again after another grace
            self._errors += 1
        return None

    def _apply_initial(self, target: int) -> int | None:
        """The initial target, applied from the poll thread: a driver busy starting up is retried, not fatal."""
        if self.scaler.target is not None:
            return None  # a controller has set a target meanwhile: it wins
        try:
            self.scaler.apply(target)
        except Exception:  # noqa: BLE001 - the UI may not answer yet; try again next poll
            self._errors += 1
            return target
        return None

    def status(self) -> dict[str, Any]:
        serving = [e.executor_id for e in self.scaler.serving(self.scaler.executors())]
        return {
            "current": len(serving),
            "target": self.scaler.target,
            "executors": serving,
            "min": self.config.min_executors,
            "max": self.config.max_executors,
            "refusing": self.refusal,
            "scale_in": self.scaler.in_force(),
        }

    def apply(self, target: int) -> dict[str, Any]:
        if self.refusal:
            raise TargetRefused(self.refusal)
        leaving = self.scaler.apply(target)
        current = self.scaler.current()
        return {"current": current, "target": target, "leaving": leaving, "scale_in": self.scaler.in_force()}

    def stop(self) -> None:
        self._stop.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def unservable_mode(master: str, dynamic_allocation: str) -> str:
    """Why a driver with this master and `spark.dynamicAllocation.enabled` cannot take executor targets ('' if it can).

    In `local[*]` mode there are no executors to request: Spark logs that requesting executors is not supported and
    returns false. With dynamic allocation on, Spark's ExecutorAllocationManager owns the count: an absolute target
    would fight it, and killExecutors refuses to run beside it."""
    if master.strip().lower().startswith("local"):
        return f"the job runs in local mode (master {master}): it has no executors to scale; metrics only"
    if dynamic_allocation.strip().lower() == "true":
        return "Spark's dynamic allocation manages the executors (spark.dynamicAllocation.enabled=true); metrics only"
    return ""


def start_agent(
    spark: SparkSession, config: AgentConfig | None = None, *, latest_offsets: Mapping[str, LatestOffsets] | None = None
) -> Agent:
    """Start the agent in this driver; `latest_offsets` maps a topic to a live reader of its end offsets (each read
    bounded in time, so /metrics answers while a broker does not: BoundedOffsets)."""
    config = config or AgentConfig()
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        raise RuntimeError("the agent needs the Spark UI (spark.ui.enabled=true)")
    reader = DriverUiReader(sc.uiWebUrl, sc.applicationId)
    tracker = ProgressTracker()
    spark.streams.addListener(tracker)
    scaler = ExecutorScaler(sc._jsc.sc(), sc._jvm, reader.executors, scale_in=config.scale_in)
    collector = AgentCollector(
        app_id=sc.applicationId,
        started_at=sc.startTime / 1000.0,
        latest={
            topic: read if isinstance(read, BoundedOffsets) else BoundedOffsets(read, f"end offsets of topic {topic!r}")
            for topic, read in (latest_offsets or {}).items()
        },
        target=lambda: scaler.target,
        serving=scaler.serving,
    )
    registry = CollectorRegistry()
    registry.register(collector)
    refusal = unservable_mode(sc.master or "", sc.getConf().get("spark.dynamicAllocation.enabled", "false") or "")
    agent = Agent(config, reader, tracker, collector, scaler, registry, refusal=refusal)
    routes = Routes(registry, agent.status, agent.apply, config.min_executors, config.max_executors, config.token)
    agent.server = serve(routes, config.host, config.port)
    # Set before executors register, the initial target also caps what the standalone master launches; a driver
    # too busy to answer its UI yet gets it from the poll thread instead of failing the job.
    initial = None if refusal else config.initial_target
    if refusal:
        ignored = "" if config.initial_target is None else f" (initial target {config.initial_target} ignored)"
        _log.warning("daedalus agent refuses executor targets%s: %s", ignored, refusal)
    pending = agent._apply_initial(initial) if initial is not None else None
    threading.Thread(target=agent._loop, args=(pending,), name="daedalus-agent-poll", daemon=True).start()
    return agent
