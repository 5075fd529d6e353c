"""The pure assembly of range-query results into an Observation: alignment by timestamp and its refusals."""

from __future__ import annotations

import logging

import pytest

from daedalus_spark.monitor.assemble import Window, build_observation, render_duration, substitute
from daedalus_spark.monitor.port import MonitorError
from tests.unit.query_results import GRID, WINDOW, const, results, series


def test_complete_results_make_the_observation() -> None:
    obs = build_observation(results(), WINDOW, executor_label="executor_id")
    assert obs.time_s == 110 and obs.scaleout == 2 and obs.executor_ids == ("1", "2")
    assert obs.workload_per_s == tuple(10.0 * t for t in GRID)
    assert obs.executors[1].throughput_per_s == (7.0,) * 10 and obs.executors[0].utilization_ratio == (0.5,) * 10
    assert (obs.consumer_lag_records, obs.uptime_s) == (4.0, 55.0)


def test_timestamps_missing_in_either_series_are_dropped_for_everyone() -> None:
    # Executor 2's utilization starts 3 steps late (a new executor's first rate()): every series starts there too,
    # so throughput and utilization always describe the same seconds.
    late = results(utilization=[series(const(0.5), executor_id="1"), series(const(0.7, GRID[3:]), executor_id="2")])
    obs = build_observation(late, WINDOW, executor_label="executor_id")
    assert len(obs.workload_per_s) == 7 and obs.workload_per_s[0] == 1040.0
    assert all(len(w.throughput_per_s) == len(w.utilization_ratio) == 7 for w in obs.executors)


def test_an_executor_that_left_inside_the_window_is_dropped() -> None:
    left = results(
        throughput=results()["throughput"] + [series(const(9.0, GRID[:4]), executor_id="3")],
        utilization=results()["utilization"] + [series(const(0.9, GRID[:4]), executor_id="3")],
    )
    obs = build_observation(left, WINDOW, executor_label="executor_id")
    assert obs.executor_ids == ("1", "2") and len(obs.workload_per_s) == 10


def test_samples_outside_the_window_are_ignored() -> None:
    wide = results(workload=[series(dict.fromkeys(range(95, 115), 1.0))])
    assert len(build_observation(wide, WINDOW, executor_label="executor_id").workload_per_s) == 10


@pytest.mark.parametrize(
    ("override", "kind"),
    [
        ({"lag": []}, "empty"),
        ({"uptime": [series({90: 1.0})]}, "empty"),
        ({"workload": [series(const("NaN"))]}, "invalid"),
        ({"workload": [series(const("+Inf"))]}, "invalid"),
        ({"lag": [series({110: -1.0})]}, "invalid"),
        ({"lag": [series({110: "many"})]}, "invalid"),
        ({"executors": [series(const(2.5))]}, "invalid"),
        ({"workload": [series(const(1.0)), series(const(2.0))]}, "invalid"),
        ({"throughput": [series(const(1.0))]}, "invalid"),
        ({"utilization": [series(const(0.5), executor_id="1")]}, "partial"),
        ({"executors": [series(const(3.0))]}, "partial"),
        ({"executors": [series(const(0.0))]}, "partial"),
        ({"workload": [series({t: 1.0 for t in GRID if t != 105})]}, "partial"),
        (
            {
                "workload": [series(const(1.0, GRID[:3]))],
                "utilization": [series(const(0.5, GRID[5:]), executor_id="1"), series(const(0.7), executor_id="2")],
            },
            "partial",
        ),
    ],
    ids=[
        "no-lag",
        "uptime-outside-window",
        "nan",
        "inf",
        "negative",
        "non-numeric",
        "fractional-executors",
        "two-workload-series",
        "no-executor-label",
        "fewer-executors",
        "scaleout-above-series",
        "no-executors",
        "hole",
        "no-common-sample",
    ],
)
def test_unusable_results_raise_their_kind(override: dict, kind: str) -> None:
    with pytest.raises(MonitorError) as err:
        build_observation(results(**override), WINDOW, executor_label="executor_id")
    assert err.value.kind == kind, str(err.value)


