"""The sidecar runtime: scheduled ticks, decision log, metrics and health endpoint, clean stop, errors survived."""

from __future__ import annotations

import json
import math
import socket
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark import waiting
from daedalus_spark.clock import FakeClock
from daedalus_spark.config import parse_config
from daedalus_spark.domain import Decision, Reason
from daedalus_spark.evidence import Evidence, TargetEvidence
from daedalus_spark.execute.port import Actuation, Outcome
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.loop import StepResult
from daedalus_spark.runtime.publishers import DecisionLog, result_record
from daedalus_spark.runtime.wiring import assemble_sidecar, build_sidecar
from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor, config_in


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(condition, timeout_s=30.0):
    waiting.wait_until(condition, "the sidecar", timeout_s, interval_s=0.05)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_sidecar_ticks_publishes_serves_and_stops_clean(tmp_path):
    port = free_port()
    config = config_in(tmp_path, metrics_port=port)
    actuator = ScriptedActuator()
    sidecar = assemble_sidecar(config, ScriptedMonitor(), actuator)
    exit_code: list[int] = []
    thread = threading.Thread(target=lambda: exit_code.append(sidecar.run(handle_signals=False)))
    thread.start()
    try:
        wait_until(lambda: sidecar._steps >= 1)  # the first tick runs at once
        status, body = get(f"http://127.0.0.1:{port}/healthz")
        assert status == 200 and json.loads(body)["ticks"] >= 1
        status, text = get(f"http://127.0.0.1:{port}/metrics")
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
        }
        assert get(f"http://127.0.0.1:{port}/nope")[0] == 404
    finally:
        sidecar.stop()
        thread.join(timeout=30)
    assert exit_code == [0] and not thread.is_alive()
    first = json.loads((tmp_path / "decisions.jsonl").read_text().splitlines()[0])
    assert first["reason"] == "horizon_plan_scales_out" and first["actuation"]["outcome"] == "applied"
    assert first["target"] == actuator.requested[0] and first["current"] == 4
    assert samples[("daedalus_controller_scaleout_target", ())] == first["target"]
    assert samples[("daedalus_controller_decisions_total", (("reason", "horizon_plan_scales_out"),))] >= 1
    assert samples[("daedalus_controller_actuations_total", (("outcome", "applied"),))] >= 1
    assert samples[
        ("daedalus_controller_capacity_records_per_second", (("observed", "true"), ("scaleout", "4")))
    ] == pytest.approx(first["evidence"]["capacity_current_per_s"], rel=1e-3)
    assert samples[("daedalus_controller_capacity_current_records_per_second", ())] == pytest.approx(
        first["evidence"]["capacity_current_per_s"], rel=1e-3
    )
    assert samples[("daedalus_controller_recovery_target_seconds", ())] == config.controller.target_recovery_s
    saved = SqliteKnowledgeStore(tmp_path / "k.sqlite").load()
    assert saved is not None and len(saved.decisions) == sidecar._steps


def test_a_tick_that_raises_is_counted_and_the_sidecar_goes_on(tmp_path):
    class Broken(ScriptedMonitor):
        def observe(self, *, start_s, end_s):
            raise ZeroDivisionError("bug in a monitor")

    sidecar = assemble_sidecar(config_in(tmp_path), Broken(), ScriptedActuator(), clock=FakeClock(100.0))
    assert sidecar.step() is None and sidecar.step() is None
    assert sidecar.metrics.tick_errors._value.get() == 2


def test_health_turns_stalled_when_ticks_stop(tmp_path):
    clock = FakeClock(1000.0)
    sidecar = assemble_sidecar(config_in(tmp_path), ScriptedMonitor(), ScriptedActuator(), clock=clock)
    sidecar.step()
    assert sidecar.health()[0]
    # Three intervals, plus the longest a tick's actuation may take (3 attempts of 10 s, waits 1 + 2 s), may pass
    # without a tick; confirmation adds nothing: it waits on the next ticks, not inside one.
    clock.advance(3 * 5 + 3 * 10 + 1 + 2)
    assert sidecar.health()[0]
    clock.advance(1)
    healthy, details = sidecar.health()
    assert not healthy and details["status"] == "stalled"


def test_decision_log_lines_are_strict_json(tmp_path):
    target = TargetEvidence(capacity_target_per_s=1.5, predicted_recovery_s=math.inf, downtime_used_s=30.0)
    evidence = Evidence(target=target, other={"x": math.nan})
    actuation = Actuation(3, Outcome.UNCONFIRMED, "2 live", 2, 90.0)
    decision = Decision(10.0, 2, 3, Reason.SCALE_OUT_SMALLEST_VALID, evidence, actuation=actuation)
    result = StepResult(10.0, decision, None, None, {"monitor": 0.1})
    DecisionLog(tmp_path / "d.jsonl").publish(result)
    line = (tmp_path / "d.jsonl").read_text()
    parsed = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert parsed == result_record(result)
    assert parsed["evidence"] == {
        "capacity_target_per_s": 1.5,
        "predicted_recovery_s": None,
        "downtime_used_s": 30.0,
        "x": None,
    }
    assert parsed["actuation"] == {"outcome": "unconfirmed", "detail": "2 live", "live": 2, "duration_s": 90.0}


def test_knowledge_resumes_across_sidecars(tmp_path):
    config = config_in(tmp_path)
    first = assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=FakeClock(100.0))
    first.step()
    again = assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=FakeClock(160.0))
    k1, k2 = first.loop.controller.knowledge, again.loop.controller.knowledge
    assert list(k2.decisions) == list(k1.decisions) and k2.last_rescale_s == 100.0
    assert k2.capacity.regressions == k1.capacity.regressions


@pytest.mark.parametrize(
    ("settings", "environ", "named"),
    [
        pytest.param({"actuator": {"kind": "kubernetes"}}, {}, "actuator.kind kubernetes", id="kubernetes-actuator"),
        pytest.param({}, {"POD_NAME": "driver-0"}, "running in a pod", id="agent-in-a-pod"),
    ],
)
def test_without_the_kubernetes_extra_the_sidecar_names_what_to_install(monkeypatch, settings, environ, named) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kubernetes" else real(name, *a))
    config = parse_config({**settings, "kubernetes": {"pod_name_env": "POD_NAME"}})
    with pytest.raises(ValueError, match=rf"{named}.*pip install 'daedalus-spark\[kubernetes\]'"):
        build_sidecar(config, dry_run=False, environ=environ)
