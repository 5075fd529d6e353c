"""`tune` against hostile input: outputs never written through a symlink, a Prometheus echoing the bearer token,
absurd or empty --since, the documented command with the shipped config, and the history bounded by retention."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import Config
from daedalus_spark.httpserve import free_port
from daedalus_spark.testing import TUNE_GRID, TUNE_INPUTS, TUNE_TRACE, tune_row
from daedalus_spark.tune.grid import TuneGrid, candidates
from daedalus_spark.tune.outputs import write_all
from daedalus_spark.tune.result import decide, tune_result
from daedalus_spark.tune.split import HOLDOUT, SELECT
from tests.conftest import ROOT

TOKEN = "tok-5be71a9c"  # a marker to look for, not a credential
Answer = Callable[[str, dict[str, list[str]]], tuple[int, str]]


@pytest.fixture
def prometheus() -> Iterator[Callable[[Answer], tuple[str, list[dict[str, Any]]]]]:
    """A server on 127.0.0.1 answering as `answer` says, every request it got recorded (path, query, headers)."""
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> tuple[str, list[dict[str, Any]]]:
        seen: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                seen.append({"path": url.path, "query": query, "headers": dict(self.headers)})
                code, body = answer(url.path, query | {"authorization": [self.headers.get("Authorization", "")]})
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET  # noqa: N815 - http.server names it

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}", seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yaml").write_text(TUNE_GRID)
    try:
        code = main(["tune", "--grid", "g.yaml", "--job-model", "local", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tune_out_replaces_a_symlink_and_never_writes_through_it(tmp_path: Path) -> None:
    """Every file tune writes under --out: a symlink with its name is replaced, the file it points to untouched."""
    config = Config()
    grid = TuneGrid.model_validate({"knobs": {"controller.cooldown_s": [60]}})
    cands = candidates(grid, config)
    rows = [tune_row(0, SELECT, 10.0), tune_row(0, HOLDOUT, 8.0), tune_row(1, SELECT, 9.0), tune_row(1, HOLDOUT, 7.0)]
    result = tune_result(decide(rows, cands, grid, config), recommended_yaml="a: 1\n", diff="+a\n", inputs=TUNE_INPUTS)
    out = tmp_path / "out"
    out.mkdir()
    names = ["tune.json", "rows.csv", "recommended.yaml", "recommended.diff", "pareto.png", "index.html"]
    victims = {}
    for name in names:
        victims[name] = tmp_path / f"precious-{name}"
        victims[name].write_text("keep me")
        (out / name).symlink_to(victims[name])
    write_all(out, result, rows)
    for name in names:
        assert victims[name].read_text() == "keep me", name
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0, name


def test_a_prometheus_echoing_the_request_never_shows_the_token(tmp_path, monkeypatch, capsys, prometheus) -> None:
    url, seen = prometheus(lambda path, q: (400, f"bad request from {q['authorization'][0]!r}; token {TOKEN} refused"))
    monkeypatch.setenv("DAEDALUS_TUNE_TOKEN", TOKEN)
    (tmp_path / "c.yaml").write_text("monitor: {scrape_interval_s: 1, bearer_token_env: DAEDALUS_TUNE_TOKEN}\n")
    code, out, err = _tune(tmp_path, monkeypatch, capsys, ["--config", "c.yaml", "--prometheus-url", url])
    assert seen and seen[-1]["headers"]["Authorization"] == f"Bearer {TOKEN}"  # it was sent, and echoed
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert TOKEN not in out + err and "***" in err, err


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        ("0d", "--since 0d: shorter than two steps of history.step_s (1 s)"),
        ("1s", "--since 1s: shorter than two steps"),
        ("100000d", "--since 100000d: more than 366 days"),
        ("367d", "--since 367d: more than 366 days"),
        ("30d", "--since 30d reaches before 1970"),
    ],
    ids=["zero", "one-second", "100000-days", "a-year-and-more", "before-1970"],
)
def test_since_that_is_empty_or_absurd_is_refused_before_any_query(
    tmp_path, monkeypatch, capsys, prometheus, since, expected
) -> None:
    url, seen = prometheus(
        lambda path, q: (200, '{"status": "success", "data": {"resultType": "matrix", "result": []}}')
    )
    (tmp_path / "c.yaml").write_text("monitor: {scrape_interval_s: 1}\n")
    grid = TUNE_GRID.replace("knobs:", "history: {step_s: 1}\nknobs:")
    (tmp_path / "g.yaml").write_text(grid)
    now = ["--now", "86400"] if since == "30d" else []
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "tune",
            "--grid",
            "g.yaml",
            "--job-model",
            "local",
            "--config",
            "c.yaml",
            "--prometheus-url",
            url,
            "--since",
            since,
            *now,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert expected in err, err
    assert seen == []


def test_history_is_bounded_by_what_prometheus_keeps(tmp_path, monkeypatch, capsys, prometheus) -> None:
    """Prometheus keeping 2 d, --since 30d: no query asks before 2 d ago, and the line says so."""
    now = 1_800_000_000.0

    def answer(path: str, q: dict[str, list[str]]) -> tuple[int, str]:
        if path.endswith("/status/runtimeinfo"):
            return 200, json.dumps({"status": "success", "data": {"storageRetention": "2d or 10GiB"}})
        return 200, '{"status": "success", "data": {"resultType": "matrix", "result": []}}'

    url, seen = prometheus(answer)
    (tmp_path / "c.yaml").write_text("monitor: {scrape_interval_s: 1}\n")
    code, _, err = _tune(
        tmp_path,
        monkeypatch,
        capsys,
        ["--config", "c.yaml", "--prometheus-url", url, "--since", "30d", "--now", f"{now:.0f}"],
    )
    starts = [float(r["query"]["start"][0]) for r in seen if r["path"].endswith("/query_range")]
    assert starts and min(starts) >= now - 2 * 86400, min(starts)
    assert len(starts) <= 20  # 2 d at 10-s steps in chunks of 10,000 points, not 30 d's
    assert code == 2 and "no samples over the last 172800 s" in err, err


def test_the_documented_tune_command_works_with_the_shipped_config(tmp_path, monkeypatch, capsys) -> None:
    """deploy/tune.yaml's command with deploy/daedalus.yaml (its rate window set for the embedded scraper): the
    history's window becomes 4 scrape intervals, said on one line; it gets as far as asking Prometheus."""
    url = f"http://127.0.0.1:{free_port()}"
    argv = ["--config", str(ROOT / "deploy" / "daedalus.yaml"), "--prometheus-url", url, "--since", "7d"]
    code, _, err = _tune(tmp_path, monkeypatch, capsys, argv)
    assert "the history's rate() uses 120 s, 4 x monitor.scrape_interval_s (30 s)" in err, err
    assert code == 2 and f"Prometheus at {url} unreachable" in err, err


def test_a_config_written_for_prometheus_with_a_short_rate_window_is_still_refused(
    tmp_path, monkeypatch, capsys
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "c.yaml").write_text(f"monitor: {{prometheus_url: '{url}', rate_window_s: 5}}\n")
    code, _, err = _tune(tmp_path, monkeypatch, capsys, ["--config", "c.yaml", "--prometheus-url", url])
    assert code == 2 and "monitor.rate_window_s (5 s) must be at least 4 × monitor.scrape_interval_s" in err, err


def test_since_with_a_trace_is_refused_not_ignored(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "t.csv").write_text(TUNE_TRACE)
    code, _, err = _tune(tmp_path, monkeypatch, capsys, ["--trace", "t.csv", "--since", "1d"])
    assert code == 2 and "--since applies to a history read from Prometheus" in err, err
