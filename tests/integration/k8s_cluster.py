"""What the tests against the real API server share: the upstream CRDs, the job namespace, the controller's identity."""

from __future__ import annotations

from pathlib import Path

import yaml

from daedalus_spark.kubecluster.apiserver import service_account_user
from tests.conftest import ROOT

UPSTREAM_CRDS = ROOT / "tests" / "data" / "crd" / "upstream"
JOB_NAMESPACE = "wordcount"  # the overlays' namespace
CONTROLLER = service_account_user(JOB_NAMESPACE, "daedalus")  # the overlays' ServiceAccount, by static token


def upstream_crds(folder: Path = UPSTREAM_CRDS) -> list[dict[str, object]]:
    return [doc for path in sorted(folder.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
