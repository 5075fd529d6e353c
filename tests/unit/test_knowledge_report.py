"""`daedalus-spark report`: what a controller's store holds, read-only, as text, strict JSON and HTML."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from daedalus_spark.cli import main
from daedalus_spark.controller import Controller
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import snapshot
from daedalus_spark.plan.horizon import headroom_per_s, planning_objective_s
from daedalus_spark.report.knowledge_report import build, iso, load_knowledge, scored_forecast
from daedalus_spark.testing import CONFIG


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store written by the real controller: a load that rises and falls over 40 minutes, rescales applied."""
    path = tmp_path_factory.mktemp("knowledge") / "k.sqlite"
    controller = Controller(CONFIG)
    workload = 1500 + 900 * np.sin(np.arange(60 * 40) / 400.0)
    scaleout = 6
    rng = np.random.default_rng(5)
    from daedalus_spark.testing import step, window

    for k in range(40):
        t = 60.0 * (k + 1)
        scaleout = step(controller, window(t, workload[60 * k : 60 * (k + 1)], scaleout, rng=rng), t).target_scaleout
    controller.save(SqliteKnowledgeStore(path))
    return path, controller


def test_report_numbers_are_the_knowledge(store):
    path, controller = store
    k = controller.knowledge
    r = build(load_knowledge(path, CONFIG))
    table = k.history.latest_table
    assert r.capacity is not None and r.capacity.current_per_s == pytest.approx(table.current_per_s)
    assert [p.capacity_per_s for p in r.capacity.per_scaleout] == pytest.approx(list(table.per_scaleout_per_s))
    assert {p.scaleout for p in r.capacity.per_scaleout if p.observed} == set(table.observed_scaleouts)
    assert r.decisions.count == len(k.decisions) == 40
    assert sum(r.decisions.by_reason.values()) == 40
    assert len(r.decisions.rescales) == sum(1 for d in k.decisions if d.rescale)
    assert r.recovery.downtime_scale_out_s == k.recovery.downtime_scale_out_s
    assert r.forecast.latest is not None and r.forecast.latest.time_s == 2400.0


def test_scored_forecast_compares_with_what_came(store):
    path, _ = store
    k = load_knowledge(path, CONFIG)
    record, predicted, actual = scored_forecast(k)
    seen = dict(k.history.workload)
    times = [record.start_s + (i + 1) * record.step_s for i in range(len(record.values_per_s))]
    assert times[-1] <= max(seen)  # its whole horizon has come
    assert actual == [seen[t] for t in times]  # oracle: the stored workload at the forecast's steps
    assert predicted == list(record.values_per_s)


def test_cli_text_json_and_html(store, tmp_path, capsys):
    path, _ = store
    assert main(["report", "--knowledge", str(path)]) == 0
    text = capsys.readouterr().out
    assert "capacity at scale-out" in text and "decisions: 40" in text
    assert main(["report", "--knowledge", str(path), "--json"]) == 0
    json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert main(["report", "--knowledge", str(path), "--out", str(tmp_path / "r")]) == 0
    assert {p.name for p in (tmp_path / "r").iterdir()} >= {
        "index.html",
        "report.json",
        "capacity.png",
        "forecast.png",
        "forecast_accuracy.png",
        "decisions.png",
    }


def test_report_does_not_write_to_the_store(store):
    path, _ = store
    before = path.read_bytes()
    build(load_knowledge(path, CONFIG))
    assert path.read_bytes() == before


