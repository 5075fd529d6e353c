"""Execute (agent): apply an absolute executor target in place through the driver's SparkContext (developer API)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.agent.driverui import ExecutorInfo


def choose_victims(executors: Sequence[ExecutorInfo], count: int) -> list[str]:
    """The `count` live executors with the least running work (fewest active tasks, then least busy time)."""
    live = [e for e in executors if e.active and e.executor_id != "driver"]
    ranked = sorted(live, key=lambda e: (e.active_tasks, e.busy_s, e.executor_id))
    return [e.executor_id for e in ranked[:max(0, count)]]


@dataclass
class ExecutorScaler:
    """requestTotalExecutors to grow, killExecutors on the least-loaded executors to shrink; idempotent."""

    jsc: Any  # the JVM SparkContext (sc._jsc.sc())
    jvm: Any
    executors: Callable[[], list[ExecutorInfo]]
    target: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> int:
        return sum(1 for e in self.executors() if e.active and e.executor_id != "driver")

    def apply(self, target: int) -> list[str]:
        """Set the absolute target; returns the ids of executors asked to leave."""
        with self._lock:
            live = self.executors()
            current = sum(1 for e in live if e.active and e.executor_id != "driver")
            victims = choose_victims(live, current - target) if target < current else []
            if victims:
                self.jsc.killExecutors(self.jvm.PythonUtils.toSeq(victims))
            empty = self.jvm.PythonUtils.toScalaMap(self.jvm.java.util.HashMap())
            self.jsc.requestTotalExecutors(target, 0, empty)
            self.target = target
            return victims
