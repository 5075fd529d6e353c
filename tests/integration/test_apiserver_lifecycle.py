"""The local API server the tests start: it answers as a real one (version, RBAC), and leaves no process and no
folder behind when its owner fails or is interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from daedalus_spark.kubecluster.bins import KUBERNETES_VERSION
from daedalus_spark.waiting import wait_until
from tests.conftest import ROOT, alive
from tests.integration.k8s_cluster import CONTROLLER

pytestmark = pytest.mark.apiserver

OWNER = textwrap.dedent(
    """
    import signal, sys, time
    from daedalus_spark.kubecluster.apiserver import LocalApiServer
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, even in a background job
    server = LocalApiServer().start()
    pids = [str(process.pid) for _, process in server._processes.started]
    print(" ".join(pids), server.folder, flush=True)
    if sys.argv[1] == "raise":
        raise RuntimeError("the owner fails, never calling stop(): the exit hook stops the server")
    time.sleep(600)
    """
)


def test_it_is_the_pinned_release_with_rbac_on(apiserver):
    version = k8s.VersionApi(apiserver.api_client()).get_code()
    assert version.git_version == f"v{KUBERNETES_VERSION}"
    with pytest.raises(ApiException) as refused:  # the controller's token, no Role bound in kube-system
        k8s.CoreV1Api(apiserver.api_client(CONTROLLER[0])).list_namespaced_secret("kube-system")
    assert refused.value.status == 403


@pytest.mark.parametrize("ending", ["raise", "ctrl-c"], ids=["owner-fails", "owner-interrupted"])
def test_etcd_and_kube_apiserver_leave_no_process_and_no_folder_behind(ending: str, tmp_path: Path) -> None:
    log = tmp_path / "owner.log"
    with log.open("w") as err:
        owner = subprocess.Popen(
            [sys.executable, "-c", OWNER, ending], stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT
        )
    pids: list[int] = []
    try:
        assert owner.stdout is not None
        *pid_texts, folder = owner.stdout.readline().split()
        pids = [int(p) for p in pid_texts]
        assert len(pids) == 2 and all(alive(p) for p in pids) and Path(folder).is_dir()
        if ending == "ctrl-c":
            owner.send_signal(signal.SIGINT)
        try:
            owner.wait(timeout=180)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the owner did not exit within 180 s; it printed:\n{log.read_text()[-3000:]}")
        wait_until(lambda: not any(alive(p) for p in pids), f"etcd and kube-apiserver ({pids}) to be gone", 60)
        assert not Path(folder).exists()
    finally:
        owner.kill()
        owner.wait()
        for pid in pids:
            if alive(pid):  # the owner failed to stop it: stop it here, and fail above
                os.kill(pid, signal.SIGKILL)
