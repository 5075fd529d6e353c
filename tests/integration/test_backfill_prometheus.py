"""The start-up backfill against a real Prometheus: two hours of the agent's metrics for a 3-executor job (load on a
30-min cycle, batch progress, 15 minutes without samples, 5 minutes of one executor's CPU quota exported 100x too
small) backfilled with promtool, read back by the monitor's own queries into a controller's warm state."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.monitor.backfill import backfill, warm_start
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus, write_history
from daedalus_spark.monitor.synthetic_history import SyntheticHistory
from daedalus_spark.report.knowledge_report import build, format_text, load_knowledge
from daedalus_spark.runtime.wiring import assemble_sidecar

pytestmark = pytest.mark.skipif(
    find_binary() is None or shutil.which("promtool") is None,
    reason="no prometheus/promtool binaries (Debian packages `prometheus`; .ci/run installs them)",
)

SCRAPE_S = 10
HOURS = 2
GAP = (4500, 5400)  # seconds after the start without any sample
TINY_QUOTA = (6000, 6300)  # executor 3's CPU quota exported as 0.01 cores instead of 1: utilization 100x
EXECUTORS = ("1", "2", "3")
FIXED_S, PER_RECORD_S, BATCHES_PER_S = 0.2, 1e-6, 0.5


HISTORY = SyntheticHistory(
    HOURS * 3600,
    step_s=SCRAPE_S,
    executors=len(EXECUTORS),
    gaps=(GAP,),
    quota_cores=lambda e, t: 0.01 if e == "3" and TINY_QUOTA[0] <= t < TINY_QUOTA[1] else 1.0,
    batches_per_s=BATCHES_PER_S,
    fixed_s=FIXED_S,
    per_record_s=PER_RECORD_S,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, int]]:
    """A Prometheus whose data directory holds the backfilled blocks (within its 15-day retention)."""
    workdir = tmp_path_factory.mktemp("prometheus")
    start_s = (int(time.time()) // 3600 - 4) * 3600
    write_history(HISTORY.openmetrics(start_s), workdir, timeout_s=300)
    prometheus = start_prometheus([], workdir=workdir)
    try:
        yield prometheus, start_s
    finally:
        prometheus.stop()


def _config(url: str, tmp_path: Path | None = None) -> Config:
    runtime = {} if tmp_path is None else {"decision_log": str(tmp_path / "decisions.jsonl")}
    knowledge = {} if tmp_path is None else {"knowledge_path": str(tmp_path / "knowledge.sqlite")}
    return parse_config(
        {
            "controller": {"loop_interval_s": 60, "max_scaleout": 8, "backfill_s": 3 * 3600, **knowledge},
            "monitor": {
                "prometheus_url": url,
                "step_s": SCRAPE_S,
                "scrape_interval_s": SCRAPE_S,
                "rate_window_s": 4 * SCRAPE_S,
                "timeout_s": 20,
            },
            "forecast": {"background_refit": False, "seasonality": False},
            "runtime": runtime,
        }
    )


def _monitor(config: Config) -> PrometheusMonitor:
    return PrometheusMonitor(config.monitor, config.controller.utilization_signal)


def test_a_controller_warms_from_prometheus_without_crossing_the_gap(server: tuple[PrometheusServer, int]) -> None:
    prometheus, start_s = server
    config = _config(prometheus.url)
    controller, monitor = Controller(config), _monitor(config)
    end_s = start_s + HOURS * 3600
    try:
        report = warm_start(controller, monitor, config, now_s=end_s)
    finally:
        monitor.close()
    assert report is not None and report.stopped == "", report.lines()
    assert report.first_sample_s is not None and start_s <= report.first_sample_s <= start_s + 3 * SCRAPE_S
    assert any("Prometheus holds no older samples" in line for line in report.lines())
    (gap,) = report.gaps
    # rate() over 40 s has no value from 20-40 s after the last sample before the gap to the first after it
    assert start_s + GAP[0] <= gap.start_s <= start_s + GAP[0] + 40, report.lines()
    assert start_s + GAP[1] <= gap.end_s <= start_s + GAP[1] + 20, report.lines()
    k = controller.knowledge
    after_gap_steps = (end_s - gap.end_s) / config.forecast.resolution_s
    assert k.forecaster.history_steps == pytest.approx(after_gap_steps, abs=1)  # nothing from before the gap
    assert "fed with" in report.forecast
    stamps = [t for t, _ in k.history.workload]
    assert stamps[0] < gap.start_s < gap.end_s < stamps[-1] == end_s
    assert not any(gap.start_s + 10 < t <= gap.end_s - 10 for t in stamps)
    # capacity: utilization = 0.05 + records/s / 1,000 on every executor, learned from the windows read
    assert set(k.capacity.regressions) == set(EXECUTORS)
    for e in EXECUTORS:
        regression = k.capacity.regressions[e]
        assert regression.n > 400 and regression.slope == pytest.approx(1000.0, rel=0.01), e
    fit = k.capacity.batches.fit(3)
    assert fit is not None and fit.fixed_s == pytest.approx(FIXED_S, rel=0.02)
    assert fit.per_record_s == pytest.approx(PER_RECORD_S, rel=0.02)
    # the 5 minutes of a 100x utilization are refused by name, and teach nothing
    absurd = [line for line in report.refused if "query 'utilization' executor 3" in line]
    assert absurd and all("is beyond 2" in line for line in absurd), report.refused
    assert report.windows_missing.get("absurd", 0) >= 5


def test_a_restart_reads_only_what_came_after(server: tuple[PrometheusServer, int], tmp_path: Path) -> None:
    prometheus, start_s = server
    config = _config(prometheus.url, tmp_path)
    end_s, mid_s = start_s + HOURS * 3600, start_s + 3600
    monitor = _monitor(config)
    try:
        once = Controller(config)
        backfill(once, monitor, config, now_s=end_s)
        store = SqliteKnowledgeStore(config.controller.knowledge_path)
        first = Controller(config)
        backfill(first, monitor, config, now_s=mid_s)
        first.save(store)
        again = Controller.resume(config, store, now_s=end_s)
        report = backfill(again, monitor, config, now_s=end_s)
    finally:
        monitor.close()
    assert report is not None and report.start_s == mid_s and report.known_until_s == mid_s
    whole, parts = once.knowledge.capacity, again.knowledge.capacity
    assert {e: r.n for e, r in parts.regressions.items()} == {e: r.n for e, r in whole.regressions.items()}
    assert parts.batches.fits[3].n == whole.batches.fits[3].n
    assert list(again.knowledge.history.workload) == list(once.knowledge.history.workload)


def test_the_sidecar_starts_warm_and_reports_the_gap(server: tuple[PrometheusServer, int], tmp_path: Path) -> None:
    prometheus, start_s = server
    config = _config(prometheus.url, tmp_path)
    end_s = start_s + HOURS * 3600
    sidecar = assemble_sidecar(config, _monitor(config), DryRunActuator(), clock=FakeClock(end_s))
    try:
        sidecar.warm()
        assert sidecar.loop._window_end_s == end_s  # the first tick observes from where the backfill stopped
        assert sidecar.loop.controller.knowledge.capacity.regressions
    finally:
        sidecar.close()
    text = format_text(build(load_knowledge(config.controller.knowledge_path, config)))
    assert "backfill gap: " in text and "not crossed" in text, text
    assert "backfill refused: " in text and "query 'utilization' executor 3" in text, text
