"""Kubernetes harness: a real etcd and kube-apiserver on 127.0.0.1 (no kubelet, no controllers) for the execute
stage's tests: free ports, a data folder per run, static bearer tokens, RBAC on, self-signed certificates."""

from __future__ import annotations

import atexit
import json
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.demo.processes import Processes
from daedalus_spark.httpserve import free_port
from daedalus_spark.kubecluster.bins import etcd, kube_apiserver
from daedalus_spark.waiting import wait_until

ADMIN = "admin"
# Every request's who, what and answer (no bodies): what an account actually calls, for the least-privilege tests
_AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""
MASTERS = ("system:masters",)  # the group RBAC's bootstrap policy binds to cluster-admin


def service_account_user(namespace: str, name: str) -> tuple[str, tuple[str, ...]]:
    """The user name and groups a ServiceAccount's token authenticates as (what RBAC's ServiceAccount subject
    matches)."""
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
    return f"system:serviceaccount:{namespace}:{name}", groups


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found on the PATH: the local API server's keys and certificate need it")
    done = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}")


@dataclass
class LocalApiServer:
    """etcd and kube-apiserver as two process groups; `users` (name -> groups) each get a random bearer token."""

    users: dict[str, tuple[str, ...]] = field(default_factory=lambda: {ADMIN: MASTERS})
    start_timeout_s: float = 180.0  # a busy 2-core machine: the apiserver's post-start hooks take a while
    etcd_port: int = 0
    port: int = 0
    tokens: dict[str, str] = field(default_factory=dict)
    _dir: Path | None = None
    _processes: Processes | None = None
    started_s: float = 0.0  # how long start() took

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def folder(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the local API server is not started")
        return self._dir

    @property
    def ca_file(self) -> Path:
        return self.folder / "pki" / "serving.crt"

    def log_path(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    @property
    def audit_path(self) -> Path:
        return self.folder / "audit.jsonl"

    def audit(self, user: str) -> list[dict[str, Any]]:
        """The audit log's records of `user`'s requests (verb, objectRef, responseStatus, ...), oldest first."""
        if not self.audit_path.exists():
            return []
        records = (json.loads(line) for line in self.audit_path.read_text().splitlines() if line.strip())
        return [r for r in records if r.get("user", {}).get("username") == user]

    def start(self) -> LocalApiServer:
        """Make the keys, certificate and token file; start etcd, then kube-apiserver; return once /readyz is ok."""
        if self._dir is not None:
            raise RuntimeError(f"the local API server on {self.url} is already started")
        binaries = etcd(), kube_apiserver()  # missing binaries fail here, before any folder or port is taken
        began = time.monotonic()
        self._dir = Path(tempfile.mkdtemp(prefix="daedalus-apiserver-"))
        self._processes = Processes(self._dir)
        atexit.register(self.stop)
        try:
            self._prepare()
            self._start_etcd(binaries[0])
            self._start_apiserver(binaries[1])
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - began
        return self

    def _prepare(self) -> None:
        pki = self.folder / "pki"
        pki.mkdir()
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key", cwd=pki)
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "serving.key", "-out", "serving.crt",
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            cwd=pki,
        )  # fmt: skip
        (pki / "audit-policy.yaml").write_text(_AUDIT_POLICY)
        self.tokens = {user: secrets.token_hex(24) for user in self.users}
        rows = [f'{self.tokens[u]},{u},{u},"{",".join(groups)}"' for u, groups in self.users.items()]
        (pki / "tokens.csv").write_text("\n".join(rows) + "\n")

    def _alive(self) -> None:
        assert self._processes is not None
        for name, process in self._processes.started:
            if process.poll() is not None:
                tail = self.log_path(name).read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited ({process.returncode}); {self.log_path(name)} ends:\n{tail}")

    def _start_etcd(self, binary: Path) -> None:
        assert self._processes is not None
        self.etcd_port, peer = self.etcd_port or free_port(), free_port()
        client, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer}"
        self._processes.start(
            "etcd",
            [
                str(binary), "--name", "default", "--data-dir", str(self.folder / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"default={peer_url}", "--unsafe-no-fsync", "--log-level", "warn",
            ],
        )  # fmt: skip
        wait_until(
            lambda: self._etcd_healthy(client),
            f"etcd answering /health on {client} (log {self.log_path('etcd')})",
            self.start_timeout_s,
            interval_s=0.3,
            still_alive=self._alive,
        )

    @staticmethod
    def _etcd_healthy(client: str) -> bool:
        try:
            with urllib.request.urlopen(f"{client}/health", timeout=5) as answer:  # noqa: S310 - our own URL
                return bool(json.loads(answer.read()).get("health") == "true")
        except (OSError, ValueError):
            return False

    def _start_apiserver(self, binary: Path) -> None:
        assert self._processes is not None
        self.port = self.port or free_port()
        pki = self.folder / "pki"
        self._processes.start(
            "kube-apiserver",
            [
                str(binary), "--etcd-servers", f"http://127.0.0.1:{self.etcd_port}",
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
                "--cert-dir", str(pki), "--tls-cert-file", str(pki / "serving.crt"),
                "--tls-private-key-file", str(pki / "serving.key"),
                "--token-auth-file", str(pki / "tokens.csv"), "--authorization-mode", "RBAC",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", str(pki / "sa.key"),
                "--service-account-signing-key-file", str(pki / "sa.key"),
                "--service-cluster-ip-range", "10.0.0.0/24", "--profiling=false", "--v", "1",
                "--audit-policy-file", str(pki / "audit-policy.yaml"), "--audit-log-path", str(self.audit_path),
                "--audit-log-format", "json", "--audit-log-mode", "blocking",
            ],
        )  # fmt: skip
        wait_until(
            self._ready,
            f"kube-apiserver /readyz ok on {self.url} (log {self.log_path('kube-apiserver')})",
            self.start_timeout_s,
            interval_s=0.5,
            still_alive=self._alive,
        )

    def _ready(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(  # noqa: S310 - our own URL
            f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.tokens[ADMIN]}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as answer:  # noqa: S310
                return bool(answer.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    def api_client(self, user: str = ADMIN) -> k8s.ApiClient:
        """A client authenticated as `user` (one of `users`), trusting the server's self-signed certificate."""
        return self._client(self.tokens[user])

    def _client(self, token: str) -> k8s.ApiClient:
        configuration = k8s.Configuration(host=self.url)
        configuration.ssl_ca_cert = str(self.ca_file)
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        configuration.retries = 0  # as the controller's own client (kubernetes_client.load_api_client)
        return k8s.ApiClient(configuration)

    def service_account_client(self, namespace: str, name: str, *, create: bool = True) -> k8s.ApiClient:
        """A client with a token the server issued (TokenRequest) for ServiceAccount `namespace`/`name`: the identity
        a pod of that account has. `create`: make the account first when it does not exist."""
        core = k8s.CoreV1Api(self.api_client())
        if create:
            try:
                core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
            except ApiException as exc:
                if exc.status != 409:
                    raise
        request = {"spec": {"audiences": ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": 3600}}
        return self._client(core.create_namespaced_service_account_token(name, namespace, request).status.token)

    def install_crds(self, documents: list[dict[str, Any]], *, timeout_s: float = 120.0) -> None:
        """Create CustomResourceDefinitions (as the admin) and wait until each is Established."""
        api = k8s.ApiextensionsV1Api(self.api_client())
        for crd in documents:
            try:
                api.create_custom_resource_definition(crd)
            except ApiException as exc:
                if exc.status != 409:
                    raise
        for crd in documents:
            name = crd["metadata"]["name"]
            wait_until(
                lambda name=name: _established(api.read_custom_resource_definition(name)),  # type: ignore[misc]
                f"CustomResourceDefinition {name} Established",
                timeout_s,
                interval_s=0.3,
            )

    def stop(self) -> None:
        """Stop kube-apiserver, then etcd, and remove the data folder; safe to call twice."""
        atexit.unregister(self.stop)
        if self._processes is not None:
            self._processes.stop_all()
            self._processes = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LocalApiServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _established(crd: Any) -> bool:
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)