@pytest.mark.parametrize(("seconds", "rendered"), [(5, "5s"), (60, "60s"), (1.5, "1500ms"), (0.0001, "1ms")])
def test_rate_window_renders_as_a_promql_duration(seconds: float, rendered: str) -> None:
    assert render_duration(seconds) == rendered
    assert substitute("rate(x[$rate_window])", seconds) == f"rate(x[{rendered}])"


def test_window_grid_is_the_steps_after_start_up_to_end() -> None:
    assert Window(100.5, 103.0, 1.0).times_s() == [101.0, 102.0, 103.0]
    assert Window(100.0, 101.0, 0.5).times_s() == [100.5, 101.0]


def test_partition_rates_are_averaged_over_the_window() -> None:
    parts = [
        series({t: 4.0 + (t % 2) for t in GRID}, topic="events", partition="1"),
        series(const(2.0, GRID[5:]), topic="events", partition="0"),  # rate() starts late: mean of what there is
    ]
    obs = build_observation(results(partitions=parts), WINDOW, executor_label="executor_id")
    assert [(p.topic, p.partition, p.records_per_s) for p in obs.partitions] == [("events", 0, 2.0), ("events", 1, 4.5)]


def test_without_partition_rates_the_observation_has_none() -> None:
    assert build_observation(results(), WINDOW, executor_label="executor_id").partitions == ()


@pytest.mark.parametrize(
    "parts",
    [
        pytest.param([series(const(1.0), topic="events")], id="no-partition-label"),
        pytest.param([series(const(1.0), topic="events", partition="x")], id="partition-not-a-number"),
        pytest.param([series(const(1.0), partition="0")], id="no-topic-label"),
        pytest.param([series(const(-1.0), topic="events", partition="0")], id="negative-rate"),
        pytest.param([series(const("NaN"), topic="events", partition="0")], id="nan-rate"),
        pytest.param(
            [series(const(1.0), topic="events", partition="0"), series(const(1.0), topic="events", partition="0")],
            id="partition-twice",
        ),
    ],
)
def test_bad_partition_rates_are_dropped_all_together_not_the_window(parts: list[dict], caplog) -> None:
    good = series(const(3.0), topic="events", partition="7")
    obs = build_observation(results(partitions=[good, *parts]), WINDOW, executor_label="executor_id")
    assert obs.partitions == () and obs.scaleout == 2  # the rest of the window stands
    assert "partition rates ignored" in caplog.text


def batch_results(**override: list[dict]) -> dict[str, list[dict]]:
    """The three batch queries over GRID: batches 0.5/s then 1/s, 400 records/s, batch seconds growing 0.1/s."""
    base = {
        "batches": [series({t: 0.5 if t <= 105 else 1.0 for t in GRID})],
        "batch_records": [series(const(400.0))],
        "batch_seconds": [series({t: 0.1 * (t - 100) for t in GRID})],
    }
    return results(**(base | override))


def test_batch_rates_become_the_windows_batches_summed_over_its_samples() -> None:
    obs = build_observation(batch_results(), WINDOW, executor_label="executor_id")
    assert obs.batches is not None
    # by hand: 5 steps at 0.5 + 5 at 1.0; 10 x 400; 0.1 x (1 + ... + 10)
    assert (obs.batches.batches, obs.batches.input_records) == (7.5, 4000.0)
    assert obs.batches.duration_s == pytest.approx(5.5)


def test_batches_cover_only_the_kept_samples() -> None:
    # Executor 2's utilization starts 3 steps late: the window keeps 104..110, and so do the batch sums.
    late = batch_results(
        utilization=[series(const(0.5), executor_id="1"), series(const(0.7, GRID[3:]), executor_id="2")]
    )
    obs = build_observation(late, WINDOW, executor_label="executor_id")
    assert obs.batches is not None and len(obs.workload_per_s) == 7
    assert (obs.batches.batches, obs.batches.input_records) == (2 * 0.5 + 5 * 1.0, 7 * 400.0)
    assert obs.batches.duration_s == pytest.approx(0.1 * sum(range(4, 11)))


