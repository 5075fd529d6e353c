"""Shared test helpers: bundled data paths, an observation builder, a fake clock, a process check, a notebook runner."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from daedalus_spark.domain import Observation
from daedalus_spark.monitor.files import BUNDLED_TRACES_DIR

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENTS = ROOT / "tests" / "data" / "measurements"
TRACES = BUNDLED_TRACES_DIR


def observation(
    *,
    time_s: float = 600.0,
    workload: float | list[float] = 1000.0,
    executors: dict[str, tuple[list[float], list[float]]] | None = None,
    samples: int = 60,
    lag: float = 0.0,
    scaleout: int | None = None,
    uptime_s: float = 1e6,
    step_s: float = 1.0,
    partitions: dict[tuple[str, int], float] | None = None,
) -> Observation:
    """An observation; `executors` maps id -> (throughput series, utilization series), `partitions` (topic,
    partition) -> records/s."""
    series = [float(workload)] * samples if isinstance(workload, (int, float)) else [float(x) for x in workload]
    executors = executors or {"w1": ([1000.0] * len(series), [0.5] * len(series))}
    return Observation.of(
        time_s=time_s,
        workload_per_s=series,
        executors=executors,
        step_s=step_s,
        consumer_lag_records=lag,
        scaleout=scaleout,
        uptime_s=uptime_s,
        partitions=partitions,
    )


@dataclass
class FakeTime:
    """Injected `sleep` and clock for code that waits (actuators confirming, retry backoff): sleeping advances it."""

    t: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    def now(self) -> float:
        return self.t

    monotonic = now


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie is gone, only not yet reaped


def execute_notebook(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """A notebook's code cells run in order in one namespace, from the repository root; that namespace."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # what a notebook writes for itself stays in the test's dir
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, Any] = {}
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}", "exec"), namespace)
    return namespace


@pytest.fixture
def measurements() -> Path:
    return MEASUREMENTS


@pytest.fixture(scope="session")
def apiserver() -> Iterator[Any]:
    """A real etcd and kube-apiserver (`make k8s-bins`), shared by the session's Kubernetes tests: the upstream CRDs
    the overlays use installed, the overlays' namespace made, an admin and the controller's ServiceAccount with
    static tokens. Stopped at the end of the session, whatever happens."""
    from kubernetes import client as k8s

    from daedalus_spark.kubecluster.apiserver import ADMIN, MASTERS, LocalApiServer
    from tests.integration.k8s_cluster import CONTROLLER, JOB_NAMESPACE, upstream_crds

    with LocalApiServer(users={ADMIN: MASTERS, CONTROLLER[0]: CONTROLLER[1]}) as server:
        server.install_crds(upstream_crds())
        k8s.CoreV1Api(server.api_client()).create_namespace({"metadata": {"name": JOB_NAMESPACE}})
        yield server


@pytest.fixture(scope="session")
def max_replicas_policy(apiserver: Any) -> Any:
    """The real API server with a ValidatingAdmissionPolicy refusing more than MAX_REPLICAS on a scale subresource
    (as a quota would), in force."""
    from tests.integration.k8s_backends import install_max_replicas_policy

    install_max_replicas_policy(apiserver)
    return apiserver
