"""Monitor (agent): per-query progress (rates, batch duration) and per-partition consumer lag."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pyspark.sql.streaming.listener import StreamingQueryListener

LatestOffsets = Callable[[], Mapping[int, int]]
_log = logging.getLogger(__name__)


class OffsetsUnavailable(RuntimeError):
    """A live reader could not give the end offsets now (broker down, topic gone, a read still under way)."""


@dataclass(eq=False)
class BoundedOffsets:
    """A live end-offsets reader that holds its caller (a /metrics scrape) at most `wait_s`: each read runs on a
    daemon thread; one that takes longer is left to finish while the caller gets OffsetsUnavailable, and the next
    call waits on that same read (reads never pile up) unless it has finished, then a fresh one starts. A result
    nobody was waiting for when it came is never handed out: it may be old."""

    read: LatestOffsets
    what: str = "end offsets"
    wait_s: float = 1.5
    failures: int = 0
    last_error: str = ""
    _pending: Future[Mapping[int, int]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _run(self, future: Future[Mapping[int, int]]) -> None:
        try:
            future.set_result(self.read())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)

    def __call__(self) -> Mapping[int, int]:
        with self._lock:
            if self._pending is None or self._pending.done():
                self._pending = Future()
                threading.Thread(
                    target=self._run, args=(self._pending,), name="daedalus-live-offsets", daemon=True
                ).start()
            pending = self._pending
        try:
            return pending.result(timeout=self.wait_s)
        except FutureTimeout:
            self._failed(f"{self.what} not read within {self.wait_s:g} s")
        except Exception as exc:  # noqa: BLE001 - any reader's failure: the lag is unknown, said why
            self._failed(f"{self.what} unreadable: {type(exc).__name__}: {exc}")

    def _failed(self, message: str) -> NoReturn:
        with self._lock:
            self.failures += 1
            self.last_error = message
        _log.warning("%s; the lag of its partitions is not exported until it is read again", message)
        raise OffsetsUnavailable(message)


@dataclass(frozen=True)
class QueryStats:
    name: str
    batch_id: int
    input_rows_total: int
    input_per_s: float
    processed_per_s: float
    batch_duration_s: float
    committed: dict[tuple[str, str], int]  # (topic, partition) -> next offset to read
    reported_latest: dict[tuple[str, str], int]
    batches_total: int = 0  # completed micro-batches, each (run, batch id) once
    batch_seconds_total: float = 0.0  # their durations summed
    run_id: str = ""  # the run of the latest event: a restarted query counts its batch ids anew


def flatten_offsets(raw: Any) -> dict[tuple[str, str], int]:
    """{topic: {partition: offset}} (a dict or its JSON, as Kafka and the local log report it) → flat map."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return {}
    flat: dict[tuple[str, str], int] = {}
    if isinstance(raw, dict):
        for topic, partitions in raw.items():
            if isinstance(partitions, dict):
                for partition, offset in partitions.items():
                    if isinstance(offset, int) and not isinstance(offset, bool):
                        flat[(str(topic), str(partition))] = offset
    return flat


def offsets_by_partition(
    stats: QueryStats, latest: Mapping[str, LatestOffsets]
) -> dict[tuple[str, str], tuple[int, int]]:
    """(latest, committed) per partition; live latest offsets where a reader is registered for the topic.

    Lag is latest minus committed. Without a live reader the latest offset is the one the source reported when
    the last batch was planned (Kafka's `latestOffset` in the progress), so lag is as old as that batch. A live
    reader that fails leaves its topic's partitions out (their lag is unknown, never the batch's or 0).
    """
    out: dict[tuple[str, str], tuple[int, int]] = {}
    live: dict[str, Mapping[int, int] | None] = {}
    for (topic, partition), committed in stats.committed.items():
        if topic in latest:
            if topic not in live:
                try:
                    live[topic] = latest[topic]()
                except Exception as exc:  # noqa: BLE001 - a reader without BoundedOffsets: the same, said here
                    if not isinstance(exc, OffsetsUnavailable):
                        _log.warning("end offsets of %r unreadable: %s: %s", topic, type(exc).__name__, exc)
                    live[topic] = None
            ends = live[topic]
            if ends is None:
                continue
            end = ends.get(int(partition), committed)
        else:
            end = stats.reported_latest.get((topic, partition), committed)
        out[(topic, partition)] = (max(end, committed), committed)
    return out


@dataclass(eq=False)  # hashable: registries and listener buses keep it in sets
class ProgressTracker(StreamingQueryListener):
    """Keeps the latest progress and the cumulative input rows, batches and batch seconds of every query.

    Since Spark 3.5 (SPARK-43183) a trigger without a batch is an onQueryIdle event, so every progress event is a
    completed batch, one with 0 rows included (a no-data batch advancing watermarks runs and costs its fixed cost).
    A repeated (run, batch id) is still counted once: the counters must not grow from a listener delivering twice.
    """

    stats: dict[str, QueryStats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def onQueryStarted(self, event: Any) -> None:
        return None

    def onQueryIdle(self, event: Any) -> None:
        return None

    def onQueryTerminated(self, event: Any) -> None:
        return None

    def onQueryProgress(self, event: Any) -> None:
        self.update(event.progress)

    def update(self, progress: Any) -> None:
        name = progress.name or str(progress.id)
        committed: dict[tuple[str, str], int] = {}
        latest: dict[tuple[str, str], int] = {}
        for source in progress.sources:
            committed.update(flatten_offsets(source.endOffset))
            latest.update(flatten_offsets(getattr(source, "latestOffset", None)))
        batch_id, run_id = int(progress.batchId), str(getattr(progress, "runId", "") or "")
        with self._lock:
            before = self.stats.get(name)
            total = (before.input_rows_total if before else 0) + int(progress.numInputRows)
            new = before is None or run_id != before.run_id or batch_id > before.batch_id
            self.stats[name] = QueryStats(
                name=name,
                batch_id=batch_id,
                input_rows_total=total,
                input_per_s=_finite(progress.inputRowsPerSecond),
                processed_per_s=_finite(progress.processedRowsPerSecond),
                batch_duration_s=float(progress.batchDuration) / 1000.0,
                committed=committed or (before.committed if before else {}),
                reported_latest=latest,
                batches_total=(before.batches_total if before else 0) + int(new),
                batch_seconds_total=(before.batch_seconds_total if before else 0.0)
                + (batch_seconds(progress) if new else 0.0),
                run_id=run_id,
            )

    def snapshot(self) -> list[QueryStats]:
        with self._lock:
            return list(self.stats.values())


def batch_seconds(progress: Any) -> float:
    """How long the batch took: its whole trigger (planning, execution, commit: the per-batch cost the capacity
    model needs), else `batchDuration`; 0 when neither is a usable number, so the counter never goes back."""
    durations = getattr(progress, "durationMs", None)
    ms = durations.get("triggerExecution") if isinstance(durations, Mapping) else None
    if ms is None:
        ms = getattr(progress, "batchDuration", None)
    return max(0.0, _finite(ms)) / 1000.0


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and abs(number) != float("inf") else 0.0