def test_batch_sums_weigh_each_rate_by_the_step() -> None:
    window = Window(100.0, 105.0, 0.5)  # grid 100.5 .. 105.0: 10 samples of half a second
    times = [100.5 + 0.5 * i for i in range(10)]

    def on(value: float, **labels: str) -> dict:
        return {"metric": labels, "values": [[t, str(value)] for t in times]}

    answers = {
        "workload": [on(10.0)],
        "throughput": [on(5.0, executor_id="1")],
        "utilization": [on(0.5, executor_id="1")],
        "lag": [on(0.0)],
        "executors": [on(1.0)],
        "uptime": [on(9.0)],
        "batches": [on(2.0)],
        "batch_records": [on(300.0)],
        "batch_seconds": [on(0.6)],
    }
    batches = build_observation(answers, window, executor_label="executor_id").batches
    assert batches is not None
    assert (batches.batches, batches.input_records, batches.duration_s) == pytest.approx((10.0, 1500.0, 3.0))


def test_without_batch_rates_the_observation_has_none() -> None:
    assert build_observation(results(), WINDOW, executor_label="executor_id").batches is None


@pytest.mark.parametrize(
    "override",
    [
        pytest.param({"batch_seconds": []}, id="one-empty"),
        pytest.param({"batch_records": [series({t: 400.0 for t in GRID if t != 110})]}, id="one-short-of-the-grid"),
        pytest.param({"batches": [series({**const(1.0), 104: "NaN"})]}, id="nan"),
        pytest.param({"batch_seconds": [series({**const(0.8), 107: -0.2})]}, id="negative"),
        pytest.param({"batch_records": [series({**const(400.0), 101: "+Inf"})]}, id="inf"),
        pytest.param({"batches": [series({**const(1.0), 102: "lots"})]}, id="non-numeric"),
        pytest.param({"batches": [series(const(1.0)), series(const(1.0))]}, id="two-series"),
    ],
)
def test_unusable_batch_rates_leave_no_batches_but_the_window(override: dict, caplog) -> None:
    caplog.set_level(logging.INFO, logger="daedalus_spark.monitor.assemble")
    obs = build_observation(batch_results(**override), WINDOW, executor_label="executor_id")
    assert obs.batches is None and obs.scaleout == 2 and len(obs.workload_per_s) == 10  # the rest stands
    assert "batch progress ignored" in caplog.text


def test_one_batch_query_missing_leaves_no_batches() -> None:
    answers = batch_results()
    del answers["batch_records"]
    assert build_observation(answers, WINDOW, executor_label="executor_id").batches is None


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param([series(const(55.0), application_id="app-1")], "app-1", id="one-application"),
        pytest.param(
            [
                series(const(50.0, GRID[:5]), application_id="app-1"),
                series({108: 1, 109: 2, 110: 3}, application_id="app-2"),
            ],
            "app-2",
            id="restarted-inside-the-window",
        ),
        pytest.param([series(const(55.0, GRID[:9]), application_id="app-1")], "", id="gone-before-the-end"),
        pytest.param(
            [series(const(1.0), application_id="app-1"), series(const(2.0), application_id="app-2")],
            "",
            id="two-at-the-end",
        ),
        pytest.param([series(const(55.0))], "", id="no-label"),
        pytest.param([series(const(55.0), application_id="app\n1")], "", id="control-characters"),
        pytest.param([series(const(55.0), application_id="a" * 201)], "", id="too-long"),
        pytest.param([], "", id="not-answered"),
    ],
)
def test_the_application_is_the_one_at_the_windows_end(answers: list[dict], expected: str) -> None:
    obs = build_observation(results(application=answers), WINDOW, executor_label="executor_id")
    assert obs.application_id == expected and obs.scaleout == 2  # never a reason to refuse the window


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param([series(const(2.0))], 2, id="whole"),
        pytest.param([series({105: 3.0, 110: 2.0})], 2, id="the-value-at-the-end"),
        pytest.param([series(const(3.0, GRID[:9]))], None, id="none-at-the-end"),
        pytest.param([series(const(-1.0))], None, id="the-agents-none"),
        pytest.param([series(const(2.5))], None, id="not-whole"),
        pytest.param([series(const("NaN"))], None, id="nan"),
        pytest.param([series(const(2.0)), series(const(3.0))], None, id="two-series"),
        pytest.param([], None, id="not-answered"),
    ],
)
def test_the_agent_target_is_its_whole_value_at_the_windows_end(answers: list[dict], expected: int | None) -> None:
    obs = build_observation(results(agent_target=answers), WINDOW, executor_label="executor_id")
    assert obs.agent_target == expected and obs.scaleout == 2
