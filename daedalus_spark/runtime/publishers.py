"""Runtime publishers: the decision log (one JSON line per tick), the log line, and the controller's own metrics."""

from __future__ import annotations

import json
import logging
import math
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from daedalus_spark.controller import Controller
from daedalus_spark.domain import Reason
from daedalus_spark.evidence import TickEvidence
from daedalus_spark.execute.port import Outcome
from daedalus_spark.loop import StepResult
from daedalus_spark.redact import redact
from daedalus_spark.report.jsonout import finite_or_none
from daedalus_spark.runtime.logsetup import FIELDS

log = logging.getLogger("daedalus_spark.decisions")

_LINE_START = b'{"actuation": '  # every decision log line: its keys are sorted


def result_record(result: StepResult) -> dict[str, Any]:
    d, a = result.decision, result.actuation
    record: dict[str, Any] = finite_or_none(
        {
            "time_s": result.time_s,
            "time": datetime.fromtimestamp(result.time_s, UTC).isoformat(timespec="seconds"),
            "reason": d.reason.value,
            "current": d.current_scaleout,
            "target": d.target_scaleout,
            "evidence": d.evidence.fields(),
            "notes": list(d.notes),
            "actuation": None
            if a is None
            else {
                "outcome": a.outcome.value,
                "detail": redact(a.detail),
                "live": a.live,
                "duration_s": round(a.duration_s, 3),
            },
            "monitor_error": None if result.monitor_error is None else result.monitor_error.kind,
            "timings_s": {k: round(v, 4) for k, v in result.timings_s.items()},
        }
    )
    return record


class DecisionLog:
    """Appends one JSON line per tick; a line is written whole and flushed, so a killed controller leaves at most
    its last line cut short.

    With `max_bytes`, the log rotates in-process as `logging.handlers.RotatingFileHandler` does (path -> path.1 ->
    ... -> path.`backups`, the oldest deleted) before a line would take it past the bound: the container has no
    logrotate to send SIGHUP, and the file is opened per line, so an outside rotation (rename) is also followed.
    """

    def __init__(self, path: str | Path, *, max_bytes: int = 0, backups: int = 1) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups

    def check(self) -> None:
        """At start: refuse a path this log can never be appended to, or a file that is not a decision log."""
        where = f"runtime.decision_log ({self.path})"
        if not self.path.absolute().parent.is_dir():
            raise ValueError(f"{where}: directory {self.path.absolute().parent} does not exist")
        if self.path.is_dir():
            raise ValueError(f"{where}: a directory, not a file")
        problem = self._foreign()
        if problem:
            raise ValueError(f"{where}: {problem}")
        try:
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise ValueError(f"{where}: cannot append ({exc.strerror})") from None

    def _foreign(self) -> str:
        """Why the file is not ours to append to ('' if it is: absent, empty, a device or pipe, or JSON lines of
        ticks): a config or notes given by mistake must not get decision lines written into them."""
        try:
            if not self.path.is_file() or self.path.stat().st_size == 0:
                return ""
            with self.path.open("rb") as f:
                first = f.readline(64 * 1024)
        except OSError as exc:
            return f"cannot read ({exc.strerror})"
        try:
            record = json.loads(first)
        except ValueError:
            record = None
        if isinstance(record, dict) and {"time_s", "reason"} <= record.keys():
            return ""
        if first.startswith(_LINE_START) and not first.endswith(b"\n"):
            return ""  # our first line, cut short by a controller killed while writing it
        return "not a decision log (its first line is not a tick's JSON); refusing to append to it"

    def publish(self, result: StepResult) -> None:
        line = json.dumps(result_record(result), allow_nan=False, sort_keys=True) + "\n"
        problem = self._foreign()
        if problem:
            log.error("decision log %s: %s", self.path, problem)
            return
        try:
            self._rotate_before(len(line.encode()))
            with self.path.open("a", encoding="utf-8") as f:
                f.write(("\n" if self._cut_short() else "") + line)
        except OSError as exc:
            log.error("cannot append to the decision log %s: %s", self.path, exc.strerror)

    def _cut_short(self) -> bool:
        """Whether the log ends inside a line (a controller killed while writing it): the next line starts anew."""
        try:
            if not self.path.is_file():
                return False  # a device or a pipe is never read
            with self.path.open("rb") as f:
                if f.seek(0, 2) == 0:
                    return False
                f.seek(-1, 2)
                return f.read(1) != b"\n"
        except OSError:
            return False

    def _rotate_before(self, line_bytes: int) -> None:
        if not self.max_bytes:
            return
        try:
            status = self.path.stat()
        except FileNotFoundError:
            return
        if not stat.S_ISREG(status.st_mode) or status.st_size == 0 or status.st_size + line_bytes <= self.max_bytes:
            return  # a device or a pipe (/dev/stdout) is never renamed
        for i in range(self.backups - 1, 0, -1):
            older = self.backup(i)
            if older.exists():
                older.replace(self.backup(i + 1))
        self.path.replace(self.backup(1))

    def backup(self, i: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{i}")


class LogPublisher:
    """One readable log line per tick."""

    def publish(self, result: StepResult) -> None:
        d, a = result.decision, result.actuation
        outcome = "" if a is None else f" -> {a.outcome.value}: {redact(a.detail)}"
        fields = {
            "tick_time": datetime.fromtimestamp(result.time_s, UTC).isoformat(),
            "current_scaleout": d.current_scaleout,
            "target_scaleout": d.target_scaleout,
            "reason": d.reason.value,
            "outcome": None if a is None else a.outcome.value,
            "outcome_detail": None if a is None else redact(a.detail),
        }
        log.info(
            "tick %s: %d -> %d (%s)%s",
            datetime.fromtimestamp(result.time_s, UTC).strftime("%H:%M:%S"),
            d.current_scaleout,
            d.target_scaleout,
            d.reason.value,
            outcome,
            extra={FIELDS: fields},
        )


class LateGauge(Collector):
    """A gauge with no sample until its first value: a 0 before it would read as a measurement (a dashboard's
    `time() - last_good_tick` of 56 years, an alert dividing a lag by a capacity of 0)."""

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry) -> None:
        self.name, self.documentation = name, documentation
        self.value: float | None = None
        registry.register(self)

    def set(self, value: float) -> None:
        self.value = float(value)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation)
        if (value := self.value) is not None:
            family.add_metric([], value)
        yield family


