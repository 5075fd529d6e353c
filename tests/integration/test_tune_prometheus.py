"""tune's history from a real Prometheus: two hours of the workload counter backfilled with promtool (1,000/s, then
2,000/s, and 15 minutes without samples), read back by a range query of the config's own workload query."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from daedalus_spark import metricnames as names
from daedalus_spark.cli import main
from daedalus_spark.config import parse_config
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus, write_history
from daedalus_spark.tune import history as history_module
from daedalus_spark.tune.grid import SplitSettings
from daedalus_spark.tune.history import from_prometheus
from daedalus_spark.tune.split import plan_windows

pytestmark = pytest.mark.skipif(
    find_binary() is None or shutil.which("promtool") is None,
    reason="no prometheus/promtool binaries (Debian packages `prometheus`; .ci/run installs them)",
)

STEP_S = 10
HOURS = 2
GAP = (4500, 5400)  # seconds after the start without samples


def _openmetrics(start_s: int) -> str:
    lines = [f"# TYPE {names.SOURCE_LATEST_OFFSET} counter"]
    offset = 0.0
    for t in range(0, HOURS * 3600 + 1, STEP_S):
        if t:
            offset += STEP_S * (1000.0 if t <= 3600 else 2000.0)
        if not GAP[0] <= t < GAP[1]:
            lines.append(f'{names.total(names.SOURCE_LATEST_OFFSET)}{{topic="events"}} {offset:.0f} {start_s + t}')
    return "\n".join([*lines, "# EOF", ""])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, int]]:
    """A Prometheus whose data directory holds the backfilled blocks (within its 15-day retention)."""
    workdir = tmp_path_factory.mktemp("prometheus")
    start_s = (int(time.time()) // 3600 - 4) * 3600
    write_history(_openmetrics(start_s).splitlines(), workdir, timeout_s=120)
    prometheus = start_prometheus([], workdir=workdir)
    try:
        yield prometheus, start_s
    finally:
        prometheus.stop()


def _config(url: str) -> object:
    return parse_config({"monitor": {"prometheus_url": url, "scrape_interval_s": 10, "rate_window_s": 40}})


def _history(server: tuple[PrometheusServer, int]) -> history_module.History:
    prometheus, start_s = server
    end_s = start_s + HOURS * 3600
    return from_prometheus(
        _config(prometheus.url),  # type: ignore[arg-type]
        url=prometheus.url,
        since_s=HOURS * 3600 + 1800,  # half an hour before the first sample: trimmed and said
        step_s=STEP_S,
        now_s=end_s,
        environ={},
    )


def test_range_query_history_with_its_gap(server: tuple[PrometheusServer, int]) -> None:
    _, start_s = server
    h = _history(server)
    assert h.notes and "no samples in the first" in h.notes[0]
    offset = int(h.start_unix_s - start_s)
    assert offset == 0  # the first rate (samples at 0 and 10 s) holds for the 10 s before it
    gaps = h.gaps()
    assert len(gaps) == 1
    gap_start, gap_end = (g + offset for g in gaps[0])
    # rate() over 40 s has no value from 20 s after the last sample before the gap to the first one after it
    assert GAP[0] <= gap_start <= GAP[0] + 30 and GAP[1] <= gap_end <= GAP[1] + 20
    known = h.workload_per_s
    first_hour = known[40 : 3600 - offset]  # rate()'s first windows hold fewer samples: Prometheus scales them down
    assert np.nanmin(first_hour) == pytest.approx(1000.0) and np.nanmax(first_hour) == pytest.approx(1000.0)
    late = known[3600 - offset + 40 : GAP[0] - offset]
    assert np.all(late == pytest.approx(2000.0))
    assert np.all(known[gaps[0][1] + 40 :] == pytest.approx(2000.0))


def test_windows_never_span_the_gap(server: tuple[PrometheusServer, int]) -> None:
    h = _history(server)
    ((gap_start, gap_end),) = h.gaps()
    plan = plan_windows(h.stretches(), SplitSettings(holdout_s=1800, window_s=3600, lead_in_s=600, min_window_s=600))
    for w in plan.windows:
        assert w.end_s <= gap_start or w.lead_start_s >= gap_end, w
        assert not np.isnan(h.workload_per_s[w.lead_start_s : w.end_s]).any()


def test_queries_in_chunks_give_the_same_history(
    server: tuple[PrometheusServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _history(server)
    monkeypatch.setattr(history_module, "MAX_POINTS_PER_QUERY", 97)  # 8 queries of 97 steps and a remainder
    chunked = _history(server)
    assert chunked.start_unix_s == whole.start_unix_s
    np.testing.assert_array_equal(chunked.workload_per_s, whole.workload_per_s)


def test_cli_refuses_a_history_missing_more_than_allowed(
    server: tuple[PrometheusServer, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prometheus, start_s = server
    (tmp_path / "grid.yaml").write_text("history: {max_gap_ratio: 0.05}\n")
    (tmp_path / "config.yaml").write_text(
        f"monitor: {{prometheus_url: '{prometheus.url}', scrape_interval_s: 10, rate_window_s: 40}}\n"
    )
    monkeypatch.chdir(tmp_path)
    argv = ["tune", "--config", "config.yaml", "--grid", "grid.yaml", "--job-model", "local", "--since", "2h"]
    code = main([*argv, "--now", str(start_s + HOURS * 3600)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "of it is missing (1 gaps, largest" in err and "more than history.max_gap_ratio 0.05" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "grid.yaml"]
