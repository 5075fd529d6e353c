"""The planner registry: a planner added with one entry (a trivial one, defined here) is named in the YAML, checked
by the config, and decides the controller's tick, given the rescale budget the YAML's rate built; checking a name
imports no planner."""

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from daedalus_spark.config import load_config
from daedalus_spark.controller import Controller, provisioned_per_s
from daedalus_spark.domain import Decision, Forecast, Observation, Reason
from daedalus_spark.evidence import Evidence
from daedalus_spark.plan.algorithm import tick_evidence
from daedalus_spark.plan.port import PlanInputs, Planner, TickContext
from daedalus_spark.plan.registry import PLANNERS

CAPACITY = 500.0  # records/s per executor at full utilization


@dataclass(frozen=True)
class OneMoreInputs(PlanInputs):
    """The shared inputs, and the one thing this planner alone reads: the observation's sample step."""

    step_s: float = 0.0


@dataclass
class OneMore:
    """A trivial planner: one executor more than now (at most the maximum); it keeps what it was given."""

    seen: list[OneMoreInputs] = field(default_factory=list)

    def inputs(self, shared: PlanInputs, tick: TickContext) -> OneMoreInputs:
        return shared.extended(OneMoreInputs, step_s=tick.observation.step_s)

    def decide(self, inputs: OneMoreInputs, settings) -> Decision:
        self.seen.append(inputs)
        target = min(inputs.current_scaleout + 1, settings.max_scaleout)
        evidence = Evidence(tick=tick_evidence(inputs), planner="one_more")
        return Decision(inputs.now_s, inputs.current_scaleout, target, Reason.SCALE_OUT_SMALLEST_VALID, evidence)


@pytest.fixture
def one_more(monkeypatch: pytest.MonkeyPatch) -> OneMore:
    """OneMore registered as `one_more` for the test (the registry is restored after it)."""
    planner = OneMore()
    monkeypatch.setitem(PLANNERS, "one_more", Planner(planner.decide, planner.inputs))
    return planner


def window(t_end: float, scaleout: int, rng: np.random.Generator) -> Observation:
    """60 one-second samples of a load varying around 1,000/s spread evenly over `scaleout` executors."""
    load = 1000 + 400 * np.sin(np.arange(60) * np.pi / 10)
    executors = {}
    for i in range(scaleout):
        thr = load / scaleout * rng.uniform(0.97, 1.03, 60)
        util = np.clip(0.1 + 0.9 * thr / CAPACITY + rng.normal(0, 0.005, 60), 0, 1)
        executors[f"exec-{i}"] = (thr, util)
    return Observation.of(time_s=t_end, workload_per_s=load, executors=executors, uptime_s=1e6)


def test_a_planner_added_with_one_entry_decides_the_tick(one_more: OneMore, tmp_path: Path) -> None:
    yaml = tmp_path / "daedalus.yaml"
    yaml.write_text("controller:\n  planner: one_more\n  max_rescales_per_hour: 2\n  max_scaleout: 12\n")
    controller = Controller(load_config(yaml))
    decision = controller.tick(window(120.0, 8, np.random.default_rng(0)), 120.0)
    assert (decision.current_scaleout, decision.target_scaleout) == (8, 9)
    assert decision.reason is Reason.SCALE_OUT_SMALLEST_VALID and decision.evidence.planner == "one_more"
    (seen,) = one_more.seen
    assert seen.step_s == 1.0 and seen.current_scaleout == 8
    # The YAML's rate reached the planner in the budget the tick built: a fresh controller starts with no token
    assert (seen.budget.per_hour, seen.budget.tokens) == (2.0, 0.0)


def test_the_registry_entry_says_what_a_planner_provisions_for(one_more: OneMore, tmp_path: Path) -> None:
    yaml = tmp_path / "daedalus.yaml"
    yaml.write_text("controller:\n  planner: one_more\n")
    forecast = Forecast(0.0, 10.0, (300.0, 500.0), "arima", (450.0, 800.0))
    assert provisioned_per_s(forecast, load_config(yaml).controller) == (300.0, 500.0)  # the default: the point


def test_checking_a_planner_name_imports_no_planner() -> None:
    """The config checks `controller.planner` on every load; the registry answers from its entries alone."""
    code = (
        "import sys; from daedalus_spark.config import parse_config; "
        "parse_config({'controller': {'planner': 'cost_aware'}}); "
        "print(sorted(m for m in sys.modules if m.startswith('daedalus_spark.plan.') or m == 'numpy'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = out.stdout.strip()
    assert loaded == "['daedalus_spark.plan.budget', 'daedalus_spark.plan.port', 'daedalus_spark.plan.registry']"
