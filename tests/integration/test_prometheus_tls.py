"""PrometheusMonitor against a real Prometheus serving HTTPS (--web.config.file): certificates are checked by default,
against monitor.ca_file when given, and not at all only when monitor.tls_verify is off."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from daedalus_spark.config import MonitorConfig
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus

pytestmark = [
    pytest.mark.skipif(find_binary() is None, reason="no prometheus binary (Debian package `prometheus`)"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl: no certificates to serve TLS with"),
]


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A private CA and a certificate it signed for 127.0.0.1: (certificate, key, CA)."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=daedalus test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=directory)  # fmt: skip
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=directory)  # fmt: skip
    return directory / "server.pem", directory / "server.key", directory / "ca.pem"


@pytest.fixture(scope="module")
def https_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, Path]]:
    directory = tmp_path_factory.mktemp("tls")
    tls = certificates(directory)
    server = start_prometheus([], workdir=directory / "prometheus", tls=tls)
    yield server, tls[2]
    server.stop()


@pytest.mark.parametrize(
    ("settings", "kind"),
    [
        # The server answers, with no series of the job: the TLS handshake passed.
        pytest.param({"ca_file": "CA"}, "empty", id="ca-bundle-accepted"),
        pytest.param({}, "unreachable", id="checked-by-default-unknown-ca-refused"),
        pytest.param({"tls_verify": False}, "empty", id="check-off-when-asked"),
    ],
)
def test_certificates_are_checked_against_a_real_https_prometheus(https_prometheus, settings, kind):
    server, ca = https_prometheus
    assert server.url.startswith("https://")
    settings = {k: (str(ca) if v == "CA" else v) for k, v in settings.items()}
    monitor = PrometheusMonitor(
        MonitorConfig(prometheus_url=server.url, scrape_interval_s=1, timeout_s=5, **settings), "cpu"
    )
    try:
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=1_000, end_s=1_010)
    finally:
        monitor.close()
    assert err.value.kind == kind, str(err.value)
