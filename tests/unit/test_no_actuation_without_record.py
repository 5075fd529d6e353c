"""No rescale without a record: paths that can never hold the knowledge or the decision log are refused at start; a
tick that cannot save first does not actuate and says so; /healthz fails while ticks keep failing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from daedalus_spark.clock import FakeClock
from daedalus_spark.execute.port import Outcome
from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
from daedalus_spark.runtime.publishers import DecisionLog
from daedalus_spark.runtime.sidecar import FAILING_TICKS, Sidecar
from daedalus_spark.runtime.wiring import assemble_sidecar
from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor, config_in


def sidecar(tmp_path: Path, actuator: ScriptedActuator | None = None, **runtime) -> Sidecar:
    clock = FakeClock(1_700_000_000.0)
    return assemble_sidecar(
        config_in(tmp_path, **runtime), ScriptedMonitor(), actuator or ScriptedActuator(), clock=clock
    )


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "f").write_text("")
    return tmp_path / "f" / "k.sqlite"


NEVER_A_STORE = [
    ("device", lambda tmp: Path("/dev/null"), "a device"),
    ("directory", lambda tmp: tmp, "a directory"),
    ("under-a-file", _under_a_file, "is a file, not a directory"),
    ("missing-directory", lambda tmp: tmp / "nope" / "k.sqlite", "does not exist"),
]


@pytest.mark.parametrize(("path", "named"), [c[1:] for c in NEVER_A_STORE], ids=[c[0] for c in NEVER_A_STORE])
def test_a_knowledge_path_that_can_never_work_is_refused_at_start(tmp_path: Path, path, named) -> None:
    config = config_in(tmp_path)
    config = config.model_copy(
        update={"controller": config.controller.model_copy(update={"knowledge_path": str(path(tmp_path))})}
    )
    with pytest.raises(KnowledgeStoreError, match=named):
        assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=FakeClock(0.0))


NEVER_A_LOG = [
    ("missing-directory", lambda tmp: tmp / "nope" / "d.jsonl", "does not exist"),
    ("directory", lambda tmp: tmp, "a directory"),
    ("a-yaml-file", lambda tmp: _file(tmp / "c.yaml", "controller:\n  loop_interval_s: 5\n"), "not a decision log"),
    ("notes", lambda tmp: _file(tmp / "notes.txt", "my notes\n"), "not a decision log"),
    ("json-but-not-ticks", lambda tmp: _file(tmp / "d.jsonl", '{"name": "x"}\n'), "not a decision log"),
]


def _file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(("path", "named"), [c[1:] for c in NEVER_A_LOG], ids=[c[0] for c in NEVER_A_LOG])
def test_a_decision_log_that_is_not_one_is_refused_at_start_and_left_alone(tmp_path: Path, path, named) -> None:
    target = path(tmp_path)
    before = target.read_text() if target.is_file() else None
    with pytest.raises(ValueError, match=rf"runtime.decision_log .*{named}"):
        sidecar(tmp_path, decision_log=str(target))
    assert (target.read_text() if target.is_file() else None) == before


@pytest.mark.parametrize(
    "prepare",
    [
        lambda tmp: tmp / "new.jsonl",
        lambda tmp: _file(tmp / "old.jsonl", '{"time_s": 1, "reason": "x"}\n'),
        lambda tmp: _file(tmp / "cut.jsonl", '{"actuation": null, "curr'),
    ],
    ids=["new-file", "an-earlier-log", "first-line-cut-short-by-a-kill"],
)
def test_a_decision_log_of_ours_or_a_new_one_is_appended_to(tmp_path: Path, prepare) -> None:
    target = prepare(tmp_path)
    car = sidecar(tmp_path, decision_log=str(target))
    car.step()
    car.close()
    assert json.loads(target.read_text().splitlines()[-1])["reason"] == "horizon_plan_scales_out"


def test_a_log_replaced_by_a_foreign_file_mid_run_is_not_appended_to(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path / "d.jsonl")
    log.check()
    (tmp_path / "d.jsonl").write_text("key: value\n")
    car = sidecar(tmp_path)
    car.loop.publishers = [log]
    car.step()
    car.close()
    assert (tmp_path / "d.jsonl").read_text() == "key: value\n"


def _lock(tmp_path: Path, car: Sidecar):
    car.store.busy_timeout_s = 0.05
    holder = sqlite3.connect(tmp_path / "k.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def _remove_directory(tmp_path: Path, car: Sidecar):
    car.store.path = tmp_path / "gone" / "k.sqlite"


def _directory_in_place(tmp_path: Path, car: Sidecar):
    (tmp_path / "k.sqlite").unlink()
    (tmp_path / "k.sqlite").mkdir()


MID_RUN = [("locked", _lock), ("directory-gone", _remove_directory), ("a-directory-in-its-place", _directory_in_place)]


@pytest.mark.parametrize("break_store", [c[1] for c in MID_RUN], ids=[c[0] for c in MID_RUN])
def test_a_rescale_that_cannot_be_recorded_is_not_sent_and_says_so(tmp_path: Path, break_store) -> None:
    actuator = ScriptedActuator()
    car = sidecar(tmp_path, actuator)
    holder = break_store(tmp_path, car)
    try:
        result = car.step()
    finally:
        if holder is not None:
            holder.close()
    car.close()
    assert result is not None and result.decision.rescale
    assert actuator.requested == []  # the job was not touched
    assert result.actuation is not None and result.actuation.outcome is Outcome.NOT_RECORDED
    assert "not sent" in result.actuation.detail and result.store_error
    line = json.loads((tmp_path / "decisions.jsonl").read_text().splitlines()[-1])
    assert line["actuation"]["outcome"] == "not_recorded"  # the decision log still says what would have happened
    assert car.loop.controller.knowledge.last_rescale_s is None  # no cool-down: nothing happened


@pytest.mark.parametrize("break_store", [c[1] for c in MID_RUN], ids=[c[0] for c in MID_RUN])
def test_healthz_fails_from_the_first_tick_that_cannot_save_and_recovers_after(tmp_path: Path, break_store) -> None:
    """Knowledge not saved is lost with every tick: /healthz says failing at once (it said ok after 2 such ticks)."""
    car = sidecar(tmp_path)
    assert car.health()[0]
    holder = break_store(tmp_path, car)
    try:
        car.clock.advance(5)  # type: ignore[attr-defined]
        car.step()
        healthy, details = car.health()
    finally:
        if holder is not None:
            holder.close()
    assert not healthy and details["status"] == "failing" and details["failing_ticks"] == 1, details
    assert "knowledge not saved" in details["last_failure"]
    if (tmp_path / "k.sqlite").is_dir():
        (tmp_path / "k.sqlite").rmdir()
    car.store.path = tmp_path / "k.sqlite"
    car.clock.advance(5)  # type: ignore[attr-defined]
    car.step()
    assert car.health()[0] and car.health()[1]["failing_ticks"] == 0
    car.close()


def test_healthz_fails_after_failing_ticks_that_raise_and_recovers_after(tmp_path: Path) -> None:
    car = sidecar(tmp_path)
    real_step = car.loop.step
    car.loop.step = lambda: 1 / 0  # type: ignore[method-assign]
    for i in range(FAILING_TICKS):
        assert car.health()[0], f"unhealthy after {i} failed ticks"
        car.clock.advance(5)  # type: ignore[attr-defined]
        car.step()
    healthy, details = car.health()
    assert not healthy and details["status"] == "failing" and details["failing_ticks"] == FAILING_TICKS
    assert "ZeroDivisionError" in details["last_failure"]
    car.loop.step = real_step  # type: ignore[method-assign]
    car.clock.advance(5)  # type: ignore[attr-defined]
    car.step()
    assert car.health() == (True, car.health()[1]) and car.health()[1]["failing_ticks"] == 0
    car.close()


def test_monitor_outages_alone_keep_healthz_ok(tmp_path: Path) -> None:
    from daedalus_spark.monitor.port import MonitorError

    car = sidecar(tmp_path)
    car.monitor.fail_with = MonitorError("unreachable", "no Prometheus")  # type: ignore[attr-defined]
    car.loop.monitor = car.monitor
    for _ in range(2 * FAILING_TICKS):
        car.clock.advance(5)  # type: ignore[attr-defined]
        car.step()
    assert car.health()[0]
    car.close()
