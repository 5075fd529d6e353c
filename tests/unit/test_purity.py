"""Boundaries: analyze/ and plan/ import no I/O or concurrency library (pure core, I/O and the refit pool at the edges:
docs/architecture.md), and the package's parts, and the forecast package's modules, import each other without a
cycle."""

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "daedalus_spark"
FORBIDDEN = {
    "kubernetes",
    "prometheus_api_client",
    "prometheus_client",
    "requests",
    "urllib",
    "http",
    "socket",
    "sqlite3",
    "apscheduler",
    "subprocess",
    "pyspark",
    "time",
    "os",
    # Processes, threads and futures belong to the runtime (runtime/refit_scheduler.py runs the forecaster's refits).
    "concurrent",
    "threading",
    "multiprocessing",
}
PURE = sorted(p for d in ("analyze", "plan") for p in (PACKAGE / d).rglob("*.py"))
FORECAST = PACKAGE / "analyze" / "forecast"


@pytest.mark.parametrize("module", PURE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_module_imports_no_io_library(module):
    tree = ast.parse(module.read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not imported & FORBIDDEN, f"{module.name} imports {imported & FORBIDDEN}"


def test_the_check_sees_the_modules():
    assert {p.name for p in PURE} >= {
        "capacity.py",
        "recovery_prediction.py",
        "recovery_measurement.py",
        "stats.py",
        "algorithm.py",
    }
    assert {p.name for p in PURE if p.parent == FORECAST} >= {"models.py", "policy.py", "refit.py", "codec.py"}


def _part(module: str) -> str | None:
    """The package part a module belongs to: `analyze` for daedalus_spark.analyze.capacity, `loop` for .loop."""
    parts = module.split(".")
    return parts[1] if parts[0] == "daedalus_spark" and len(parts) > 1 else None


def _module_level_imports(path: Path) -> set[str]:
    """Imports run when the module loads (deferred imports in functions and TYPE_CHECKING blocks excluded)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | ({f"{node.module}.{a.name}" for a in node.names} if node.level == 0 else set())
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_package_parts_import_each_other_without_a_cycle():
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        source = _part(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for module in _module_level_imports(path):
            target = _part(module)
            if (
                source
                and target
                and target != source
                and (PACKAGE / target).exists() | (PACKAGE / f"{target}.py").exists()
            ):
                graph.setdefault(source, set()).add(target)
    assert {"loop", "controller", "execute", "runtime", "sim"} <= graph.keys()  # the check sees the wiring
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle


def test_the_forecast_modules_import_each_other_without_a_cycle():
    """Its roles stand in layers: scoring and models at the bottom, the policy on top (its __init__ only re-exports)."""
    package = "daedalus_spark.analyze.forecast"
    graph = {
        path.stem: {
            module.removeprefix(f"{package}.").split(".")[0]
            for module in _module_level_imports(path)
            if module.startswith(f"{package}.")
        }
        for path in FORECAST.glob("*.py")
        if path.stem != "__init__"
    }
    assert graph["policy"] >= {"models", "refit", "codec", "resample", "intervals"}  # the check sees the imports
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError naming the cycle
    assert order.index("models") < order.index("fitting") < order.index("refit") < order.index("policy")
