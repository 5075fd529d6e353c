"""tune's pure core as tables: the held-out split, the Pareto front and the choice, the YAML diff, the grid's
candidates, the history's gaps, the scored part of a run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import yaml

from daedalus_spark.config import Config
from daedalus_spark.plan.budget import rescale_tokens
from daedalus_spark.sim.job import Rescale
from daedalus_spark.sim.metrics import scored_part
from daedalus_spark.sim.runner import RunResult
from daedalus_spark.testing import tune_row
from daedalus_spark.tune.diff import changed_knobs, recommended_yaml, unified_diff
from daedalus_spark.tune.grid import SplitSettings, TuneGrid, TuneGridError, candidates
from daedalus_spark.tune.history import History, check_gaps, parse_duration, per_second, runs, trim
from daedalus_spark.tune.pareto import Totals, choose, pareto_front, totals
from daedalus_spark.tune.split import HOLDOUT, SELECT, HistoryError, Window, holdout_boundary, plan_windows
from daedalus_spark.tune.task import episodes

# --- the held-out split -------------------------------------------------------------------------------------------

SPLIT = SplitSettings(holdout_s=3600, holdout_max_ratio=0.25, window_s=7200, lead_in_s=600, min_window_s=600)


def _windows(plan: Any) -> list[tuple[str, int, int, int]]:
    return [(w.part, w.lead_start_s, w.start_s, w.end_s) for w in plan.windows]


@pytest.mark.parametrize(
    ("stretches", "settings", "expected"),
    [
        pytest.param(
            [(0, 4 * 3600)],
            SPLIT,
            [(SELECT, 0, 0, 5400), (SELECT, 4800, 5400, 10800), (HOLDOUT, 10200, 10800, 14400)],
            id="one-stretch:newest-hour-held-out,older-in-equal-windows-of-at-most-2h,lead-ins-before-each",
        ),
        pytest.param(
            [(0, 8000)],
            SPLIT,
            [(SELECT, 0, 0, 6000), (HOLDOUT, 5400, 6000, 8000)],
            id="short-history:a-quarter-held-out",
        ),
        pytest.param(
            [(0, 3000), (4000, 6400)],
            SPLIT.model_copy(update={"holdout_max_ratio": 0.4}),
            [(SELECT, 0, 0, 3000), (HOLDOUT, 4000, 4240, 6400)],
            id="gap:no-window-or-lead-in-crosses-it,a-piece-shorter-than-min-dropped",
        ),
        pytest.param(
            [(0, 300), (1000, 8000)],
            SPLIT,
            [(SELECT, 1000, 1000, 6250), (HOLDOUT, 5650, 6250, 8000)],
            id="stretch-shorter-than-min-window-dropped-before-the-split",
        ),
        pytest.param(
            [(0, 5000), (6000, 9000)],
            SPLIT,
            [(SELECT, 0, 0, 5000), (SELECT, 6000, 6000, 7000), (HOLDOUT, 6400, 7000, 9000)],
            id="holdout-boundary-in-the-newest-stretch",
        ),
    ],
)
def test_plan_windows(stretches: list[tuple[int, int]], settings: SplitSettings, expected: list[Any]) -> None:
    plan = plan_windows(stretches, settings)
    assert _windows(plan) == expected
    assert [w.index for w in plan.windows] == list(range(len(plan.windows)))
    held = plan.part(HOLDOUT)
    assert all(w.start_s >= plan.holdout_start_s for w in held)
    assert all(w.end_s <= plan.holdout_start_s for w in plan.part(SELECT))


def test_plan_windows_reports_what_it_dropped() -> None:
    assert plan_windows([(0, 300), (1000, 8000)], SPLIT).dropped == ((0, 300),)
    wide = SPLIT.model_copy(update={"holdout_max_ratio": 0.4})
    assert plan_windows([(0, 3000), (4000, 6400)], wide).dropped == ((4000, 4240),)


@pytest.mark.parametrize(
    ("stretches", "settings"),
    [
        pytest.param([], SPLIT, id="empty"),
        pytest.param([(0, 500), (900, 1400)], SPLIT, id="every-stretch-below-min-window"),
        pytest.param([(0, 1000)], SPLIT, id="too-short-for-both-parts"),
    ],
)
def test_plan_windows_refuses_a_history_without_both_parts(
    stretches: list[tuple[int, int]], settings: SplitSettings
) -> None:
    with pytest.raises(HistoryError, match=r"leave no (select|holdout) window"):
        plan_windows(stretches, settings)


@pytest.mark.parametrize(
    ("stretches", "holdout_s", "boundary"),
    [
        pytest.param([(0, 100)], 30, 70, id="inside-the-only-stretch"),
        pytest.param([(0, 100), (200, 220)], 30, 90, id="walks-back-over-a-gap"),
        pytest.param([(0, 100), (200, 220)], 20, 200, id="exactly-the-newest-stretch"),
        pytest.param([(0, 100)], 500, 0, id="more-than-there-is"),
    ],
)
def test_holdout_boundary(stretches: list[tuple[int, int]], holdout_s: int, boundary: int) -> None:
    assert holdout_boundary(stretches, holdout_s) == boundary


# --- the Pareto front and the choice ------------------------------------------------------------------------------


def T(candidate: int, wh: float, viol: int = 0, resc: int = 0, hours: float = 10.0) -> Totals:
    return Totals(candidate, hours, wh, viol, resc, 1.0)


@pytest.mark.parametrize(
    ("items", "front"),
    [
        pytest.param([T(0, 10), T(1, 9), T(2, 8)], [2], id="one-dominates-all"),
        pytest.param([T(0, 10, resc=2), T(1, 9, resc=5), T(2, 8, viol=1)], [2, 1, 0], id="trade-offs-all-on-front"),
        pytest.param([T(0, 10, resc=2), T(1, 10, resc=2), T(2, 11, resc=3)], [0], id="equal-figures-first-kept"),
        pytest.param([T(0, 10, viol=1, resc=1), T(1, 10, viol=0, resc=1)], [1], id="fewer-violations-dominates"),
    ],
)
def test_pareto_front(items: list[Totals], front: list[int]) -> None:
    assert [t.candidate for t in pareto_front(items)] == front


@pytest.mark.parametrize(
    ("items", "max_violations", "budget", "chosen"),
    [
        pytest.param([T(0, 10), T(1, 8), T(2, 9)], 0, 3, 1, id="fewest-executor-hours"),
        pytest.param([T(0, 10), T(1, 8, viol=1), T(2, 9)], 0, 3, 2, id="violations-exclude"),
        pytest.param([T(0, 10), T(1, 8, viol=1)], 1, 3, 1, id="violations-allowed"),
        pytest.param(
            [T(0, 10, resc=20), T(1, 8, resc=34), T(2, 9, resc=33)],
            0,
            3,
            2,
            id="budget-3-per-h-over-10h-and-a-full-bucket",
        ),
        pytest.param([T(0, 10, resc=20), T(1, 8, resc=31)], 0, 0, 1, id="budget-0-is-no-budget"),
        pytest.param(
            [T(0, 10, resc=2), T(1, 10, resc=1), T(2, 10, resc=1)], 0, 3, 1, id="tie-fewer-rescales-lower-index"
        ),
        pytest.param([T(0, 10, viol=2), T(1, 8, viol=1)], 0, 3, None, id="none-feasible"),
    ],
)
def test_choose(items: list[Totals], max_violations: int, budget: float, chosen: int | None) -> None:
    got = choose(items, max_violations=max_violations, max_rescales_per_hour=budget)
    assert (got.candidate if got else None) == chosen


def test_totals_sum_the_windows_of_one_part() -> None:
    rows = [
        replace(tune_row(1, SELECT, 6.0, viol=1, resc=3), hours=2.0, latency_p95_s=4.0),
        replace(tune_row(1, SELECT, 2.0, resc=1), latency_p95_s=9.0),
        replace(tune_row(1, HOLDOUT, 50.0, viol=7, resc=7), hours=5.0),
    ]
    t = totals(rows, SELECT)[1]
    assert (t.hours, t.executor_hours, t.violations, t.rescales, t.latency_p95_s) == (3.0, 8.0, 1, 4, 9.0)
    assert t.rescales_per_hour == pytest.approx(4 / 3)


# --- the YAML diff ------------------------------------------------------------------------------------------------

USER = """\
# my controller
controller:
  loop_interval_s: 60   # every minute
  max_scaleout: 8
