"""Boundaries: analyze/ and plan/ import no I/O library (pure core, I/O at the edges: docs/architecture.md), and the
package's parts import each other without a cycle."""

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
}
PURE = sorted(p for d in ("analyze", "plan") for p in (PACKAGE / d).glob("*.py"))


@pytest.mark.parametrize("module", PURE, ids=lambda p: f"{p.parent.name}/{p.name}")
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
