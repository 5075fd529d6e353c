"""The report's stored history, record by record: a damaged forecast, workload point or capacity table is left out
with one line naming the file, the component and the record; every other record is kept; no traceback."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import Config
from daedalus_spark.domain import CapacityTable
from daedalus_spark.knowledge.history import ForecastRecord
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import Knowledge, snapshot

T0 = 1_700_000_000.0


def _store(path: Path) -> Path:
    k = Knowledge.fresh(Config())
    k.history.latest_table = CapacityTable(4, 4000.0, (1100.0, 2100.0, 3000.0, 4000.0), frozenset({2, 4}), ())
    for i in range(3):
        t = T0 + 60 * i
        k.history.add_forecast(ForecastRecord(t, "arima", (1, 0, 0), 1, 0.1, t, 60.0, (1.0, 2.0), (2.0, 3.0), ()))
        k.history.workload.append((t, 100.0 + i))
    SqliteKnowledgeStore(path).save(snapshot(k))
    return path


def _history(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            state = json.loads(conn.execute("SELECT json FROM component WHERE name = 'history'").fetchone()[0])
            change(state)
            conn.execute("UPDATE component SET json = ? WHERE name = 'history'", (json.dumps(state),))

    return damage


def _table(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["latest_table"].__setitem__(key, value)


def _forecast(i: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["forecasts"][i].__setitem__(key, value)


CASES = [
    # id, damage, the record named, forecasts kept, workload points kept, capacity table kept
    ("capacity-nan", _table("current_per_s", float("nan")), "latest_table.current_per_s: nan", 3, 3, False),
    ("capacity-inf", _table("per_scaleout_per_s", [float("inf"), 1, 2, 3]), "per_scaleout_per_s[0]: inf", 3, 3, False),
    ("capacity-string", _table("current_per_s", "abc"), "current_per_s: expected a number, got 'abc'", 3, 3, False),
    ("capacity-true", _table("current_per_s", True), "current_per_s: expected a number, got True", 3, 3, False),
    ("capacity-negative", _table("current_per_s", -5), "current_per_s: -5.0 outside", 3, 3, False),
    ("executor-incomplete", _table("executors", [{"executor_id": "1"}]), "executors[0].samples: missing", 3, 3, False),
    ("forecast-time-string", _forecast(1, "time_s", "soon"), "forecasts[1].time_s: expected a number", 2, 3, True),
    ("forecast-nan-string", _forecast(1, "values_per_s", ["nan"]), "forecasts[1].values_per_s[0]", 2, 3, True),
    (
        "forecast-not-an-object",
        lambda s: s["forecasts"].__setitem__(0, 7),
        "forecasts[0]: expected an object",
        2,
        3,
        True,
    ),
    ("forecast-order", _forecast(2, "arima_order", [1, "x", 0]), "forecasts[2].arima_order[1]", 2, 3, True),
    (
        "workload-point",
        lambda s: s["workload"].__setitem__(1, [T0, "x"]),
        "workload[1][1]: expected a number",
        3,
        2,
        True,
    ),
]


@pytest.mark.parametrize(
    ("damage", "named", "forecasts", "points", "table"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("output", ["text", "json", "out"])
def test_a_damaged_record_is_left_out_named_and_the_rest_kept(
    tmp_path: Path, capsys, damage, named, forecasts, points, table, output
) -> None:
    path = _store(tmp_path / "k.sqlite")
    _history(damage)(path)
    extra = {"text": [], "json": ["--json"], "out": ["--out", str(tmp_path / "report")]}[output]
    assert main(["report", "--knowledge", str(path), *extra]) == 0
    shown = capsys.readouterr().out
    if output == "out":
        r = json.loads((tmp_path / "report" / "report.json").read_text())
    elif output == "json":
        r = json.loads(shown)
    else:
        lines = [line for line in shown.splitlines() if line.startswith("knowledge store:")]
        assert len(lines) == 1 and named in lines[0] and "history." in lines[0]
        assert str(path) in lines[0], lines
        return
    assert len(r["damage"]) == 1 and named in r["damage"][0] and str(path) in r["damage"][0], r["damage"]
    assert (r["capacity"] is not None) == table
    assert len(r["forecast"]["history"]) == forecasts if "history" in r["forecast"] else True
    from daedalus_spark.report.knowledge_report import load_knowledge

    k = load_knowledge(path)
    assert (len(k.history.forecasts), len(k.history.workload), k.history.latest_table is not None) == (
        forecasts,
        points,
        table,
    )
