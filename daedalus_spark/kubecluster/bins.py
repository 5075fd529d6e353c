"""Kubernetes harness: etcd, kube-apiserver and kubectl built with Go from the module proxy into a cache keyed by
version (`make k8s-bins`), and found there by the tests that check the execute stage against a real API server."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from daedalus_spark.buildcache import cache_root, fill_once, is_complete

KUBERNETES_VERSION = "1.36.3"  # builds with Go 1.26 as published (its go.mod says go 1.26.0)
ETCD_VERSION = "3.6.16"  # the newest 3.6 patch; Kubernetes 1.36 is built and tested against etcd 3.6
BUILD_COMMAND = "make k8s-bins"
_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/src/", re.MULTILINE)


class BinsMissing(RuntimeError):
    """The binaries are not in the cache (or Go is not installed): says which command builds them."""


def kubernetes_dir(kubernetes: str = KUBERNETES_VERSION) -> Path:
    return cache_root() / f"kube-apiserver-{kubernetes}"


def kubectl_dir(kubernetes: str = KUBERNETES_VERSION) -> Path:
    return cache_root() / f"kubectl-{kubernetes}"


def etcd_dir(etcd: str = ETCD_VERSION) -> Path:
    return cache_root() / f"etcd-{etcd}"


def _binary(folder: Path, name: str, what: str) -> Path:
    if not is_complete(folder):
        raise BinsMissing(f"{what} not found in {folder}: run `{BUILD_COMMAND}` (Go) first")
    return folder / name


def kube_apiserver() -> Path:
    return _binary(kubernetes_dir(), "kube-apiserver", f"kube-apiserver {KUBERNETES_VERSION}")


def kubectl() -> Path:
    """kubectl of the same release: `kubectl kustomize` renders the overlays (no kubectl on the machines)."""
    return _binary(kubectl_dir(), "kubectl", f"kubectl {KUBERNETES_VERSION}")


def etcd() -> Path:
    return _binary(etcd_dir(), "etcd", f"etcd {ETCD_VERSION}")


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The `k8s.io/*` modules that k8s.io/kubernetes's go.mod replaces with its own staging folders."""
    return sorted(set(_STAGING.findall(kubernetes_go_mod)))


def throwaway_go_mod(module: str, version: str, replaces: dict[str, str]) -> str:
    """A go.mod requiring `module` at `version`, with `replaces` (module -> version) standing in for its local ones."""
    lines = ["module daedalus-spark.invalid/build", "", "go 1.26.0", "", f"require {module} {version}", ""]
    lines += [f"replace {name} => {name} {target}" for name, target in sorted(replaces.items())]
    return "\n".join(lines) + "\n"


def _go_env() -> dict[str, str]:
    """Two parallel compilations at most (a 2-core machine), paths trimmed, no cgo (static binaries)."""
    env = dict(os.environ, CGO_ENABLED="0")
    env["GOFLAGS"] = " ".join(filter(None, [os.environ.get("GOFLAGS", ""), "-p=2", "-trimpath", "-modcacherw"]))
    return env


def _go(args: list[str], cwd: Path, go: str) -> str:
    done = subprocess.run([go, *args], cwd=cwd, env=_go_env(), check=True, text=True, stdout=subprocess.PIPE)  # noqa: S603
    return done.stdout


def _build(folder: Path, *, module: str, version: str, packages: dict[str, str], go: str, ldflags: str = "") -> bool:
    """Build `packages` (binary name -> Go package) of `module`@`version` into `folder`, unless done; True if built."""

    def go_build(partial: Path) -> str:
        if shutil.which(go) is None:
            raise BinsMissing(f"{go} not found on the PATH: `{BUILD_COMMAND}` builds etcd and kube-apiserver with Go")
        source = partial / "module"  # a throwaway module requiring `module`, removed once the binaries are built
        source.mkdir()
        info = json.loads(_go(["mod", "download", "-json", f"{module}@v{version}"], partial, go))
        replaces = {name: f"v0.{version.split('.', 1)[1]}" for name in staging_modules(Path(info["GoMod"]).read_text())}
        (source / "go.mod").write_text(throwaway_go_mod(module, f"v{version}", replaces))
        _go(["get", *(f"{package}@v{version}" for package in packages.values())], source, go)
        for name, package in packages.items():
            _go(["build", "-ldflags", f"-s -w {ldflags}".strip(), "-o", str(partial / name), package], source, go)
        shutil.rmtree(source)
        return f"{module} v{version}\n"

    return fill_once(folder, go_build)


def _version_ldflags(kubernetes: str) -> str:
    """What Kubernetes's own build stamps, so that /version says which release this is."""
    major, minor, _ = kubernetes.split(".")
    package = "k8s.io/component-base/version"
    stamps = {"gitVersion": f"v{kubernetes}", "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return " ".join(f"-X {package}.{key}={value}" for key, value in stamps.items())


def build_all(*, go: str = "go") -> list[str]:
    """kube-apiserver, etcd and kubectl at the pinned versions; returns one line per folder."""
    kubernetes, etcd_server = ("k8s.io/kubernetes", KUBERNETES_VERSION), ("go.etcd.io/etcd/server/v3", ETCD_VERSION)
    stamp = _version_ldflags(KUBERNETES_VERSION)
    wanted = [
        (kubernetes_dir(), kubernetes, "kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", stamp),
        (etcd_dir(), etcd_server, "etcd", "go.etcd.io/etcd/server/v3", ""),
        (kubectl_dir(), kubernetes, "kubectl", "k8s.io/kubernetes/cmd/kubectl", stamp),
    ]
    lines = []
    for folder, (module, version), name, package, ldflags in wanted:
        built = _build(folder, module=module, version=version, packages={name: package}, go=go, ldflags=ldflags)
        lines.append(f"{folder}: {'built' if built else 'cached'}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.kubecluster.bins", description=__doc__)
    p.add_argument("--go", default="go", help="the go command (default: the one on the PATH)")
    args = p.parse_args(argv)
    for line in build_all(go=args.go):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
