"""Controller: one MAPE-K tick composing analyze and plan over the knowledge, with no I/O."""

from __future__ import annotations

from concurrent.futures import Executor

from daedalus_spark.config import Config
from daedalus_spark.domain import Decision, Observation


class Controller:
    """`tick(observation, now_s) -> Decision`; the runtime and the simulator both drive this."""

    def __init__(self, config: Config, *, knowledge: object | None = None, refit_executor: Executor | None = None):
        raise NotImplementedError("being written")

    def tick(self, observation: Observation, now_s: float) -> Decision:
        raise NotImplementedError("being written")
