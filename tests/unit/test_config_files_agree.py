"""TLS and token paths: `validate-config` refuses what `run` would refuse, by the same check, and neither blocks on
a named pipe (a pipe as monitor.bearer_token_file held `run` at start with no output)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import ConfigError, load_config
from daedalus_spark.monitor.prometheus import auth_headers, session
from tests.conftest import ROOT

URL = "http://127.0.0.1:9"


def _fifo(d: Path) -> str:
    os.mkfifo(d / "pipe")
    return str(d / "pipe")


def _file(text: str) -> Callable[[Path], str]:
    def make(d: Path) -> str:
        (d / "f").write_text(text)
        return str(d / "f")

    return make


CASES = [
    ("token-named-pipe", "bearer_token_file", _fifo, "a named pipe, not a file"),
    ("token-directory", "bearer_token_file", lambda d: str(d), "a directory, not a file"),
    ("token-device", "bearer_token_file", lambda d: "/dev/zero", "a device, not a file"),
    ("token-missing", "bearer_token_file", lambda d: str(d / "nope"), "cannot read: No such file or directory"),
    ("token-empty", "bearer_token_file", _file("\n"), "the bearer token is empty"),
    ("token-two-lines", "bearer_token_file", _file("abc\ndef\n"), "holds whitespace or a control character"),
    ("token-too-large", "bearer_token_file", _file("x" * 70_000), "larger than 64 KiB"),
    ("ca-named-pipe", "ca_file", _fifo, "a named pipe, not a file"),
    ("ca-directory", "ca_file", lambda d: str(d), "a directory, not a file"),
    ("ca-missing", "ca_file", lambda d: str(d / "nope"), "cannot read: No such file or directory"),
]


@pytest.mark.parametrize(("key", "make", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_config_and_run_refuse_the_same_paths(tmp_path: Path, capsys, key, make, expected) -> None:
    path = make(tmp_path)
    (tmp_path / "c.yaml").write_text(f"monitor: {{prometheus_url: '{URL}', scrape_interval_s: 1, {key}: '{path}'}}\n")
    assert main(["validate-config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expected in err and f"monitor.{key}" in err, err
    # run reads them through the same functions: a config built without validation meets the same refusal
    with pytest.raises(ConfigError):
        load_config(tmp_path / "c.yaml")
    from daedalus_spark.config import MonitorConfig

    unchecked = MonitorConfig.model_construct(
        **{**MonitorConfig().model_dump(), "prometheus_url": URL, "scrape_interval_s": 1.0, key: path}
    )
    with pytest.raises(ValueError, match=expected.split(",")[0]):
        auth_headers(unchecked, {}) if key == "bearer_token_file" else session(unchecked)


def test_run_with_a_named_pipe_as_token_file_says_so_at_once(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        f"monitor: {{prometheus_url: '{URL}', scrape_interval_s: 1, bearer_token_file: '{_fifo(tmp_path)}'}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "daedalus_spark", "run", "--config", str(tmp_path / "c.yaml")],
        capture_output=True,
        text=True,
        timeout=120,  # it used to block for ever; a start takes seconds even on a busy machine
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2 and "a named pipe, not a file" in done.stderr, done.stderr


def test_a_kubeconfig_that_is_a_named_pipe_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "c.yaml").write_text(f"kubernetes: {{kubeconfig: '{_fifo(tmp_path)}'}}\n")
    assert main(["validate-config", str(tmp_path / "c.yaml")]) == 2
    assert "kubernetes.kubeconfig" in capsys.readouterr().err


def test_a_good_token_file_and_ca_file_pass_both(tmp_path: Path, capsys) -> None:
    (tmp_path / "token").write_text("tok-1e2f3a4b\n")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "c.yaml").write_text(
        f"monitor: {{prometheus_url: '{URL}', scrape_interval_s: 1, bearer_token_file: '{tmp_path / 'token'}', "
        f"ca_file: '{tmp_path / 'ca.pem'}'}}\n"
    )
    assert main(["validate-config", str(tmp_path / "c.yaml")]) == 0
    monitor = load_config(tmp_path / "c.yaml").monitor
    assert auth_headers(monitor, {}) == {"Authorization": "Bearer tok-1e2f3a4b"}
