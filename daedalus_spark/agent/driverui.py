"""Monitor (agent): incremental reader of the driver's REST API — per-executor records, task time and cores."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.domain import SPARK_DRIVER_ID

RECHECKED_IDS = 64  # more stages than one micro-batch's job has


@dataclass(frozen=True)
class ExecutorInfo:
    executor_id: str
    active: bool
    cores: int
    active_tasks: int
    busy_s: float


def live_executors(executors: Iterable[ExecutorInfo]) -> list[ExecutorInfo]:
    """The executors that are running, the driver excluded: what the scale-out counts."""
    return [e for e in executors if e.active and e.executor_id != SPARK_DRIVER_ID]


def fetch_json(url: str, timeout_s: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - driver UI on localhost
        return json.load(response)


@dataclass
class DriverUiReader:
    """Polls /api/v1/applications/<app>/…; stages are read once each, in id order, when they finish."""

    base_url: str
    app_id: str
    records: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    next_stage: int = 0
    _pending: set[int] = field(default_factory=set)

    @property
    def api(self) -> str:
        return f"{self.base_url.rstrip('/')}/api/v1/applications/{self.app_id}"

    def executors(self) -> list[ExecutorInfo]:
        return [self._executor(e) for e in fetch_json(f"{self.api}/allexecutors")]

    @staticmethod
    def _executor(raw: dict[str, Any]) -> ExecutorInfo:
        return ExecutorInfo(
            executor_id=str(raw["id"]),
            active=bool(raw.get("isActive", False)),
            cores=int(raw.get("totalCores", 0)),
            active_tasks=int(raw.get("activeTasks", 0)),
            busy_s=float(raw.get("totalDuration", 0)) / 1000.0,
        )

    def poll_stages(self) -> None:
        """Fold finished stages' per-executor input records into the running totals."""
        for stage_id in sorted(self._pending):
            if self._fold(stage_id) is not False:  # folded, or gone from the UI: never asked again
                self._pending.discard(stage_id)
        while True:
            found = self._fold(self.next_stage)
            if found is None:
                # A stage id may never be listed (a skipped stage, one the UI no longer retains): go on at the next
                # id the driver lists, or wait for this one when none follows it. The ids passed over are asked
                # once more on the next poll (the last `RECHECKED_IDS` of them): a job's stages are stored one by one,
                # in no set order, so a later id can be listed a moment before this one.
                later = self._listed_after(self.next_stage)
                if later is None:
                    return
                self._pending.update(range(max(self.next_stage, later - RECHECKED_IDS), later))
                self.next_stage = later
                continue
            if not found:
                self._pending.add(self.next_stage)
            self.next_stage += 1

    def _listed_after(self, stage_id: int) -> int | None:
        ids = [s.get("stageId") for s in fetch_json(f"{self.api}/stages")]
        later = [i for i in ids if isinstance(i, int) and i > stage_id]
        return min(later) if later else None

    def _fold(self, stage_id: int) -> bool | None:
        """True: folded; False: still running; None: no such stage (yet)."""
        try:
            attempts = fetch_json(f"{self.api}/stages/{stage_id}?details=true&taskStatus=SUCCESS")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        if any(a.get("status") in ("ACTIVE", "PENDING") for a in attempts):
            return False
        for attempt in attempts:
            for executor_id, summary in (attempt.get("executorSummary") or {}).items():
                self.records[executor_id] += int(summary.get("inputRecords", 0))
        return True
