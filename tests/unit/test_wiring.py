"""The composition root: what `build_sidecar` builds off Kubernetes, and the refit process `assemble_sidecar` ends
when the start fails (a knowledge store refused, a controller that cannot resume)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.execute.agent import AgentActuator
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.scrape import ScrapeMonitor
from daedalus_spark.runtime import wiring
from daedalus_spark.runtime.publishers import ControllerMetrics, DecisionLog, LogPublisher
from daedalus_spark.runtime.refits import child_pids, refit_pool
from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor, config_in
from daedalus_spark.waiting import wait_until


@pytest.mark.parametrize(
    ("dry_run", "monitor", "actuator"),
    [
        pytest.param(False, {"prometheus_url": "http://127.0.0.1:9"}, AgentActuator, id="agent-prometheus"),
        pytest.param(True, {"scrape_urls": ["http://127.0.0.1:9/metrics"]}, DryRunActuator, id="advisor-scrape"),
    ],
)
def test_off_kubernetes_the_sidecar_gets_the_named_parts_and_no_event_publisher(tmp_path, dry_run, monitor, actuator):
    config = config_in(tmp_path)
    config = config.model_copy(update={"monitor": config.monitor.model_copy(update=monitor)})
    sidecar = wiring.build_sidecar(config, dry_run=dry_run, environ={})
    try:
        assert isinstance(sidecar.actuator, actuator)
        assert isinstance(sidecar.monitor, PrometheusMonitor if "prometheus_url" in monitor else ScrapeMonitor)
        assert [type(p) for p in sidecar.loop.publishers] == [DecisionLog, LogPublisher, ControllerMetrics]
        assert sidecar.loop.store is sidecar.store and sidecar.store.path == Path(config.controller.knowledge_path)
        assert sidecar.refits is None  # background_refit off in this config
    finally:
        sidecar.close()


def _refuse_to_resume(*_: object, **__: object) -> None:
    raise RuntimeError("stored knowledge refused")


@pytest.mark.parametrize(
    ("knowledge_in_a_directory", "resume", "error"),
    [
        pytest.param(True, None, (KnowledgeStoreError, "a directory"), id="store-refused"),
        pytest.param(False, _refuse_to_resume, (RuntimeError, "stored knowledge refused"), id="resume-raises"),
    ],
)
def test_a_start_that_fails_ends_the_refit_process(tmp_path, monkeypatch, knowledge_in_a_directory, resume, error):
    config = config_in(tmp_path)
    controller = {"knowledge_path": str(tmp_path)} if knowledge_in_a_directory else {}
    config = config.model_copy(
        update={
            "controller": config.controller.model_copy(update=controller),
            "forecast": config.forecast.model_copy(update={"background_refit": True}),
        }
    )
    started: list[ProcessPoolExecutor] = []  # held here, so that only a shutdown (not its collection) ends it
    pids: list[int] = []

    def pool() -> ProcessPoolExecutor:
        started.append(refit_pool())
        pids.extend(child_pids(started[-1]))
        return started[-1]

    monkeypatch.setattr(wiring, "refit_pool", pool)
    if resume is not None:
        monkeypatch.setattr(wiring.Controller, "resume", resume)
    try:
        with pytest.raises(error[0], match=error[1]):
            wiring.assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=FakeClock(0.0))
        assert len(pids) == 1
        wait_until(
            lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids),
            f"the refit process {pids} to end after the failed start",
            60.0,
        )
    finally:
        for refits in started:
            refits.shutdown(cancel_futures=True)
