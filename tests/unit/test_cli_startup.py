"""The command line starts without the heavy libraries: `--version`, `--help` and `validate-config` load none of
the forecasting models, data frames, numerics, Spark or the Kubernetes client (each command imports its own)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("statsmodels", "pmdarima", "pandas", "pyspark", "kubernetes", "numpy", "scipy", "sklearn", "matplotlib")

# Runs the console script's entry point as `daedalus-spark <argv>` and prints the top-level modules then loaded.
PROBE = """
import json, sys
from daedalus_spark.__main__ import main
sys.argv = ["daedalus-spark", *sys.argv[1:]]
try:
    status = main()
except SystemExit as exc:
    status = exc.code
print(json.dumps({"status": status, "modules": sorted({name.partition(".")[0] for name in sys.modules})}))
"""


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["--help"], ["validate-config", str(ROOT / "deploy" / "demo.yaml")], ["simulate", "--help"]],
    ids=["version", "help", "validate-config", "simulate-help"],
)
def test_a_light_command_loads_no_heavy_library(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["status"] in (0, None), done.stderr
    assert sorted(set(HEAVY) & set(result["modules"])) == []


def test_every_command_is_still_listed() -> None:
    from daedalus_spark.cli import build_parser

    help_text = build_parser().format_help()
    for command in ("validate-config", "capacity", "forecast", "run", "demo", "simulate", "report", "tune"):
        assert command in help_text
