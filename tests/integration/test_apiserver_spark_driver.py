"""Spark's own driver against the real kube-apiserver, as the driver pod's ServiceAccount with the overlays' Roles
and the SparkApplication's sparkConf: it creates its executor pods and removes them, and nothing it asks for is
refused (the kube-apiserver's audit log lists every request it made)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from kubernetes import client as k8s

from daedalus_spark.demo.processes import Processes
from daedalus_spark.kubecluster.apiserver import LocalApiServer
from daedalus_spark.waiting import wait_until
from tests.integration.k8s_backends import CONTROLLER_SA, Real
from tests.integration.k8s_helpers import grants
from tests.integration.kustomize import find, rendered

pytestmark = [pytest.mark.apiserver, pytest.mark.spark]
EXECUTORS = 2


def driver_conf(real: Real, token_file: Path) -> dict[str, str]:
    """The SparkApplication's sparkConf and executor volume, plus what the operator would set for a driver in a pod
    (here a local client-mode driver: its own token and the server's CA)."""
    app = find(rendered("spark-operator"), "SparkApplication")
    conf = dict(app["spec"]["sparkConf"])
    conf |= {
        "spark.ui.enabled": "false",  # no port taken on a shared machine; the agent needs it, this test does not
        "spark.kubernetes.namespace": real.namespace,
        "spark.kubernetes.container.image": app["spec"]["image"],
        "spark.kubernetes.authenticate.oauthTokenFile": str(token_file),
        "spark.kubernetes.authenticate.caCertFile": str(real.server.ca_file),
        "spark.executor.instances": str(EXECUTORS),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    for mount in app["spec"]["executor"].get("volumeMounts", []):
        volume = next(v for v in app["spec"]["volumes"] if v["name"] == mount["name"])
        if "persistentVolumeClaim" in volume:
            prefix = f"spark.kubernetes.executor.volumes.persistentVolumeClaim.{mount['name']}"
            conf[f"{prefix}.options.claimName"] = volume["persistentVolumeClaim"]["claimName"]
            conf[f"{prefix}.mount.path"] = mount["mountPath"]
    return conf


def test_the_spark_driver_runs_its_executors_with_the_overlays_role_and_nothing_refused(
    apiserver: LocalApiServer, tmp_path: Path
) -> None:
    real = Real(apiserver, rbac_from=("spark-operator",))
    token_file = tmp_path / "token"
    token_file.write_text(real.controller.configuration.api_key["BearerToken"])
    stop_file = tmp_path / "stop"
    settings = {"url": apiserver.url, "conf": driver_conf(real, token_file), "stop_file": str(stop_file)}
    settings["timeout_s"] = 300
    core = k8s.CoreV1Api(real.admin)

    def executors() -> list[str]:
        pods = core.list_namespaced_pod(real.namespace, label_selector="spark-role=executor").items
        return [p.metadata.name for p in pods]

    processes = Processes(tmp_path)
    try:
        driver = processes.python("driver", "tests.integration.spark_k8s_driver", json.dumps(settings))

        def alive() -> None:
            if driver.poll() is not None:
                raise RuntimeError(f"the driver exited: {(tmp_path / 'driver.log').read_text()[-3000:]}")

        wait_until(lambda: len(executors()) == EXECUTORS, "the driver's executor pods", 240, still_alive=alive)
        stop_file.write_text("stop")
        assert driver.wait(timeout=180) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    finally:
        processes.stop_all()
    wait_until(lambda: executors() == [], "the executor pods removed by the stopped driver", 60)

    user = f"system:serviceaccount:{real.namespace}:{CONTROLLER_SA}"
    calls = Counter((r["verb"], r["objectRef"]["resource"], r["responseStatus"]["code"]) for r in apiserver.audit(user))
    refused = {call: n for call, n in calls.items() if call[2] >= 400}
    assert refused == {}, f"the driver was refused: {refused}"
    granted = {(resource, verb) for _, resource, _, verb in grants(real.roles["spark-driver"]["rules"])}
    used = {(resource, verb) for verb, resource, _ in calls}
    assert used <= granted
    assert {("pods", "create"), ("pods", "watch"), ("configmaps", "create"), ("pods", "deletecollection")} <= used
