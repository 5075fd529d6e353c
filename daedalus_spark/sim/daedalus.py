"""Simulation: the daedalus policy — the real controller tick, fed the Observation the monitor would produce."""

from __future__ import annotations

from dataclasses import dataclass, field

from daedalus_spark.config import Config
from daedalus_spark.domain import Decision


@dataclass
class DaedalusPolicy:
    """Calls `Controller.tick` once per loop interval with the samples since the previous tick; synchronous
    refits (no executor) keep runs deterministic."""

    config: Config
    name: str = "daedalus"
    sync_interval_s: int | None = None
    decisions: list[Decision] = field(default_factory=list, repr=False)
    _controller: object | None = field(default=None, repr=False)
    _last_tick_s: int = 0

    def __post_init__(self) -> None:
        self.sync_interval_s = max(1, int(round(self.config.controller.loop_interval_s)))

    def decide(self, job: object) -> int | None:
        from daedalus_spark.controller import Controller
        from daedalus_spark.sim.job import SimulatedJob

        assert isinstance(job, SimulatedJob)
        if self._controller is None:
            self._controller = Controller(self.config, refit_executor=None)
        observation = job.observation(self._last_tick_s)
        self._last_tick_s = job.now_s
        decision = self._controller.tick(observation, float(job.now_s))  # type: ignore[attr-defined]
        self.decisions.append(decision)
        return decision.target_scaleout
