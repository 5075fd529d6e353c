"""Boundaries of the tests, benchmarks and probes: no test module imports another (shared doubles live in
daedalus_spark/testing.py, shared helpers in the tests' non-test modules and conftest.py); no benchmark or probe
imports the tests or edits sys.path (each runs as `python benchmarks/<name>.py` or `python probes/<name>.py` against
the installed package, its own folder first on the path)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
BENCHMARKS = ROOT / "benchmarks"
PROBES = ROOT / "probes"


def _imports(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, modules) for every import statement in the file, deferred ones included; `from a import b` names a and
    a.b (b may be a module)."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield node.lineno, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            yield node.lineno, [base] + [f"{base}.{alias.name}".replace("..", ".") for alias in node.names]


def _is_test_module(module: str) -> bool:
    return any(part.startswith("test_") for part in module.split("."))


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_no_test_module_imports_another():
    offending = sorted(
        f"{_where(path, line)} imports {bad[0]}"
        for path in TESTS.rglob("*.py")
        for line, modules in _imports(path)
        if (bad := [m for m in modules if _is_test_module(m)])
    )
    shared = "daedalus_spark/testing.py or a helper module"
    assert not offending, f"move what is shared to {shared}:\n" + "\n".join(offending)


def test_no_benchmark_or_probe_imports_the_tests_or_edits_sys_path():
    offending = []
    for path in sorted([*BENCHMARKS.rglob("*.py"), *PROBES.rglob("*.py")]):
        tree = ast.parse(path.read_text(), filename=str(path))
        offending += [
            f"{_where(path, line)} imports {bad[0]}"
            for line, modules in _imports(path)
            if (bad := [m for m in modules if m.split(".")[0] == "tests" or m == "sys.path"])
        ]
        offending += [
            f"{_where(path, node.lineno)} uses sys.path"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ]
    assert not offending, "\n".join(offending)


def test_the_checks_see_the_files():
    assert len(list(TESTS.rglob("test_*.py"))) > 100 and (TESTS / "unit" / "test_loop.py").exists()
    assert len(list(BENCHMARKS.glob("*.py"))) > 10 and (BENCHMARKS / "sparkbench.py").exists()
    assert (PROBES / "bad_input_probe.py").exists() and (PROBES / "bad_input" / "cases.py").exists()
    assert (BENCHMARKS / "capacity_experiments" / "saturation.py").exists()
    assert _is_test_module("tests.unit.test_loop.ScriptedMonitor") and not _is_test_module("tests.unit.plan_inputs")
    seen = {m for _, modules in _imports(TESTS / "unit" / "test_loop.py") for m in modules}
    assert "daedalus_spark.testing.ScriptedMonitor" in seen
