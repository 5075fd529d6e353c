"""Kubernetes manifests against a real kube-apiserver: every kustomization under deploy/kubernetes (the overlays and
the example jobs built with the components), rendered with kustomize, is server-side applied with dry-run and strict
field validation, with the upstream CRDs installed; a field the server rejects, drops or prunes fails the test."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from daedalus_spark.kubecluster.apiserver import LocalApiServer
from tests.integration.k8s_cluster import JOB_NAMESPACE
from tests.integration.kustomize import DEPLOY, TARGETS, find, pod_template, render, rendered

pytestmark = pytest.mark.apiserver

# The overlays and examples the other manifest tests name, plus base and every example found on disk (a new one is
# applied without being listed anywhere).
KUSTOMIZATIONS = (
    dict(TARGETS)
    | {"base": DEPLOY / "base"}
    | {p.name: p for p in sorted((DEPLOY / "examples").iterdir()) if (p / "kustomization.yaml").exists()}
)
MANAGER = "daedalus-spark-tests"


def dry_run_apply(api: DynamicClient, doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """Server-side apply of `doc` with dryRun=All and fieldValidation=Strict: what the server would store."""
    resource = api.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    answer = api.server_side_apply(
        resource,
        body=doc,
        namespace=namespace if resource.namespaced else None,
        field_manager=MANAGER,
        force_conflicts=True,
        dry_run="All",
        query_params=[("fieldValidation", "Strict")],
    )
    return dict(answer.to_dict())


def missing(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of `sent` whose value is not in `stored` (dropped, pruned or changed by the server)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path}: sent an object, stored {stored!r}"]
        return [p for key, value in sent.items() for p in missing(value, stored.get(key), f"{path}.{key}")]
    if isinstance(sent, list):  # admission may append (a service account token's volume and mounts), not drop
        if not isinstance(stored, list) or len(stored) < len(sent):
            return [f"{path}: sent {len(sent)} items, stored {stored!r}"[:300]]
        return [p for i, (a, b) in enumerate(zip(sent, stored, strict=False)) for p in missing(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [f"{path}: sent {sent!r}, stored {stored!r}"]


def apply_all(apiserver: LocalApiServer, docs: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[str]:
    api = DynamicClient(apiserver.api_client())
    problems = []
    for doc in docs:
        what = f"{doc['kind']} {doc['metadata']['name']}"
        namespace = doc["metadata"].get("namespace") or JOB_NAMESPACE
        try:
            stored = dry_run_apply(api, doc, namespace)
        except ApiException as exc:
            problems.append(f"{what}: HTTP {exc.status}: {exc.body}"[:1500])
            continue
        sent = copy.deepcopy(doc)
        if stored["metadata"].get("namespace"):
            sent["metadata"].setdefault("namespace", namespace)
        problems += [f"{what}: {p}" for p in missing(sent, stored)]
    return problems


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_every_kustomization_is_accepted_by_the_api_server_with_nothing_pruned(apiserver, kustomization):
    docs = rendered(kustomization) if kustomization in TARGETS else render(KUSTOMIZATIONS[kustomization])
    assert docs
    core = k8s.CoreV1Api(apiserver.api_client())
    present = {n.metadata.name for n in core.list_namespace().items}
    for namespace in {d["metadata"].get("namespace") for d in docs} - present - {None}:  # the examples' own
        core.create_namespace({"metadata": {"name": namespace}})
    assert apply_all(apiserver, docs) == []


def test_the_spark_submit_driver_pod_template_is_a_valid_pod_once_spark_fills_in_the_driver(apiserver):
    pod = pod_template()  # spark-submit names the pod and sets the driver's image
    driver = next(c for c in pod["spec"]["containers"] if c["name"] == "spark-kubernetes-driver")
    driver["image"] = "ghcr.io/daedalus-spark/job:0.1.0"
    namespace = "pod-template"
    core = k8s.CoreV1Api(apiserver.api_client())
    core.create_namespace({"metadata": {"name": namespace}})
    # Pod admission looks the service account up: it must exist (the overlay's base creates it)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": pod["spec"]["serviceAccountName"]}})
    assert apply_all(apiserver, [pod | {"metadata": {**pod["metadata"], "namespace": namespace}}]) == []


def test_a_misspelt_field_is_rejected_and_an_unknown_custom_field_is_not_silently_pruned(apiserver):
    app = copy.deepcopy(find(rendered("spark-operator"), "SparkApplication"))
    app["spec"]["driver"]["sidecar"] = app["spec"]["driver"].pop("sidecars")  # a typo
    statefulset = copy.deepcopy(find(rendered("standalone"), "StatefulSet", "spark-worker"))
    statefulset["spec"]["replica"] = 2
    problems = apply_all(apiserver, [app, statefulset])
    assert len(problems) == 2, problems
    # Server-side apply refuses a field the schema does not declare before strict validation runs, as a 500 (the
    # typed patch cannot be made), for a custom resource and a built-in type alike.
    assert problems[0].startswith("SparkApplication wordcount: HTTP 500")
    assert ".spec.driver.sidecar: field not declared in schema" in problems[0]
    assert problems[1].startswith("StatefulSet spark-worker: HTTP 500")
    assert ".spec.replica: field not declared in schema" in problems[1]