forecast:
  horizon_s: 900
"""


@pytest.mark.parametrize(
    ("changes", "expected_lines"),
    [
        pytest.param(
            {"controller.loop_interval_s": 30},
            ["  loop_interval_s: 30   # every minute"],
            id="in-place-comment-kept",
        ),
        pytest.param(
            {"controller.target_recovery_s": 400},
            ["controller:", "  target_recovery_s: 400", "  loop_interval_s: 60   # every minute"],
            id="key-added-to-its-section",
        ),
        pytest.param(
            {"capacity.unobserved_margin_ratio": 0.05},
            ["capacity:", "  unobserved_margin_ratio: 0.05"],
            id="section-added",
        ),
        pytest.param({"controller.planner": "cost_aware"}, ["  planner: cost_aware"], id="string-value"),
    ],
)
def test_recommended_yaml_edits_the_users_file(changes: dict[str, Any], expected_lines: list[str]) -> None:
    text = recommended_yaml(USER, changes)
    lines = text.splitlines()
    start = lines.index(expected_lines[0])
    assert lines[start : start + len(expected_lines)] == expected_lines
    assert text.startswith("# my controller\n")
    data = yaml.safe_load(text)
    for path, value in changes.items():
        section, _, key = path.partition(".")
        assert data[section][key] == value
    assert data["forecast"] == {"horizon_s": 900}


def test_recommended_yaml_from_no_file_and_from_flow_style() -> None:
    assert recommended_yaml("", {}) == "" and recommended_yaml(USER, {}) == USER
    assert yaml.safe_load(recommended_yaml("", {"controller.cooldown_s": 120})) == {"controller": {"cooldown_s": 120}}
    flow = "controller: {loop_interval_s: 60, max_scaleout: 8}\n"
    data = yaml.safe_load(recommended_yaml(flow, {"controller.loop_interval_s": 30}))
    assert data == {"controller": {"loop_interval_s": 30, "max_scaleout": 8}}


def test_unified_diff_shows_only_the_change() -> None:
    diff = unified_diff(USER, recommended_yaml(USER, {"controller.max_scaleout": 6}), name="my.yaml")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-  max_scaleout: 8", "+  max_scaleout: 6"]
    assert unified_diff(USER, USER, name="my.yaml") == ""


def test_changed_knobs_leaves_out_values_the_config_already_has() -> None:
    current = Config().model_dump(mode="python")
    knobs = {"controller.loop_interval_s": 60, "forecast.interval_level": 0.8}
    assert changed_knobs(knobs, current) == {"forecast.interval_level": 0.8}


# --- the grid -----------------------------------------------------------------------------------------------------


def test_candidates_are_your_config_then_every_combination() -> None:
    grid = TuneGrid.model_validate(
        {"knobs": {"controller.loop_interval_s": [30, 60], "forecast.interval_level": [0.8, 0.9]}}
    )
    cands = candidates(grid, Config())
    assert len(cands) == 5 and cands[0].knobs == () and cands[0].config == Config()
    assert [c.index for c in cands] == list(range(5))
    assert cands[3].config.controller.loop_interval_s == 60 and cands[3].config.forecast.interval_level == 0.8


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        pytest.param(
            {"controller.loop_intervals": [30]},
            "knobs.controller.loop_intervals: unknown config key (allowed in controller:",
            id="unknown-key",
        ),
        pytest.param(
            {"control.loop_interval_s": [30]},
            "knobs.control.loop_interval_s: unknown config key (expected section.key",
            id="unknown-section",
        ),
        pytest.param(
            {"forecast.interval_level": [0.9, 1.5]},
            "knobs.forecast.interval_level[1] = 1.5: forecast.interval_level: Input should be less than 1",
            id="out-of-bounds",
        ),
        pytest.param(
            {"controller.planner": ["horizon", "greedy"]}, "knobs.controller.planner[1] = 'greedy'", id="not-one-of"
        ),
        pytest.param(
            {"controller.min_scaleout": [1, 6], "controller.max_scaleout": [4]},
            "grid entry 2 (controller.min_scaleout=6, controller.max_scaleout=4): controller.min_scaleout (6) must not",
            id="whole-config-invalid",
        ),
    ],
)
def test_grid_errors_name_the_entry_and_the_yaml_path(knobs: dict[str, list[Any]], message: str) -> None:
    with pytest.raises(TuneGridError) as err:
        candidates(TuneGrid.model_validate({"knobs": knobs}), Config(), "tune.yaml")
    assert message in err.value.one_line()
    assert err.value.one_line().startswith("tune.yaml: invalid tune grid: ")


def test_grid_knob_values_must_be_a_list() -> None:
    from daedalus_spark.config import parse_model

    with pytest.raises(TuneGridError, match=r"knobs: .*controller.cooldown_s: expected a non-empty list"):
        parse_model(TuneGrid, {"knobs": {"controller.cooldown_s": 120}}, "tune.yaml", TuneGridError)


# --- the history --------------------------------------------------------------------------------------------------


def test_per_second_holds_each_sample_for_its_step_and_leaves_missing_steps_nan() -> None:
    times = np.array([110.0, 120.0, 150.0, 160.0])  # steps ending at 130 and 140 are missing
    values = np.array([1.0, 2.0, 5.0, -1.0])  # a negative rate is not a rate
    out = per_second(times, values, start_s=100, end_s=160, step_s=10)
    expected = np.repeat([1.0, 2.0, np.nan, np.nan, 5.0, np.nan], 10)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        pytest.param([1, 1, 0, 1], [(0, 2), (3, 4)], id="two-runs"),
        pytest.param([0, 0], [], id="none"),
        pytest.param([1], [(0, 1)], id="one-second"),
    ],
)
def test_runs(mask: list[int], expected: list[tuple[int, int]]) -> None:
    assert runs(np.array(mask, dtype=bool)) == expected


def test_trim_and_gap_check() -> None:
    series, leading, trailing = trim(np.array([np.nan, np.nan, 1.0, np.nan, 2.0, np.nan]))
    assert (leading, trailing) == (2, 1) and np.isnan(series[1]) and len(series) == 3
    history = History("h", 0.0, np.concatenate([np.ones(80), np.full(15, np.nan), np.ones(5)]))
    assert history.stretches() == [(0, 80), (95, 100)] and history.gaps() == [(80, 95)]
    check_gaps(history, 0.2)
    with pytest.raises(HistoryError, match=r"15% of it is missing \(1 gaps, largest 15 s at \+80 s\)"):
        check_gaps(history, 0.1)


@pytest.mark.parametrize(("text", "seconds"), [("7d", 604800), ("36h", 129600), ("1d12h", 129600), ("90m", 5400)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "7x", "d7", "1d 2h", "-1d"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


# --- the scored part of a run -------------------------------------------------------------------------------------


def test_scored_part_drops_the_lead_in_and_its_rescales() -> None:
    n = 10
    run = RunResult(
        "daedalus",
        workload_per_s=np.arange(n, dtype=float),
        scaleout=np.array([4] * 5 + [2] * 5),
        processing=np.ones(n, bool),
        processed_per_s=np.zeros(n),
        lag_records=np.zeros(n),
        latency_s=np.zeros(n),
        capacity_per_s=np.ones(n),
        rescales=(Rescale(2, 4, 3, 1, 0.0), Rescale(6, 3, 2, 1, 0.0)),
        lag_allowance_s=np.full(n, 2.0),
    )
    scored = scored_part(run, 4)
    assert list(scored.scaleout) == [4, 2, 2, 2, 2, 2] and len(scored.lag_allowance_s) == 6  # type: ignore[arg-type]
    assert [(r.time_s, r.from_scaleout) for r in scored.rescales] == [(2, 3)]


@pytest.mark.parametrize(
    ("mask", "longer_than_s", "count"),
    [
        ([0, 1, 1, 0, 1], 0, 2),
        ([1, 1], 0, 1),
        ([], 0, 0),
        ([0, 0], 0, 0),
        ([1, 0, 1, 0, 1], 0, 3),
        ([0, 1, 1, 0, 1], 1, 1),
    ],
)
def test_episodes(mask: list[int], longer_than_s: float, count: int) -> None:
    assert episodes(np.array(mask, dtype=bool), longer_than_s=longer_than_s) == count


@pytest.mark.parametrize(
    ("lead_in_s", "per_hour", "full"),
    [
        pytest.param(SplitSettings().lead_in_s, 1.0, True, id="default-lead-in-budget-1"),
        pytest.param(SplitSettings().lead_in_s, 3.0, True, id="default-lead-in-budget-3"),
        pytest.param(SplitSettings().lead_in_s, 12.0, True, id="default-lead-in-budget-12"),
        pytest.param(1800, 3.0, False, id="half-an-hour-half-a-bucket"),
        pytest.param(900, 3.0, False, id="15-min-not-one-token"),
    ],
)
def test_the_default_lead_in_lets_a_fresh_controller_earn_its_whole_rescale_budget(
    lead_in_s: float, per_hour: float, full: bool
) -> None:
    """A window's controller starts with an empty bucket (nothing remembered before the lead-in's first tick): the
    scored part should start with the budget the controller's allowance is judged by, a full bucket."""
    tokens = rescale_tokens([], lead_in_s, per_hour=per_hour, since_s=0.0)
    assert (tokens == pytest.approx(per_hour)) is full


