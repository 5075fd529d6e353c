"""The kubectl that renders the overlays and examples (`kubectl kustomize`): the one on the PATH, else the one
`make k8s-bins` built beside kube-apiserver."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from daedalus_spark.kubecluster.bins import BinsMissing, kubectl
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy" / "kubernetes"
OVERLAYS = ["spark-operator", "spark-submit", "standalone"]
EXAMPLES = ["orders-jvm", "clickstream-pyspark"]  # jobs that are not WordCount, built with the components
DRIVER_SIDECAR = ["spark-operator", "spark-submit", *EXAMPLES]  # the controller rides in the driver pod
TARGETS = (
    {name: DEPLOY / "overlays" / name for name in OVERLAYS}
    | {name: DEPLOY / "examples" / name for name in EXAMPLES}
    | {"monitoring": DEPLOY / "monitoring"}
)
POD_TEMPLATE = DEPLOY / "overlays" / "spark-submit" / "driver-pod-template"  # rendered for spark-submit, not applied


def kubectl_command() -> str | None:
    try:
        return shutil.which("kubectl") or str(kubectl())
    except BinsMissing:
        return None


def render(folder: Path) -> tuple[dict[str, Any], ...]:
    command = kubectl_command()
    assert command is not None, "no kubectl: run `make k8s-bins`"
    out = subprocess.run([command, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


@cache
def rendered(target: str) -> tuple[dict[str, Any], ...]:
    return render(TARGETS[target])


def find(docs: tuple[dict[str, Any], ...], kind: str, name: str | None = None) -> dict[str, Any]:
    hits = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(hits) == 1, f"expected one {kind} {name or ''}, found {len(hits)}"
    return hits[0]


def pod_template() -> dict[str, Any]:
    """WordCount's spark-submit driver pod template, as `kubectl kustomize` renders it (a fresh copy each call)."""
    (pod,) = render(POD_TEMPLATE)
    return pod
