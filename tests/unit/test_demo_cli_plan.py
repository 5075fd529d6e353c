"""Unit: `daedalus-spark demo --config FILE` runs the live demo with the `demo:` section of that file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import daedalus_spark.demo.live as live
from daedalus_spark.cli import main
from daedalus_spark.demo.plan import DEMO_CONFIG


def test_the_demo_plan_takes_the_configs_demo_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = Path(DEMO_CONFIG).read_text(encoding="utf-8")
    assert "  history_cycles: 3\n" in text and "  load_cycle_s: 480.0\n" in text
    config = tmp_path / "demo.yaml"
    config.write_text(
        text.replace("  history_cycles: 3\n", "  history_cycles: 0\n").replace(
            "  load_cycle_s: 480.0\n", "  load_cycle_s: 240.0\n"
        ),
        encoding="utf-8",
    )
    seen: list[Any] = []
    monkeypatch.setattr(live, "run_demo", lambda out, plan, config_path: seen.append(plan) or 0)
    assert main(["demo", "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    assert (seen[0].history_cycles, seen[0].duration_s) == (0, 240.0)
