"""analyze/ and plan/ stay pure: they import no I/O library (DESIGN: pure core, I/O at the edges)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "daedalus_spark"
FORBIDDEN = {"kubernetes", "prometheus_api_client", "prometheus_client", "requests", "urllib", "http", "socket",
             "sqlite3", "apscheduler", "subprocess", "pyspark", "time", "os"}
PURE = sorted(p for d in ("analyze", "plan") for p in (PACKAGE / d).glob("*.py"))


@pytest.mark.parametrize("module", PURE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_module_imports_no_io_library(module):
    tree = ast.parse(module.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & FORBIDDEN, f"{module.name} imports {imported & FORBIDDEN}"


def test_the_check_sees_the_modules():
    assert {p.name for p in PURE} >= {"capacity.py", "recovery.py", "anomaly.py", "stats.py", "algorithm.py"}
