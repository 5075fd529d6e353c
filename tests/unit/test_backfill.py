"""The start-up backfill: gaps found and never crossed, only what follows the stored knowledge read, bad and absurd
data refused by name, the live loop continuing where it stopped (a recorded past served as Prometheus answers)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.domain import BatchWindow, ExecutorSeries, Observation
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.knowledge.history import History
from daedalus_spark.knowledge.state import InMemoryKnowledgeStore, restore, snapshot
from daedalus_spark.loop import Loop
from daedalus_spark.monitor import backfill as backfill_module
from daedalus_spark.monitor.assemble import Window
from daedalus_spark.monitor.backfill import (
    Gap,
    absurd,
    backfill,
    forecast_use,
    gaps_between,
    known_runs,
    split_answers,
    warm_start,
    window_bounds,
)
from daedalus_spark.monitor.replay import RecordedPast
from daedalus_spark.report.knowledge_report import build, format_text

STEP_S, LOOP_S = 10.0, 60.0
T0 = 1_800_000_000.0  # the past's first second (a whole number of loop intervals)
HOURS = 2
GAP = (T0 + 4800, T0 + 5400)  # no sample at all in these windows
END = T0 + HOURS * 3600
MID = T0 + 3600


def _config(**controller: object) -> Config:
    return parse_config(
        {
            "controller": {"loop_interval_s": LOOP_S, "max_scaleout": 8, **controller},
            "monitor": {"step_s": STEP_S},
            # More history before a fit than these pasts hold: they count the forecaster's buckets, and an ARIMA fit
            # in every controller would take most of their time (the integration test fits one).
            "forecast": {"background_refit": False, "min_history_s": HOURS * 3600 + 600},
        }
    )


def _window(end_s: float) -> Observation:
    """One loop window of a 2-executor job at a load that swings between 500 and 1,500/s (30-min cycle)."""
    times = [end_s - LOOP_S + (i + 1) * STEP_S for i in range(round(LOOP_S / STEP_S))]
    load = [1000.0 + 500.0 * math.sin(2 * math.pi * t / 1800.0) for t in times]
    executors = tuple(
        ExecutorSeries(f"{e}", tuple(w / 2 for w in load), tuple(0.05 + (w / 2) / 1000.0 for w in load))
        for e in ("1", "2")
    )
    records = sum(load) * STEP_S
    batches = LOOP_S / 2.0  # a batch every 2 s, 0.2 s fixed + 1 ms per 1,000 records
    return Observation(
        time_s=end_s,
        step_s=STEP_S,
        workload_per_s=tuple(load),
        executors=executors,
        consumer_lag_records=0.0,
        scaleout=2,
        uptime_s=end_s - T0 + 3600.0,
        batches=BatchWindow(batches, records, batches * 0.2 + records * 1e-6),
    )


def _past(until_s: float = END, *, gap: tuple[float, float] | None = GAP) -> list[Observation]:
    ends = [T0 + LOOP_S * (i + 1) for i in range(round((until_s - T0) / LOOP_S))]
    return [_window(t) for t in ends if gap is None or not gap[0] < t <= gap[1]]


@pytest.mark.parametrize(
    ("values", "runs", "gaps"),
    [
        ([1, 2, 3], [(0, 3)], []),
        ([math.nan, 1, 2], [(1, 3)], []),  # before the first sample: Prometheus holds nothing, no gap
        ([1, math.nan, math.nan, 2], [(0, 1), (3, 4)], [(1, 3)]),
        ([1, 2, math.nan], [(0, 2)], [(2, 3)]),  # nothing until the start: a gap, up to the end
        ([math.nan, math.nan], [], []),
        ([1, math.nan, 2, math.nan, 3], [(0, 1), (2, 3), (4, 5)], [(1, 2), (3, 4)]),
    ],
    ids=["contiguous", "leading", "inside", "trailing", "nothing", "two"],
)
def test_runs_and_gaps(values: list[float], runs: list[tuple[int, int]], gaps: list[tuple[int, int]]) -> None:
    found = known_runs(values)
    assert found == runs
    expected = [(100 + a * 10.0, 100 + b * 10.0) for a, b in gaps]
    assert [(g.start_s, g.end_s) for g in gaps_between(found, len(values), start_s=100, step_s=10)] == expected


@pytest.mark.parametrize(
    ("runs", "steps", "known", "uses"),
    [
        ([(0, 10)], 10, False, ["continue"]),
        ([(3, 10)], 10, False, ["continue"]),  # a fresh forecaster starts at the first sample
        ([(0, 4), (6, 10)], 10, False, ["skip", "continue"]),  # only after the last gap
        ([(0, 4), (6, 9)], 10, False, ["skip", "continue"]),  # a step short, less than a bucket: none unseen
        ([(0, 4), (6, 7)], 10, False, ["skip", "skip"]),  # three short: a gap before the first tick, nothing fed
        ([(0, 10)], 10, True, ["continue"]),  # it follows the stored knowledge
        ([(2, 10)], 10, True, ["afresh"]),  # a gap right after the stored knowledge
        ([(0, 4), (6, 10)], 10, True, ["skip", "afresh"]),
        ([], 10, True, []),
    ],
    ids=["whole", "late-start", "gap", "short-tail", "gap-at-end", "restart", "restart-gap", "restart-gap-in", "none"],
)
def test_the_forecaster_sees_the_last_stretch_only(
    runs: list[tuple[int, int]], steps: int, known: bool, uses: list[str]
) -> None:
    assert forecast_use(runs, steps, known=known, tolerance_steps=1) == uses


@pytest.mark.parametrize(
    ("start", "end", "bounds"),
    [
        (0, 180, [(0, 60), (60, 120), (120, 180)]),
        (30, 180, [(30, 60), (60, 120), (120, 180)]),  # the first shorter: the last ends where the loop goes on
        (170, 180, [(170, 180)]),
        (180, 180, []),
    ],
    ids=["whole", "partial-first", "short", "empty"],
)
def test_window_bounds(start: float, end: float, bounds: list[tuple[float, float]]) -> None:
    assert window_bounds(start, end, 60) == bounds


def test_split_answers_puts_each_sample_in_its_window() -> None:
    series = {"metric": {"executor_id": "1"}, "values": [[t, str(t)] for t in (10, 60, 70, 120, 130)]}
    untimed = {"metric": {}, "values": [["x", "1"], [10, "2"]]}
    windows = [Window(0, 60, 10), Window(60, 120, 10), Window(120, 180, 10)]
    out = split_answers({"throughput": [series], "workload": [untimed]}, windows)
    assert [[p[0] for p in m["throughput"][0]["values"]] for _, m in out] == [[10, 60], [70, 120], [130]]
    assert all(m["throughput"][0]["metric"] == {"executor_id": "1"} for _, m in out)
    assert out[0][1]["workload"][0]["values"] == [[10, "2"], ["x", "1"]]  # the assembly refuses it, naming it
    assert out[1][1]["workload"] == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"workload_per_s": (1e16,) * 6}, "query 'workload' at 2027-01-15T08:"),
        ({"executors": (ExecutorSeries("7", (1e17,) * 6, (0.5,) * 6),)}, "query 'throughput' executor 7 at"),
        ({"executors": (ExecutorSeries("7", (10.0,) * 6, (0.5,) * 5 + (4.0,)),)}, "query 'utilization' executor 7"),
        ({"consumer_lag_records": 1e16}, "query 'lag' at"),
        ({"scaleout": 20_000}, "query 'executors' at"),
    ],
    ids=["workload", "throughput", "utilization", "lag", "scaleout"],
)
def test_absurd_values_are_named(change: dict[str, object], named: str) -> None:
    obs = replace(_window(T0 + 600), executors=(ExecutorSeries("7", (10.0,) * 6, (0.5,) * 6),), scaleout=1)
    assert absurd(obs) == ""
    assert named in absurd(replace(obs, **change))  # type: ignore[arg-type]


def test_a_cold_start_learns_the_past_and_never_crosses_its_gap() -> None:
    config = _config()
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(_past()), config, now_s=END + 3)
    assert report is not None and report.end_s == END and report.start_s == END - 86400
    assert report.first_sample_s == T0 + STEP_S
    assert report.gaps == [Gap(*GAP)]
    assert report.windows == 120 and report.windows_learned == 110 and report.windows_missing == {"empty": 10}
    k = controller.knowledge
    # the forecaster holds the 30 min after the gap, 10-s buckets, and nothing from before it
    assert k.forecaster.history_steps == round((END - GAP[1]) / 10) == 180
    assert "fed with" in report.forecast and report.forecast.endswith("(180 steps)")
    stamps = [t for t, _ in k.history.workload]
    assert stamps[0] == T0 + 10 and stamps[-1] == END
    assert not any(GAP[0] < t <= GAP[1] for t in stamps)
    assert {e: r.n for e, r in k.capacity.regressions.items()} == {"1": 660, "2": 660}  # every sample of 110 windows
    assert k.capacity.regressions["1"].slope == pytest.approx(1000.0)
    assert k.capacity.batches.fit(2) is not None  # the batch line: 0.2 s + 1 ms per 1,000 records
    assert k.capacity.batches.fit(2).fixed_s == pytest.approx(0.2)  # type: ignore[union-attr]
    assert k.history.latest_table is not None and k.history.latest_table.current_scaleout == 2
    lines = report.lines()
    assert any(line.startswith("backfill gap: ") and "(600 s, no samples): not crossed" in line for line in lines)
    assert any("nothing before" in line and "Prometheus holds no older samples" in line for line in lines)


def test_two_backfills_learn_what_one_does() -> None:
    """A restart reads only what follows the stored knowledge: nothing counted twice."""
    config = _config()
    once = Controller(config)
    backfill(once, RecordedPast.of(_past(gap=None)), config, now_s=END)
    store = InMemoryKnowledgeStore()
    first = Controller(config)
    backfill(first, RecordedPast.of(_past(gap=None)), config, now_s=MID)
    first.save(store)
    again = Controller.resume(config, store, now_s=END)
    assert again.known_until_s == MID
    report = backfill(again, RecordedPast.of(_past(gap=None)), config, now_s=END)
    assert report is not None and report.start_s == MID and report.known_until_s == MID
    assert report.windows == 60 and report.gaps == [] and report.forecast.startswith("fed with")
    a, b = once.knowledge, again.knowledge
    assert {e: r.n for e, r in b.capacity.regressions.items()} == {e: r.n for e, r in a.capacity.regressions.items()}
    assert b.capacity.regressions["1"].mean_y == pytest.approx(a.capacity.regressions["1"].mean_y, rel=1e-12)
    assert b.capacity.batches.fits[2].n == a.capacity.batches.fits[2].n == 118  # the first 2 min: a new scale-out
    assert list(b.history.workload) == list(a.history.workload)
    assert b.forecaster.history_steps == a.forecaster.history_steps
    nothing_new = backfill(again, RecordedPast.of(_past(gap=None)), config, now_s=END)
    assert nothing_new is not None and nothing_new.start_s == nothing_new.end_s == END
    assert {e: r.n for e, r in again.knowledge.capacity.regressions.items()} == {"1": 720, "2": 720}


def test_a_gap_after_the_stored_knowledge_starts_the_forecaster_afresh() -> None:
    config = _config()
    store = InMemoryKnowledgeStore()
    first = Controller(config)
    backfill(first, RecordedPast.of(_past()), config, now_s=T0 + 4500)  # before the gap
    first.save(store)
    again = Controller.resume(config, store, now_s=END)
    report = backfill(again, RecordedPast.of(_past()), config, now_s=END)
    assert report is not None and report.gaps == [Gap(*GAP)]
    assert report.forecast.startswith("started afresh with")
    assert again.knowledge.forecaster.history_steps == 180  # the stretch after the gap, not the 450 steps before


def test_known_until_is_the_last_tick_that_observed() -> None:
    config = _config()
    controller = Controller(config)
    assert controller.known_until_s is None
    controller.conclude(controller.tick(_window(T0 + 600), T0 + 600))
    controller.conclude(controller.skip(T0 + 660, 2, problem="down", monitor_error="unreachable"))
    assert controller.known_until_s == T0 + 600  # the window of a failed tick was never learned


def test_bad_and_absurd_data_is_refused_by_name_and_learned_from_nowhere() -> None:
    config = _config()
    past = _past(gap=None)
    bad_at = 30  # the window ending at T0 + 31 min: NaN workload at its third sample
    past[bad_at] = replace(past[bad_at], workload_per_s=(*past[bad_at].workload_per_s[:2], math.nan, 1.0, 1.0, 1.0))
    crazy = past[40]
    cores_not_ratio = replace(crazy.executors[0], utilization_ratio=(50.0,) * 6)
    past[40] = replace(crazy, executors=(cores_not_ratio, crazy.executors[1]))
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(past), config, now_s=END)
    assert report is not None
    nan_time = "2027-01-15T08:30:30+00:00"  # T0 + 30 min 30 s
    assert report.refused[0] == f"query 'workload' at {nan_time}: nan records/s (NaN, infinite or negative)"
    assert any("query 'utilization' executor 1 at" in line and "is beyond 2" in line for line in report.refused)
    assert any("(NaN, infinite or negative)" in line and "query 'workload'" in line for line in report.refused[1:])
    assert report.gaps == [Gap(T0 + 1820, T0 + 1830)]  # the NaN splits the stretch
    assert report.windows_missing == {"absurd": 1, "invalid": 1}
    # neither window taught the capacity model anything
    clean = Controller(config)
    kept = [w for i, w in enumerate(_past(gap=None)) if i not in (bad_at, 40)]
    backfill(clean, RecordedPast.of(kept), config, now_s=END)
    assert controller.knowledge.capacity.regressions["1"].n == clean.knowledge.capacity.regressions["1"].n == 708


def test_off_without_a_past_or_when_zero() -> None:
    config = _config(backfill_s=0)
    controller = Controller(config)
    assert warm_start(controller, RecordedPast.of(_past()), config, now_s=END) is None
    assert warm_start(controller, object(), _config(), now_s=END) is None  # a monitor that keeps no past
    assert controller.knowledge.forecaster.history_steps == 0 and not controller.knowledge.capacity.regressions


def test_the_live_loop_continues_where_the_backfill_stopped() -> None:
    config = _config()
    controller = Controller(config)
    report = warm_start(controller, RecordedPast.of(_past(gap=None)), config, now_s=END)
    assert report is not None

    class Monitor:
        def __init__(self) -> None:
            self.asked: list[tuple[float, float]] = []

        def observe(self, *, start_s: float, end_s: float) -> Observation:
            self.asked.append((start_s, end_s))
            return _window(end_s)

        def close(self) -> None:
            return None

    monitor = Monitor()
    clock = FakeClock(END + LOOP_S)
    loop = Loop(controller, monitor, DryRunActuator(), None, clock)
    loop.continue_from(report.end_s)
    result = loop.step()
    assert monitor.asked == [(END, END + LOOP_S)]
    # warm: the first tick plans (no warm-up hold, no "no capacity known yet")
    assert result.decision.evidence.skip is None, result.decision


def test_the_report_is_kept_with_the_knowledge() -> None:
    config = _config()
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(_past()), config, now_s=END)
    assert report is not None
    controller.knowledge.history.backfill = tuple(report.lines())
    restored = restore(snapshot(controller.knowledge), config)
    assert restored.history.backfill == tuple(report.lines())
    text = format_text(build(restored))
    assert "backfill gap: 2027-01-15T09:20:00+00:00 .. 2027-01-15T09:30:00+00:00 (600 s" in text
    assert History.from_state({"version": 1}).backfill == ()


def test_capacity_reads_the_newest_windows_within_the_sample_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config()  # max_scaleout 8: (2 x 8 + 8) series x 6 steps = 144 samples a window
    monkeypatch.setattr(backfill_module, "MAX_WINDOW_SAMPLES", 144 * 30)
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(_past(gap=None)), config, now_s=END)
    assert report is not None and report.windows == 30 and report.windows_older == 90
    assert controller.knowledge.capacity.regressions["1"].n == 30 * 6
    assert controller.knowledge.forecaster.history_steps == 720  # the workload is read whole
    assert any("capacity from the newest 30 loop windows only (90 older ones not read" in x for x in report.lines())


def test_the_windows_stop_when_the_start_up_budget_runs_out(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config()
    monkeypatch.setattr(backfill_module, "MAX_SAMPLES_PER_QUERY", 8 * 6 * 20)  # chunks of 20 windows
    ticks = iter([0.0, 1.0, backfill_module.BUDGET_S + 1])  # the start, before the first chunk, before the second
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(_past(gap=None)), config, now_s=END, monotonic=lambda: next(ticks))
    assert report is not None and report.windows_learned == 20
    assert report.stopped == "at 2027-01-15T08:20:00+00:00: the start-up's 90-s budget ran out"
    assert "backfill stopped early: at 2027-01-15T08:20:00+00:00" in report.lines()[-1]


def test_a_past_that_stops_before_the_start_feeds_no_forecaster() -> None:
    config = _config()  # 10-s steps and 10-s forecast buckets: one step missing at the end is a whole bucket
    controller = Controller(config)
    report = backfill(controller, RecordedPast.of(_past(END - LOOP_S, gap=None)), config, now_s=END)
    assert report is not None and report.gaps == [Gap(END - LOOP_S, END, "no samples until the start")]
    assert report.forecast.startswith("nothing") and controller.knowledge.forecaster.history_steps == 0
    assert controller.knowledge.capacity.regressions["1"].n == 119 * 6  # capacity has no time axis: learned
