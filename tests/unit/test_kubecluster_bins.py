"""The build of etcd, kube-apiserver and kubectl: the throwaway module's go.mod, the cache, the clear errors."""

from __future__ import annotations

import pytest

from daedalus_spark.kubecluster import bins
from daedalus_spark.kubecluster.apiserver import LocalApiServer

KUBERNETES_GO_MOD = """module k8s.io/kubernetes

go 1.26.0

require (
	k8s.io/api v0.0.0
	go.etcd.io/etcd/client/v3 v3.6.8
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/kube-aggregator => ./staging/src/k8s.io/kube-aggregator
	github.com/some/fork => github.com/other/fork v1.0.0
)
"""


def test_only_the_staging_modules_are_replaced():
    assert bins.staging_modules(KUBERNETES_GO_MOD) == ["k8s.io/api", "k8s.io/kube-aggregator"]


def test_the_throwaway_module_requires_kubernetes_and_maps_each_staging_module_to_its_release():
    go_mod = bins.throwaway_go_mod(
        "k8s.io/kubernetes", "v1.36.3", {"k8s.io/api": "v0.36.3", "k8s.io/kube-aggregator": "v0.36.3"}
    )
    lines = go_mod.splitlines()
    assert "go 1.26.0" in lines and "require k8s.io/kubernetes v1.36.3" in lines
    assert "replace k8s.io/api => k8s.io/api v0.36.3" in lines
    assert "replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.36.3" in lines


def test_the_version_is_stamped_as_kubernetes_own_build_does():
    flags = bins._version_ldflags("1.36.3")
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in flags
    assert "-X k8s.io/component-base/version.gitMinor=36" in flags


def test_binaries_not_built_are_a_clear_error_naming_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path))
    with pytest.raises(bins.BinsMissing, match=r"kube-apiserver 1\.36\.3 not found in .*: run `make k8s-bins`"):
        bins.kube_apiserver()
    with pytest.raises(bins.BinsMissing, match="run `make k8s-bins`"):
        LocalApiServer().start()  # before any folder or port is taken
    (tmp_path / "etcd-3.6.16").mkdir()  # a build that did not finish: no completion mark
    with pytest.raises(bins.BinsMissing, match=r"etcd 3\.6\.16"):
        bins.etcd()


def test_a_complete_cache_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DAEDALUS_SPARK_CACHE", str(tmp_path))
    for folder in (bins.kubernetes_dir(), bins.etcd_dir(), bins.kubectl_dir()):
        folder.mkdir()
        (folder / ".complete").write_text("built\n")
    lines = bins.build_all(go="no-such-go")  # never called
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["cached", "cached", "cached"]
