"""Runtime: `daedalus-spark run` — the loop every interval (APScheduler), the start-up backfill, signals, health."""

from __future__ import annotations

import logging
import math
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler

from daedalus_spark.clock import Clock
from daedalus_spark.config import Config
from daedalus_spark.execute.port import Actuator, ActuatorError
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import Loop, StepResult
from daedalus_spark.monitor.backfill import warm_start
from daedalus_spark.monitor.port import MetricsSource
from daedalus_spark.redact import redact
from daedalus_spark.runtime.health import serve_health
from daedalus_spark.runtime.publishers import ControllerMetrics

log = logging.getLogger(__name__)

# Ticks in a row that raise or cannot save before /healthz says "failing" (a restart may help; it shows at least).
FAILING_TICKS = 3
# How long a stop waits for the tick under way (its monitor is closed first, so only an actuation can hold it):
# well inside Kubernetes's default 30-s grace period before SIGKILL.
STOP_GRACE_S = 10.0


@dataclass
class Sidecar:
    """Owns the loop and everything around it; `run()` blocks until `stop()` (or SIGTERM/SIGINT), then exits clean.

    It receives its parts built (runtime/wiring.py): the loop with its monitor, actuator and publishers, the knowledge
    store the loop saves to, the controller's metrics, and the refit pool it shuts down on close.
    """

    config: Config
    loop: Loop
    store: SqliteKnowledgeStore
    _: KW_ONLY
    metrics: ControllerMetrics
    refits: ProcessPoolExecutor | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _steps: int = 0
    _last_step_s: float | None = None
    _last_good_s: float | None = None
    _started_s: float = 0.0
    _failing_ticks: int = 0
    _last_failure: str = ""
    _not_saved: bool = False
    _ticking: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._started_s = self.clock.now()

    @property
    def monitor(self) -> MetricsSource:
        return self.loop.monitor

    @property
    def actuator(self) -> Actuator:
        return self.loop.actuator

    @property
    def clock(self) -> Clock:
        return self.loop.clock

    def warm(self) -> None:
        """Learn the job's recent past from Prometheus before the first tick (monitor/backfill.py), save it, and
        start the loop's first window where that reading stopped. A stop meanwhile closes the monitor, which ends
        the reading at once."""
        controller = self.loop.controller
        past = warm_start(controller, self.monitor, self.config, now_s=self.clock.now())
        if past is None:
            return
        controller.knowledge.history.backfill = tuple(past.lines())
        self.loop.continue_from(past.end_s)
        controller.save(self.store)

    def step(self) -> StepResult | None:
        """One tick; a tick that raises is logged and counted, never the end of the sidecar."""
        with self._ticking:
            return self._step()

    def _step(self) -> StepResult | None:
        try:
            result = self.loop.step()
        except Exception as exc:  # the runtime outlives any single tick
            log.exception("tick failed; the next one runs as scheduled")
            self._failed(f"tick raised {type(exc).__name__}: {exc}")
            return None
        finally:
            self._steps += 1
            self._last_step_s = self.clock.now()
        if result.store_error is not None:
            self._failed(f"knowledge not saved: {result.store_error}", saving=True)
            return result
        self._failing_ticks, self._last_failure = 0, ""
        if result.monitor_error is None:
            self._last_good_s = result.time_s
        return result

    def _failed(self, why: str, *, saving: bool = False) -> None:
        self.metrics.tick_errors.inc()
        self._failing_ticks += 1
        self._not_saved = saving
        self._last_failure = redact(why)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Healthy while ticks keep coming and succeed (a monitor outage is reported, not unhealthy: a restart would
        not help); FAILING_TICKS in a row that raise or cannot save their knowledge are unhealthy."""
        now = self.clock.now()
        stall_s = 3 * self.config.controller.loop_interval_s + _longest_actuation_s(self.config)
        since = now - (self._last_step_s if self._last_step_s is not None else self._started_s)
        # Knowledge that cannot be saved is lost with every tick: failing at once (a tick that raised may be a
        # passing fault, and needs FAILING_TICKS in a row).
        failing = self._failing_ticks >= FAILING_TICKS or (self._failing_ticks > 0 and self._not_saved)
        status = "stalled" if since > stall_s else "failing" if failing else "ok"
        details: dict[str, Any] = {
            "status": status,
            "ticks": self._steps,
            "seconds_since_last_tick": round(since, 3),
            "last_good_tick_s": self._last_good_s,
            "failing_ticks": self._failing_ticks,
        }
        if self._last_failure:
            details["last_failure"] = self._last_failure
        return status == "ok", details

    def run(self, *, handle_signals: bool = True) -> int:
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        self.warm()
        if self._stop.is_set():
            self.close(None)
            log.info(
                "stopped after 0 ticks, while reading the job's past; knowledge in %s",
                self.config.controller.knowledge_path,
            )
            return 0
        self._started_s = self.clock.now()
        runtime = self.config.runtime
        server = (
            serve_health(self.metrics.registry, self.health, runtime.metrics_host, runtime.metrics_port)
            if runtime.metrics_port
            else None
        )
        scheduler = BackgroundScheduler(timezone="UTC")
        interval_s = self.config.controller.loop_interval_s
        scheduler.add_job(
            self.step,
            "interval",
            seconds=interval_s,
            id="daedalus-tick",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, math.ceil(interval_s)),
            next_run_time=datetime.now(UTC),
        )
        self._probe_actuator()
        scheduler.start()
        log.info(
            "running: a tick every %g s; metrics and /healthz on %s",
            interval_s,
            f"{runtime.metrics_host}:{server.server_port}" if server else "(off)",
        )
        try:
            while not self._stop.wait(1.0):
                pass
        finally:
            self._shut_down(scheduler, server)
        return 0

    def _shut_down(self, scheduler: BackgroundScheduler, server: Any) -> None:
        """Prompt, whatever a tick is waiting for: no new tick; the monitor closed, so a tick waiting on a query
        gives up, skips its window and saves; that tick waited for at most STOP_GRACE_S. Says where the knowledge
        is either way."""
        scheduler.shutdown(wait=False)
        self.monitor.close()
        finished = self._ticking.acquire(timeout=STOP_GRACE_S)
        if finished:
            self._ticking.release()
        else:
            log.warning("a tick still running after %g s of the stop is left unfinished", STOP_GRACE_S)
        self.close(server)
        log.info(
            "stopped after %d ticks; knowledge%s in %s",
            self._steps,
            "" if finished else " as the last finished tick saved it",
            self.config.controller.knowledge_path,
        )

    def stop(self) -> None:
        """Ask the run to end; the monitor is closed at once, so a query under way (a tick's or the start-up's
        reading of the past) gives up instead of holding the stop."""
        self._stop.set()
        self.monitor.close()

    def _probe_actuator(self) -> None:
        """One clear line at start when the job cannot be reached; the ticks keep trying regardless."""
        try:
            log.info("actuator %s sees %d executors", type(self.actuator).__name__, self.actuator.current())
        except ActuatorError as exc:
            log.warning("%s; the sidecar keeps running and tries again every tick", exc)

    def close(self, server: Any = None) -> None:
        if server is not None:
            server.shutdown()
            server.server_close()
        self.monitor.close()
        if self.refits is not None:
            self.refits.shutdown(wait=False, cancel_futures=True)


def _longest_actuation_s(config: Config) -> float:
    """The longest a tick's request to the actuator can take with its retries: every attempt timing out, the waits
    between them doubling. Confirmation is not in it: the loop confirms a target on its next ticks, never waiting."""
    if config.actuator.kind == "kubernetes":
        attempts, timeout_s, backoff_s = (
            config.kubernetes.retries,
            config.kubernetes.request_timeout_s,
            config.kubernetes.backoff_s,
        )
    else:
        attempts, timeout_s, backoff_s = config.actuator.retries, config.actuator.timeout_s, config.actuator.backoff_s
    return attempts * timeout_s + sum(backoff_s * 2.0**i for i in range(attempts - 1))
