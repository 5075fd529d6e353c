"""Execute: the Kubernetes client — loading it (service account or kubeconfig), its retries, its errors in one line."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from daedalus_spark.config import KubernetesConfig
from daedalus_spark.waiting import retrying

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
T = TypeVar("T")
# What a call to the API server raises: an answer (ApiException) or none (urllib3's errors, the socket's).
API_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)


class KubernetesSetupError(ValueError):
    """Neither the in-cluster service account nor a kubeconfig could be loaded."""


def load_api_client(settings: KubernetesConfig, environ: Mapping[str, str]) -> tuple[k8s.ApiClient, str]:
    """The client (in-cluster service account or kubeconfig, as configured) and the namespace to work in."""
    in_cluster = settings.in_cluster
    if in_cluster == "auto":
        in_cluster = "KUBERNETES_SERVICE_HOST" in environ
    configuration = k8s.Configuration()
    try:
        if in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)
            namespace = settings.namespace or _service_account_namespace()
        else:
            path = settings.kubeconfig or None
            k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
            _, context = k8s_config.list_kube_config_contexts(config_file=path)
            namespace = settings.namespace or context.get("context", {}).get("namespace") or "default"
    except (k8s_config.ConfigException, OSError, TypeError) as exc:
        how = "in-cluster service account" if in_cluster else f"kubeconfig {settings.kubeconfig or '(default)'}"
        raise KubernetesSetupError(
            f"kubernetes.in_cluster={settings.in_cluster}: cannot load the {how}: {exc}"
        ) from None
    configuration.retries = 0  # retries are ours (api_call: bounded, with backoff, a fresh read after a conflict)
    return k8s.ApiClient(configuration), namespace


def _service_account_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def api_error_kind(status: int | None) -> str:
    """'retry' (conflict, throttled, server error, no answer), 'refuse' (the API said no), or 'fail'."""
    if status is None or status in (409, 429) or status >= 500:
        return "retry"
    return "refuse" if 400 <= status < 500 else "fail"


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return api_error_kind(exc.status) == "retry"
    return isinstance(exc, urllib3.exceptions.HTTPError | OSError)


def api_call(action: Callable[[], T], settings: KubernetesConfig, sleep: Callable[[float], None] = time.sleep) -> T:
    """`action` with the one retry policy (waiting.retrying): the transient answers (409, 429, 5xx, no answer) are
    tried again up to `kubernetes.retries` attempts, after `backoff_s`, doubling.

    A 409 is retried like the rest, but only helps because the scale actuator's action reads the object afresh
    before every write (the resourceVersion it sends is the one just read): a retry of the same PATCH would conflict
    again, which is why urllib3's Retry inside the client (configuration.retries) is switched off."""
    return retrying(settings.retries, settings.backoff_s, _transient, sleep=sleep)(action)


def explain_api_error(
    status: int | None, *, verb: str, resource: str, namespace: str, name: str, message: str = ""
) -> str:
    """One line naming the object and, for 403, the RBAC rule the service account lacks."""
    where = f"{resource} {namespace}/{name}"
    if status == 403:
        return (
            f"forbidden: may not {verb} {where} — grant the service account the RBAC verb '{verb}' on "
            f"'{resource}' (resourceNames: [{name}]) in namespace {namespace}" + (f" ({message})" if message else "")
        )
    if status == 404:
        return f"{where} not found (does it exist in namespace {namespace}?)" + (f": {message}" if message else "")
    if status is None:
        return f"cannot {verb} {where}: no answer from the API server" + (f" ({message})" if message else "")
    return f"cannot {verb} {where}: HTTP {status}" + (f": {message}" if message else "")


def explain_exception(exc: Exception, *, verb: str, resource: str, namespace: str, name: str) -> str:
    """explain_api_error for what a call raised: the Status object's message, else the HTTP reason or error type."""
    status = exc.status if isinstance(exc, ApiException) else None
    message = _status_message(exc) if isinstance(exc, ApiException) else type(exc).__name__
    return explain_api_error(status, verb=verb, resource=resource, namespace=namespace, name=name, message=message)


def _status_message(exc: ApiException) -> str:
    """The Status object's message, else the HTTP reason."""
    try:
        status = json.loads(exc.body or "{}")
    except ValueError:
        status = {}
    return str(status.get("message") or exc.reason or "") if isinstance(status, dict) else str(exc.reason or "")