def foreign_db(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()


def empty_store(path):
    sqlite3.connect(path).close()  # an SQLite file nothing was saved into


@pytest.mark.parametrize(
    "make,message",
    [
        pytest.param(lambda p: None, "no such file", id="missing"),
        pytest.param(
            lambda p: p.write_bytes(b"hello, not sqlite" * 100), "not a daedalus-spark knowledge file", id="not-sqlite"
        ),
        pytest.param(foreign_db, "an SQLite database with other tables; refusing to write into it", id="foreign-db"),
        pytest.param(empty_store, "empty knowledge file", id="empty-store"),
    ],
)
def test_bad_stores_give_one_line_and_exit_2(tmp_path, capsys, make, message):
    path = tmp_path / "k.sqlite"
    make(path)
    before = path.read_bytes() if path.exists() else None
    assert main(["report", "--knowledge", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert (path.read_bytes() if path.exists() else None) == before  # nothing written into it


def test_a_store_saved_before_the_history_existed_still_loads(store, tmp_path):
    _, controller = store
    old = snapshot(controller.knowledge)
    components = {k: v for k, v in old.components.items() if k != "history"}
    path = tmp_path / "old.sqlite"
    SqliteKnowledgeStore(path).save(
        type(old)(old.format_version, components, old.forecaster, old.decisions, old.recoveries)
    )
    r = build(load_knowledge(path, CONFIG))
    assert r.capacity is None and r.forecast.latest is None and r.decisions.count == 40


def test_report_times_are_wall_clock_utc(store, capsys):
    path, _ = store
    r = build(load_knowledge(path, CONFIG)).to_json()
    assert r["forecast"]["latest"]["time_s"] == 2400.0 and r["forecast"]["scored"]["time"].endswith("+00:00")
    assert r["decisions"]["latest"][-1]["time"] == "1970-01-01T00:40:00+00:00"  # the tick at 2400 s
    assert all(x["time"] == iso(x["time_s"]) for x in r["decisions"]["rescales"])
    assert main(["report", "--knowledge", str(path)]) == 0
    text = capsys.readouterr().out
    rescale_lines = [line for line in text.splitlines() if " -> " in line and line.startswith("  1970-")]
    assert len(rescale_lines) == min(10, len(r["decisions"]["rescales"])) > 0
    assert "forecast made at 1970-01-01T" in text


def test_forecast_accuracy_scores_every_forecast_whose_horizon_has_come(store):
    """Oracle: WAPE and coverage recomputed from the stored records and workload."""
    path, _ = store
    k = load_knowledge(path, CONFIG)
    seen = dict(k.history.workload)
    rows = build(k).forecast.accuracy
    steps = [[f.start_s + (i + 1) * f.step_s for i in range(len(f.values_per_s))] for f in k.history.forecasts]
    complete = [f for f, times in zip(k.history.forecasts, steps, strict=True) if all(t in seen for t in times)]
    assert [row.time_s for row in rows] == [f.time_s for f in complete] and len(rows) > 5
    for row, f in zip(rows, complete, strict=True):
        came = np.array([seen[f.start_s + (i + 1) * f.step_s] for i in range(len(f.values_per_s))])
        assert row.wape == pytest.approx(np.abs(came - f.values_per_s).sum() / np.abs(came).sum())
        assert row.planned_coverage_ratio == pytest.approx(np.mean(came <= np.array(f.planned_per_s) + 1e-9))
        assert row.upper_coverage_ratio == pytest.approx(np.mean(came <= np.array(f.upper_per_s) + 1e-9))


def test_the_stored_bounds_are_what_the_planner_provisions_for(store):
    path, _ = store
    f = load_knowledge(path, CONFIG).history.forecasts[-1]
    assert CONFIG.controller.planner == "horizon" and len(f.upper_per_s) == len(f.values_per_s)
    ctl = CONFIG.controller
    assert all(u >= p for u, p in zip(f.upper_per_s, f.values_per_s, strict=True))
    point, upper = np.array(f.values_per_s), np.array(f.upper_per_s)
    extra = headroom_per_s(
        point,
        upper,
        ctl.horizon.upper_weight_ratio,
        interval_s=ctl.loop_interval_s,
        objective_s=planning_objective_s(ctl),
    )
    assert f.planned_per_s == pytest.approx((point + extra).tolist(), abs=2e-3)


@pytest.mark.parametrize(
    "planner,expected",
    [
        pytest.param("paper", [100.0, 200.0], id="paper-point"),
        pytest.param("cost_aware", [150.0, 200.0], id="cost-aware-upper"),  # the upper bound never below the point
        # a 50/s miss for a 60-s interval waits 3,000 records: 100 + h works them off within 15 s from h = 20
        pytest.param("horizon", [120.0, 200.0], id="horizon-what-a-miss-would-need"),
    ],
)
def test_provisioned_load_per_planner(planner, expected):
    from daedalus_spark.config import parse_config
    from daedalus_spark.controller import provisioned_per_s
    from daedalus_spark.domain import Forecast

    settings = parse_config({"controller": {"planner": planner, "horizon": {"upper_weight_ratio": 0.5}}}).controller
    forecast = Forecast(0.0, 60.0, (100.0, 200.0), "arima", upper_per_s=(150.0, 180.0))
    assert list(provisioned_per_s(forecast, settings)) == expected


def test_a_store_saved_before_the_bounds_were_kept_reports_no_coverage(store):
    path, _ = store
    k = load_knowledge(path, CONFIG)
    state = k.history.to_state()
    for f in state["forecasts"]:
        del f["upper_per_s"], f["planned_per_s"]  # the shape of a store saved before they were kept
    k.history = type(k.history).from_state(state)
    assert all(f.upper_per_s == f.planned_per_s == () for f in k.history.forecasts)
    rows = build(k).forecast.accuracy
    assert rows and all(r.planned_coverage_ratio is None and r.wape is not None for r in rows)
    scored = build(k).forecast.scored
    assert scored is not None and scored.upper_per_s is None