class ControllerMetrics:
    """The controller's own Prometheus metrics, in a registry of their own; a tick's gauges have no sample before
    the first tick that sets them."""

    def __init__(self, controller: Controller | None = None, registry: CollectorRegistry | None = None) -> None:
        self.controller = controller
        self.registry = registry or CollectorRegistry()
        r, p = self.registry, "daedalus_controller_"
        self.current = LateGauge(p + "scaleout_current", "Executors the job ran at the last tick", registry=r)
        self.target = LateGauge(p + "scaleout_target", "Executors the last tick decided on", registry=r)
        self.capacity = Gauge(
            p + "capacity_records_per_second", "Learned capacity per scale-out", ["scaleout", "observed"], registry=r
        )
        self.capacity_current = LateGauge(
            p + "capacity_current_records_per_second", "Learned capacity at the current scale-out", registry=r
        )
        self.recovery_target = LateGauge(
            p + "recovery_target_seconds", "controller.target_recovery_s: longest acceptable recovery", registry=r
        )
        self.workload = LateGauge(p + "workload_records_per_second", "Average workload of the last window", registry=r)
        self.lag = LateGauge(p + "consumer_lag_records", "Consumer lag at the last tick", registry=r)
        self.forecast_peak = LateGauge(
            p + "forecast_peak_records_per_second", "Highest forecast workload over the horizon", registry=r
        )
        self.forecast_model = Gauge(
            p + "forecast_model_info", "1 for the model of the latest forecast", ["model"], registry=r
        )
        self.decisions = Counter(p + "decisions", "Decisions by reason", ["reason"], registry=r)
        self.actuations = Counter(
            p + "actuations", "Rescales asked of the actuator, by outcome", ["outcome"], registry=r
        )
        self.monitor_errors = Counter(
            p + "monitor_errors", "Ticks skipped because the monitor failed, by kind", ["kind"], registry=r
        )
        self.tick_errors = Counter(p + "tick_errors", "Ticks that raised (logged; the loop goes on)", registry=r)
        self.duration = Histogram(
            p + "tick_duration_seconds",
            "Time per loop phase",
            ["phase"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
        )
        self.last_good = LateGauge(
            p + "last_good_tick_timestamp_seconds", "When a tick last observed and decided", registry=r
        )
        if controller is not None:
            self.recovery_target.set(controller.config.controller.target_recovery_s)
        for reason in Reason:
            self.decisions.labels(reason.value)
        for outcome in Outcome:
            self.actuations.labels(outcome.value)

    def publish(self, result: StepResult) -> None:
        d = result.decision
        self.decisions.labels(d.reason.value).inc()
        for phase, seconds in result.timings_s.items():
            self.duration.labels(phase).observe(seconds)
        self.duration.labels("total").observe(sum(result.timings_s.values()))
        if result.actuation is not None:
            self.actuations.labels(result.actuation.outcome.value).inc()
        if result.monitor_error is not None:
            self.monitor_errors.labels(result.monitor_error.kind).inc()
            return
        self.current.set(d.current_scaleout)
        self.target.set(d.target_scaleout)
        self.last_good.set(result.time_s)
        if d.evidence.tick is not None:
            self._set_from_tick(d.evidence.tick)
        table = result.capacities
        if table is not None:
            self.capacity_current.set(table.current_per_s)
            self.capacity.clear()
            for n in range(1, table.max_scaleout + 1):
                observed = "true" if n in table.observed_scaleouts else "false"
                self.capacity.labels(str(n), observed).set(table.at(n))

    def _set_from_tick(self, tick: TickEvidence) -> None:
        for gauge, value in (
            (self.workload, tick.workload_avg_per_s),
            (self.lag, tick.consumer_lag_records),
            (self.forecast_peak, tick.forecast_max_per_s),
        ):
            if math.isfinite(value):
                gauge.set(value)
        self.forecast_model.clear()
        self.forecast_model.labels(tick.forecast_model).set(1)
