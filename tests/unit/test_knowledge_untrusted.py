"""Knowledge read back from disk is data, never code: the forecaster as JSON, every stored value checked."""

from __future__ import annotations

import json
import logging
import pickle
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml

import daedalus_spark.config as config_module
from daedalus_spark.analyze.forecast import WorkloadForecaster
from daedalus_spark.config import Config, ForecastConfig
from daedalus_spark.controller import Controller
from daedalus_spark.knowledge.history import ForecastRecord, History
from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError, SqliteKnowledgeStore
from daedalus_spark.knowledge.state import IncompatibleKnowledge, restore, snapshot
from tests.conftest import ROOT, observation

FORECAST = ForecastConfig(resolution_s=10, history_window_s=300, min_history_s=120, linear_window_s=60, horizon_s=120)


def _trace(seconds: int, seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(seconds)
    return 1000 + 300 * np.sin(t / 90.0) + rng.normal(0, 15, seconds)


def _fed(seconds: int = 300) -> tuple[WorkloadForecaster, np.ndarray]:
    forecaster, trace = WorkloadForecaster(FORECAST), _trace(seconds + 180)
    for end in range(60, seconds + 1, 60):
        forecaster.observe(trace[end - 60 : end], step_s=1, end_s=end)
        forecaster.predict(end)
    return forecaster, trace


def test_the_rebuilt_arima_predicts_what_the_fitted_one_predicts() -> None:
    """Oracle: a model rebuilt from order + parameters + history forecasts like the model pmdarima fitted."""
    original, trace = _fed()
    assert original.arima_order is not None
    restored = WorkloadForecaster.from_bytes(original.to_bytes(), FORECAST)
    assert restored.arima_order == original.arima_order
    for end in (300, 360, 420, 480):
        if end > 300:
            for f in (original, restored):
                f.observe(trace[end - 60 : end], step_s=1, end_s=end)
        a, b = original.predict(end), restored.predict(end)
        assert a.model == b.model == "arima"
        np.testing.assert_allclose(b.values_per_s, a.values_per_s, rtol=1e-9)


def test_the_stored_forecaster_is_plain_json() -> None:
    data = _fed()[0].to_bytes()
    state = json.loads(data.decode("utf-8"), parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert state["arima"]["order"] and state["arima"]["params"]


def test_a_pickled_payload_is_refused_and_never_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):  # what an attacker would store: code run by pickle.loads
            return (Path.touch, (marker,))

    controller = Controller(Config())
    controller.tick(observation(time_s=60.0), 60.0)
    saved = snapshot(controller.knowledge)
    evil = type(saved)(saved.format_version, saved.components, pickle.dumps(Exploit()), saved.decisions, ())
    with caplog.at_level(logging.WARNING):
        restored = restore(evil, Config())
    assert not marker.exists()
    assert restored.forecaster.history_steps == 0 and "forecaster" in caplog.text


def _mutate(state: dict, path: str, value: object) -> dict:
    *parents, last = path.split(".")
    node = state
    for key in parents:
        node = node[key]
    node[last] = value
    return state


FORECASTER_DAMAGE = [
    ("not-json", None, b"\x80\x04garbage"),
    ("not-an-object", None, b"[1, 2]"),
    ("deep-nesting", None, b"[" * 100_000 + b"]" * 100_000),
    ("other-version", ("version", 99), None),
    ("nan-history", ("history", [1.0, float("nan")]), None),
    ("string-streak", ("poor_streak", "3"), None),
    ("bool-refits", ("refits", True), None),
    ("negative-wape", ("last_wape", -1.0), None),
    ("next-index-out-of-range", ("buckets.next_index", -(10**18)), None),
    ("next-index-huge", ("buckets.next_index", 10**30), None),
    ("partial-bucket-overfull", ("buckets.covered_s", [[10**12, 1e9]]), None),
    ("scored-nan", ("scored_forecast", {"start": 1, "values": [float("nan")], "is_arima": True}), None),
]


@pytest.mark.parametrize(
    ("change", "raw"), [(c, r) for _, c, r in FORECASTER_DAMAGE], ids=[i for i, _, _ in FORECASTER_DAMAGE]
)
def test_a_damaged_forecaster_is_relearned_with_a_warning_and_later_ticks_run(
    change, raw, caplog: pytest.LogCaptureFixture
) -> None:
    config = Config.model_validate({"forecast": FORECAST.model_dump()})
    controller = Controller(config)
    for k in range(1, 7):
        controller.tick(observation(time_s=60.0 * k, workload=list(_trace(60, seed=k))), 60.0 * k)
    saved = snapshot(controller.knowledge)
    if raw is None:
        state = json.loads(saved.forecaster)
        raw = json.dumps(_mutate(state, *change)).encode()  # Python's json writes NaN as NaN: a tampered file
    damaged = type(saved)(saved.format_version, saved.components, raw, saved.decisions, saved.recoveries)
    with caplog.at_level(logging.WARNING, logger="daedalus_spark"):
        restored = restore(damaged, config)
    assert "forecaster" in caplog.text
    resumed = Controller(config, knowledge=restored)
    for k in range(7, 10):
        decision = resumed.tick(observation(time_s=60.0 * k, workload=list(_trace(60, seed=k))), 60.0 * k)
        assert decision.target_scaleout >= 1


ARIMA_DAMAGE = [
    ("params-wrong-count", "params", [0.1] * 21),  # no order within the search bounds has 21 parameters
    ("params-nan", "params", [float("nan")] * 3),
    ("order-huge", "order", [500, 0, 500]),
    ("seasonal-period-huge", "seasonal_order", [1, 0, 1, 10**6]),
    ("y-empty", "y", []),
    ("y-strings", "y", ["1"] * 5),
    ("intercept-not-bool", "with_intercept", "yes"),
]


@pytest.mark.parametrize(("key", "value"), [(k, v) for _, k, v in ARIMA_DAMAGE], ids=[i for i, _, _ in ARIMA_DAMAGE])
def test_a_damaged_arima_is_dropped_and_refitted_from_the_kept_history(key, value, caplog) -> None:
    original, trace = _fed()
    state = json.loads(original.to_bytes())
    state["arima"][key] = value
    with caplog.at_level(logging.WARNING, logger="daedalus_spark"):
        restored = WorkloadForecaster.from_bytes(json.dumps(state).encode(), FORECAST)
    assert "ARIMA" in caplog.text and restored.arima_order is None
    assert restored.history_steps == original.history_steps
    restored.observe(trace[300:360], step_s=1, end_s=360)
    assert restored.arima_order is not None and restored.predict(360).model == "arima"


def test_a_long_gap_does_not_replay_every_missing_bucket() -> None:
    """A stored next bucket from long ago (an outage, or a damaged file) costs no more than the kept history."""
    forecaster, _ = _fed()
    state = json.loads(forecaster.to_bytes())
    state["buckets"]["next_index"], state["buckets"]["sum"], state["buckets"]["covered_s"] = 0, [], []
    restored = WorkloadForecaster.from_bytes(json.dumps(state).encode(), FORECAST)
    restored.observe([1000.0] * 60, step_s=1, end_s=1.7e9)  # 170 million buckets later
    assert restored.history_steps <= 30


def test_a_stored_position_far_in_the_future_does_not_stop_learning() -> None:
    forecaster, trace = _fed()
    state = json.loads(forecaster.to_bytes())
    state["buckets"]["next_index"], state["buckets"]["sum"], state["buckets"]["covered_s"] = 10**15, [], []
    restored = WorkloadForecaster.from_bytes(json.dumps(state).encode(), FORECAST)
    for end in (360, 420):
        restored.observe(trace[end - 60 : end], step_s=1, end_s=end)
    assert restored.predict(420).start_s == 420.0  # learning again from the present, not waiting for 10**15


def _component_damage(config: Config):
    controller = Controller(config)
    for k in range(1, 4):
        controller.tick(
            observation(
                time_s=60.0 * k,
                executors={"w1": ([900.0 + 10 * i for i in range(60)], [0.3 + 0.005 * i for i in range(60)])},
                partitions={("events", 0): 700.0, ("events", 1): 500.0},
            ),
            60.0 * k,
        )
    return snapshot(controller.knowledge)


COMPONENT_DAMAGE = [
    ("regression-nan", "capacity", "regressions.w1.m2_x", float("nan"), "m2_x"),
    ("regression-n-string", "capacity", "regressions.w1.n", "60", "regressions.w1.n"),
    ("regression-n-bool", "capacity", "regressions.w1.n", True, "regressions.w1.n"),
    ("regression-negative-variance", "capacity", "pooled.m2_x", -1.0, "pooled.m2_x"),
    ("regression-impossible-comoment", "capacity", "pooled.c_xy", 1e12, "co-moment"),
    ("regressions-not-object", "capacity", "regressions", [1, 2], "capacity.regressions"),
    ("observed-scaleout-name", "capacity", "observed_per_scaleout", {"x": 1.0}, "whole number"),
    ("observed-capacity-inf", "capacity", "observed_per_scaleout", {"3": float("inf")}, "finite"),
    ("moments-alpha-nan", "recovery", "moments.alpha", float("nan"), "alpha"),
    ("moments-var-negative", "recovery", "moments.var", -4.0, "moments.var"),
    ("downtime-string", "recovery", "downtime_scale_out_s", "30", "downtime_scale_out_s"),
    ("downtime-huge", "recovery", "downtime_scale_in_s", 1e300, "downtime_scale_in_s"),
    ("pending-direction", "recovery", "pending", {"direction": "up"}, "direction"),
    ("last-rescale-nan", "controller", "last_rescale_s", float("nan"), "last_rescale_s"),
    ("capacity-newer-version", "capacity", "version", 4, "capacity: state version 4 is newer"),
    ("partition-share-above-one", "capacity", "partition_shares", [["events", 0, 1.5]], "partition_shares[0][2]"),
    ("partition-negative", "capacity", "partition_shares", [["events", -1, 0.5]], "partition_shares[0][1]"),
    ("partition-shares-not-list", "capacity", "partition_shares", {"events": 1}, "partition_shares"),
    ("capacity-version-string", "capacity", "version", "1", "capacity.version"),
    ("recovery-newer-version", "recovery", "version", 7, "recovery: state version 7 is newer"),
]


@pytest.mark.parametrize(("component", "version"), [("capacity", 3), ("recovery", 1), ("history", 1)])
def test_every_learned_component_writes_its_state_version(component: str, version: int) -> None:
    assert json.loads(_component_damage(Config()).components[component])["version"] == version


def test_a_history_from_a_newer_version_is_started_afresh_and_the_models_kept(caplog) -> None:
    saved = _component_damage(Config())
    components = {**saved.components, "history": json.dumps({**json.loads(saved.components["history"]), "version": 2})}
    damaged = type(saved)(saved.format_version, components, saved.forecaster, saved.decisions, saved.recoveries)
    assert restore(saved, Config()).history.workload  # what the newer version costs
    restored = restore(damaged, Config())
    assert not restored.history.workload and "history: state version 2" in caplog.text
    assert restored.capacity.regressions == restore(saved, Config()).capacity.regressions


def test_a_history_written_before_the_executor_rename_still_loads() -> None:
    """Stores written while the capacity table said "workers" and "worker_id" are read as "executors"."""
    saved = _component_damage(Config())
    history = json.loads(saved.components["history"])
    table = history["latest_table"]
    old_table = {k: v for k, v in table.items() if k != "executors"}
    old_table["workers"] = [
        {("worker_id" if k == "executor_id" else k): v for k, v in e.items()} for e in table["executors"]
    ]
    assert "executors" not in old_table and "executor_id" not in json.dumps(old_table)
    components = {**saved.components, "history": json.dumps({**history, "latest_table": old_table})}
    old = type(saved)(saved.format_version, components, saved.forecaster, saved.decisions, saved.recoveries)
    assert restore(old, Config()).history.latest_table == restore(saved, Config()).history.latest_table
    assert [e.executor_id for e in restore(old, Config()).history.latest_table.executors] == ["w1"]


@pytest.mark.parametrize(
    ("component", "path", "value", "named"), [c[1:] for c in COMPONENT_DAMAGE], ids=[c[0] for c in COMPONENT_DAMAGE]
)
def test_damaged_statistics_are_refused_naming_the_field(component, path, value, named) -> None:
    saved = _component_damage(Config())
    components = dict(saved.components)
    state = json.loads(components[component])
    if component == "recovery" and path == "pending":
        value = {
            "rescale_time_s": 1.0,
            "direction": "up",
            "from_scaleout": 1,
            "to_scaleout": 2,
            "predicted_recovery_s": 10.0,
            "downtime_used_s": 5.0,
            "anomaly_seen": False,
            "overlapping": False,
            "normal_streak_start_s": None,
            "normal_streak": 0,
        }
    components[component] = json.dumps(_mutate(state, path, value))
    damaged = type(saved)(saved.format_version, components, saved.forecaster, saved.decisions, saved.recoveries)
    with pytest.raises(IncompatibleKnowledge, match=re.escape(named)):
        restore(damaged, Config())


# --- the SQLite file ---------------------------------------------------------------------------------------------


def _foreign_db(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        conn.execute("INSERT INTO customers VALUES (1, 'ada')")
    conn.close()


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_a_foreign_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    _foreign_db(path)
    before = path.read_bytes()
    store = SqliteKnowledgeStore(path)
    with pytest.raises(IncompatibleKnowledge, match="not a daedalus-spark knowledge file"):
        store.load()
    with pytest.raises(IncompatibleKnowledge, match="refusing to write"):
        store.save(snapshot(Controller(Config()).knowledge))
    assert _tables(path) == {"customers"} and path.read_bytes() == before


def test_a_database_with_a_meta_table_of_another_shape_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (k TEXT, v TEXT, extra INTEGER)")
    conn.close()
    with pytest.raises(IncompatibleKnowledge, match="not a daedalus-spark knowledge file"):
        SqliteKnowledgeStore(path).save(snapshot(Controller(Config()).knowledge))
    assert _tables(path) == {"meta"}


def test_loading_never_creates_tables(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()
    assert SqliteKnowledgeStore(path).load() is None
    assert _tables(path) == set()


@pytest.mark.parametrize("version", ["1.0", "", "one", "99999999999"], ids=["float", "empty", "word", "huge"])
def test_a_version_that_is_not_ours_is_refused(tmp_path: Path, version: str) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.sqlite")
    store.save(snapshot(Controller(Config()).knowledge))
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (version,))
    conn.close()
    with pytest.raises(IncompatibleKnowledge):
        loaded = store.load()
        restore(loaded, Config())


def test_a_locked_file_is_reported_as_locked(tmp_path: Path) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.sqlite", busy_timeout_s=0.05)
    store.save(snapshot(Controller(Config()).knowledge))
    holder = sqlite3.connect(store.path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(KnowledgeStoreError, match="locked by another process"):
            store.save(snapshot(Controller(Config()).knowledge))
        with pytest.raises(KnowledgeStoreError, match="locked by another process"):
            store.load()
    finally:
        holder.close()


def test_a_missing_directory_is_reported_as_missing(tmp_path: Path) -> None:
    store = SqliteKnowledgeStore(tmp_path / "no" / "such" / "k.sqlite")
    with pytest.raises(KnowledgeStoreError, match="does not exist"):
        store.load()  # at start-up, not only at the first save
    with pytest.raises(KnowledgeStoreError, match="does not exist"):
        store.save(snapshot(Controller(Config()).knowledge))


def test_a_text_forecaster_cell_is_relearned(tmp_path: Path) -> None:
    store = SqliteKnowledgeStore(tmp_path / "k.sqlite")
    store.save(snapshot(Controller(Config()).knowledge))
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute("UPDATE forecaster SET model = 'cos\nsystem\n(S\"id\"\ntR.'")
    conn.close()
    assert restore(store.load(), Config()).forecaster.history_steps == 0


# --- nothing in the package deserializes code -------------------------------------------------------------------

UNSAFE_LOADS = re.compile(
    r"\b(pickle|cPickle|dill|cloudpickle|joblib|marshal|shelve)\s*\.\s*(loads?|Unpickler|open)\b"
    r"|\bimport\s+(pickle|dill|cloudpickle|marshal|shelve)\b|\bfrom\s+(pickle|dill|marshal|shelve)\s+import"
    r"|\byaml\.(unsafe_)?load\s*\((?![^)]*(SafeLoader|StrictYamlLoader))|\beval\s*\(|\bexec\s*\("
)


def test_nothing_in_the_package_unpickles_or_evaluates_what_it_reads() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "daedalus_spark").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if UNSAFE_LOADS.search(line)
    ]
    assert offenders == []
    assert issubclass(config_module.StrictYamlLoader, yaml.SafeLoader)  # the one yaml.load the pattern allows


def test_a_forecast_whose_wape_is_infinite_is_kept_in_the_history() -> None:
    """The WAPE of a forecast against an all-zero load (the demo's end) is infinite by definition: the history keeps
    the record through a JSON round trip rather than dropping it as damaged."""
    history = History()
    record = ForecastRecord(60.0, "arima", (1, 0, 1), 2, float("inf"), 60.0, 10.0, (0.0, 0.0), (1.0, 1.0), ())
    history.add_forecast(record)
    damage: list[str] = []
    restored = History.from_state(json.loads(json.dumps(history.to_state())), damage=damage)
    assert not damage
    assert [f.last_wape for f in restored.forecasts] == [float("inf")]
