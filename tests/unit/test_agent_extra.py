"""The `agent` extra: what the in-driver agent needs at run time in a job image that already has PySpark. It names no
PySpark, the core's dependencies pull none, and every third-party module the agent imports (its own modules and the
package modules they import, followed through) comes from the core's dependencies or the extra."""

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "daedalus_spark"
AGENT = sorted((PACKAGE / "agent").glob("*.py"))
# Import names that differ from the distribution's name (compared normalised: lower case, `_` and `.` as `-`).
DISTRIBUTION = {
    "yaml": "pyyaml",
    "kafka": "kafka-python",
    "confluent_kafka": "confluent-kafka",
    "prometheus_client": "prometheus-client",
    "prometheus_api_client": "prometheus-api-client",
    "promql_parser": "promql-parser",
    "sklearn": "scikit-learn",
}
# The job image's Spark distribution brings these (spark-submit puts /opt/spark/python and py4j on the path).
FROM_THE_IMAGE = {"pyspark", "py4j"}


def _project() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]


def _names(requirements: list[str]) -> set[str]:
    """The normalised distribution names of requirement strings (`pyyaml>=6` -> pyyaml)."""
    return {
        re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-") for r in requirements
    }


def _imports(path: Path) -> set[str]:
    """The absolute module names a file imports (from `from daedalus_spark import metricnames` both the package and
    daedalus_spark.metricnames, whichever is a module)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
    return modules


def _file(module: str) -> Path | None:
    """The package file of a daedalus_spark module, or None (a name imported from a module is not one)."""
    relative = Path(*module.split("."))
    for candidate in (ROOT / relative.with_suffix(".py"), ROOT / relative / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _third_party_imports_of_the_agent() -> dict[str, set[str]]:
    """Top-level third-party modules imported by the agent's files and the package modules they reach, each with the
    files that import it."""
    seen: set[Path] = set()
    todo = [*AGENT, PACKAGE / "__init__.py"]
    third_party: dict[str, set[str]] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path):
            top = module.split(".")[0]
            if top == "daedalus_spark":
                parts = module.split(".")
                # importing daedalus_spark.a.b runs daedalus_spark/a/__init__.py first
                for i in range(1, len(parts) + 1):
                    found = _file(".".join(parts[:i]))
                    if found is not None:
                        todo.append(found)
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return third_party


def test_the_agent_extra_names_no_pyspark_and_the_core_depends_on_none():
    project = _project()
    extras = project["optional-dependencies"]
    assert "agent" in extras
    assert not _names(extras["agent"]) & FROM_THE_IMAGE, extras["agent"]
    assert not _names(project["dependencies"]) & FROM_THE_IMAGE, project["dependencies"]
    # the spark extra still brings the agent's dependencies (and PySpark)
    assert "daedalus-spark[agent]" in extras["spark"] or _names(extras["agent"]) <= _names(extras["spark"])
    assert "pyspark" in _names(extras["spark"])


def test_every_third_party_module_the_agent_imports_is_installed_with_the_agent_extra():
    project = _project()
    installed = _names(project["dependencies"]) | _names(project["optional-dependencies"]["agent"])
    imported = _third_party_imports_of_the_agent()
    missing = {
        module: sorted(files)
        for module, files in imported.items()
        if module not in FROM_THE_IMAGE and DISTRIBUTION.get(module, module).lower().replace("_", "-") not in installed
    }
    assert not missing, f"imported by the agent but in neither the core dependencies nor the agent extra: {missing}"


def test_the_check_sees_the_agent_and_its_imports():
    assert {p.name for p in AGENT} >= {"agent.py", "offset_commit.py", "server.py", "collector.py"}
    imported = _third_party_imports_of_the_agent()
    # the agent's exporter, its Spark session, and the offset committer's Kafka client (imported inside a function)
    assert {"prometheus_client", "pyspark", "kafka"} <= set(imported)
    assert "daedalus_spark/agent/offset_commit.py" in imported["kafka"]
