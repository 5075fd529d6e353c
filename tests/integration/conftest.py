"""The real API server (etcd + kube-apiserver, `make k8s-bins`) the Kubernetes tests share: started once per test
session, with the upstream CRDs the overlays use installed, and stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from daedalus_spark.kubecluster.apiserver import ADMIN, MASTERS, LocalApiServer, service_account_user
from tests.conftest import ROOT

UPSTREAM_CRDS = ROOT / "tests" / "data" / "crd" / "upstream"
JOB_NAMESPACE = "wordcount"  # the overlays' namespace
CONTROLLER = service_account_user(JOB_NAMESPACE, "daedalus")  # the overlays' ServiceAccount, by static token


def upstream_crds(folder: Path = UPSTREAM_CRDS) -> list[dict[str, object]]:
    return [doc for path in sorted(folder.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.fixture(scope="session")
def apiserver() -> Iterator[LocalApiServer]:
    server = LocalApiServer(users={ADMIN: MASTERS, CONTROLLER[0]: CONTROLLER[1]})
    with server:
        server.install_crds(upstream_crds())
        from kubernetes import client as k8s

        k8s.CoreV1Api(server.api_client()).create_namespace({"metadata": {"name": JOB_NAMESPACE}})
        yield server
