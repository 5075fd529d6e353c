"""Execute (agent): apply an absolute executor target in place through the driver's SparkContext (developer API)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from daedalus_spark.agent.driverui import ExecutorInfo, live_executors
from daedalus_spark.agent.targets import TargetRefused

ScaleIn = Literal["decommission", "kill"]


def choose_victims(executors: Sequence[ExecutorInfo], count: int) -> list[str]:
    """The `count` live executors with the least running work (fewest active tasks, then least busy time)."""
    ranked = sorted(live_executors(executors), key=lambda e: (e.active_tasks, e.busy_s, e.executor_id))
    return [e.executor_id for e in ranked[: max(0, count)]]


@dataclass
class ExecutorScaler:
    """requestTotalExecutors to grow; to shrink, the least-loaded executors are decommissioned (they finish their
    tasks and hand their blocks over, then leave) where `scale_in` asks for it and Spark's decommissioning is on
    (`spark.decommission.enabled`), else killed (killExecutors). Idempotent.

    Executors asked to leave no longer count as serving, so a second target never picks one of them again."""

    jsc: Any  # the JVM SparkContext (sc._jsc.sc())
    jvm: Any
    executors: Callable[[], list[ExecutorInfo]]
    scale_in: ScaleIn = "kill"
    target: int | None = None
    leaving: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def in_force(self) -> ScaleIn:
        """How executors leave now: decommissioning where asked for and Spark can, else killing."""
        if self.scale_in != "decommission":
            return "kill"
        enabled = self.jsc.getConf().getBoolean("spark.decommission.enabled", False)
        client = self.jvm.java.lang.Class.forName("org.apache.spark.ExecutorAllocationClient")
        return "decommission" if enabled and client.isInstance(self.jsc.schedulerBackend()) else "kill"

    def serving(self, executors: Sequence[ExecutorInfo]) -> list[ExecutorInfo]:
        """The live executors not asked to leave (those gone for good are forgotten)."""
        live = live_executors(executors)
        self.leaving &= {e.executor_id for e in live}
        return [e for e in live if e.executor_id not in self.leaving]

    def current(self) -> int:
        return len(self.serving(self.executors()))

    def apply(self, target: int) -> list[str]:
        """Set the absolute target; returns the ids of executors asked to leave.

        Both developer-API calls return whether the cluster manager took the request; a `false` (no backend that
        can scale, e.g. `local[*]`) raises TargetRefused, and the target is not remembered."""
        with self._lock:
            serving = self.serving(self.executors())
            victims = choose_victims(serving, len(serving) - target) if target < len(serving) else []
            to_kill = list(victims)
            if victims and self.in_force() == "decommission":
                to_kill = [v for v in victims if not self._decommission(v, target)]
            if to_kill and not self.jsc.killExecutors(self.jvm.PythonUtils.toSeq(to_kill)):
                raise TargetRefused(f"Spark declined to remove executors {', '.join(to_kill)} (killExecutors: false)")
            self.leaving.update(victims)
            empty = self.jvm.PythonUtils.toScalaMap(self.jvm.java.util.HashMap())
            if not self.jsc.requestTotalExecutors(target, 0, empty):
                raise TargetRefused(f"Spark declined the target of {target} executors (requestTotalExecutors: false)")
            self.target = target
            return victims

    def _decommission(self, executor_id: str, target: int) -> bool:
        """Ask the scheduler backend to decommission one executor (lowering its own target by one, as killing
        does); False when it would not."""
        info = self.jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo.apply(
            f"scale-in to {target}", self.jvm.scala.Option.apply(None)
        )
        return bool(self.jsc.schedulerBackend().decommissionExecutor(executor_id, info, True, False))
