"""Unit: benchmarks/live_compare.py — which lines it runs (`static:N`, `static:all`) and how a live timeline is
judged by the acceptance rule (latency within its objective outside recoveries, every recovery within its target)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from live_compare import autoscaler_runs, timeline_result

from daedalus_spark.sim.metrics import passes

RATE = 1000.0  # records/s arriving


def timeline(executors: list[int], lag_s: list[float]) -> list[dict[str, str]]:
    """One sample a second: `lag_s[i]` seconds of arrivals unread at second i."""
    return [
        {
            "t_s": str(float(i)),
            "executors": str(n),
            "lag_records": str(lag * RATE),
            "records_in": str(RATE * (i + 1000)),
        }
        for i, (n, lag) in enumerate(zip(executors, lag_s, strict=True))
    ]


def judged(executors: list[int], lag_s: list[float]) -> bool:
    result = timeline_result(timeline(executors, lag_s), load_s=len(executors))
    return passes(result, target_latency_s=30.0, target_recovery_s=60.0)


@pytest.mark.parametrize(
    ("executors", "lag_s", "passing"),
    [
        ([1] * 300, [5.0] * 300, True),
        ([1] * 300, [5.0] * 200 + [40.0] * 100, False),
        ([1] * 100 + [2] * 200, [5.0] * 100 + [40.0] * 50 + [5.0] * 150, True),
        ([1] * 100 + [2] * 200, [5.0] * 100 + [40.0] * 80 + [5.0] * 120, False),
        ([2] * 300, [5.0] * 299 + [31.0], False),
    ],
    ids=["kept-up", "behind-without-rescale", "recovered-within-target", "recovery-too-long", "late-at-the-end"],
)
def test_a_live_timeline_is_judged_by_the_acceptance_rule(
    executors: list[int], lag_s: list[float], passing: bool
) -> None:
    assert judged(executors, lag_s) is passing


def test_the_timeline_becomes_per_second_executors_latency_and_rescales() -> None:
    result = timeline_result(timeline([1] * 10 + [3] * 10, [2.0] * 20), load_s=20)
    assert list(result.scaleout) == [1] * 10 + [3] * 10
    assert [(r.time_s, r.from_scaleout, r.to_scaleout) for r in result.rescales] == [(10, 1, 3)]
    assert result.latency_s[5:] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("names", "lines"),
    [
        (["static:all"], {"static:1": ("static", 1), "static:2": ("static", 2), "static:3": ("static", 3)}),
        (["static"], {"static:3": ("static", 3)}),
        (["daedalus", "static:2"], {"daedalus": ("daedalus", 0), "static:2": ("static", 2)}),
    ],
    ids=["every-static", "static-alone-is-the-maximum", "mixed"],
)
def test_lines_to_run(names: list[str], lines: dict[str, tuple[str, int]]) -> None:
    assert autoscaler_runs(names, 3) == lines


@pytest.mark.parametrize("name", ["static:0", "static:4", "static:x", "daedalus:paper", "hpa"])
def test_an_unknown_line_is_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        autoscaler_runs([name], 3)
