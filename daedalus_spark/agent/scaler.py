"""Execute (agent): apply an absolute executor target in place through the driver's SparkContext (developer API)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from daedalus_spark.agent.driverui import ExecutorInfo, live_executors
from daedalus_spark.agent.targets import TargetRefused


def choose_victims(executors: Sequence[ExecutorInfo], count: int) -> list[str]:
    """The `count` live executors with the least running work (fewest active tasks, then least busy time)."""
    ranked = sorted(live_executors(executors), key=lambda e: (e.active_tasks, e.busy_s, e.executor_id))
    return [e.executor_id for e in ranked[: max(0, count)]]


@dataclass
class ExecutorScaler:
    """requestTotalExecutors to grow, killExecutors on the least-loaded executors to shrink; idempotent."""

    jsc: Any  # the JVM SparkContext (sc._jsc.sc())
    jvm: Any
    executors: Callable[[], list[ExecutorInfo]]
    target: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> int:
        return len(live_executors(self.executors()))

    def apply(self, target: int) -> list[str]:
        """Set the absolute target; returns the ids of executors asked to leave.

        Both developer-API calls return whether the cluster manager took the request; a `false` (no backend that
        can scale, e.g. `local[*]`) raises TargetRefused, and the target is not remembered."""
        with self._lock:
            executors = self.executors()
            current = len(live_executors(executors))
            victims = choose_victims(executors, current - target) if target < current else []
            if victims and not self.jsc.killExecutors(self.jvm.PythonUtils.toSeq(victims)):
                raise TargetRefused(f"Spark declined to remove executors {', '.join(victims)} (killExecutors: false)")
            empty = self.jvm.PythonUtils.toScalaMap(self.jvm.java.util.HashMap())
            if not self.jsc.requestTotalExecutors(target, 0, empty):
                raise TargetRefused(f"Spark declined the target of {target} executors (requestTotalExecutors: false)")
            self.target = target
            return victims