def test_window_seconds() -> None:
    assert Window(0, SELECT, 0, 100, 250).seconds == 150


def test_a_recovery_from_the_lead_in_excuses_its_seconds_and_every_late_stretch_outside_one_is_a_violation() -> None:
    """A rescale at second 8 of the lead-in (recovery target 5 s): latency above the 10-s objective at 8..12; scored
    from 10: 10..12 excused; late again at 15..16 and at 20..25, outside any recovery: two violations by the
    acceptance rule, however short (seconds behind the trigger are counted beside them, as a diagnostic)."""
    from daedalus_spark.tune.task import judge

    n = 30
    lag = np.zeros(n)
    lag[8:13] = lag[15:17] = lag[20:26] = 1e6
    run = RunResult(
        "daedalus",
        workload_per_s=np.full(n, 100.0),
        scaleout=np.full(n, 2),
        processing=np.ones(n, bool),
        processed_per_s=np.full(n, 100.0),
        lag_records=lag,
        latency_s=np.where(lag > 0, 60.0, 1.0),
        capacity_per_s=np.full(n, 200.0),
        rescales=(Rescale(8, 3, 2, 1, 0.0),),
    )
    window = Window(0, SELECT, 0, 10, 30)
    row = judge(run, start=10, candidate=1, window=window, target_recovery_s=5, target_latency_s=10)
    assert (row.behind_s, row.behind_episodes, row.violations, row.rescales) == (8, 2, 2, 0)
    assert row.hours == pytest.approx(20 / 3600) and row.executor_hours == pytest.approx(40 / 3600)
