"""Probe: the reliability findings of a fresh user's tries — data lost, secrets shown, slow stops, health that lies,
hangs, tracebacks, a starved endpoint, a documented command that fails, ignored options, garbled logs, damaged
knowledge discarded, a capacity default that changes what the data means — each case classified.

    .venv/bin/python probes/reliability_probe.py [--tree DIR] [--only PREFIX] [--verbose]

`--tree` is the source tree probed (default: this one), so the same cases run against an older commit checked out
elsewhere (`git archive <commit> | tar -x -C DIR`). Each case runs in a child process with the tree first on its
path (PYTHONPATH) and a limit; the child prints its class and a detail. The cases that run the scripted job or build
tune rows take them from the probed tree's daedalus_spark/testing.py.

Classes: ok (did the right thing), clear (refused: one line naming the problem), misleading (refused, but not
naming the problem, or a good input refused), traceback, silent (went on with a wrong result), hang (no answer
within the limit, or a stop that took longer than Kubernetes's grace would allow), lost (data the user had is gone),
secret (a token in an output).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tok-5be71a9c"  # noqa: S105 - a marker to look for in outputs, not a credential
CLASSES = ("ok", "clear", "misleading", "traceback", "silent", "hang", "lost", "secret")
CASES: dict[str, Callable[[Path, Path], tuple[str, str]]] = {}
LIMITS: dict[str, float] = {}


def case(name: str, limit_s: float = 60.0) -> Callable[[Callable[[Path, Path], tuple[str, str]]], Any]:
    def register(fn: Callable[[Path, Path], tuple[str, str]]) -> Any:
        CASES[name], LIMITS[name] = fn, limit_s
        return fn

    return register


def cli(tree: Path, tmp: Path, *argv: str, timeout_s: float = 60.0, env: dict[str, str] | None = None) -> Any:
    """The command as a user runs it; None when it did not end within `timeout_s` (killed)."""
    environ = {**os.environ, "PYTHONPATH": str(tree), **(env or {})}
    try:
        return subprocess.run(
            [sys.executable, "-m", "daedalus_spark", *argv],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=environ,
        )
    except subprocess.TimeoutExpired:
        return None


def refused(done: Any, *names: str) -> tuple[str, str]:
    """Classify a command expected to refuse its input."""
    if done is None:
        return "hang", "no answer within the limit"
    err = done.stderr.strip()
    if "Traceback" in err:
        return "traceback", err.splitlines()[-1][:160]
    if done.returncode == 0:
        return "silent", "exit 0"
    lines = [line for line in err.splitlines() if line.strip()]
    if len(lines) == 1 and any(n in lines[0] for n in names):
        return "clear", lines[0][:160]
    return "misleading", " / ".join(lines)[:160]


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


GRID = (
    "split: {holdout_s: 600, window_s: 600, lead_in_s: 0, min_window_s: 300}\nknobs: {controller.cooldown_s: [120]}\n"
)


# --- 1. outputs written through a symlink -------------------------------------------------------------------------


@case("lost/tune-out-symlink")
def _tune_symlink(tree: Path, tmp: Path) -> tuple[str, str]:
    from daedalus_spark.config import Config
    from daedalus_spark.testing import tune_row
    from daedalus_spark.tune.grid import TuneGrid, candidates
    from daedalus_spark.tune.outputs import write_all
    from daedalus_spark.tune.result import decide, tune_result

    config = Config()
    grid = TuneGrid.model_validate({"knobs": {"controller.cooldown_s": [60]}})

    rows = [
        tune_row(c, p, h)
        for c, p, h in ((0, "select", 10.0), (0, "holdout", 8.0), (1, "select", 9.0), (1, "holdout", 7.0))
    ]
    inputs = {"history": "h", "job": "j", "holdout_hours": 1.0, "select_hours": 1.0, "gaps": [], "candidates": 2}
    result = tune_result(
        decide(rows, candidates(grid, config), grid, config), recommended_yaml="a: 1\n", diff="", inputs=inputs
    )
    out = tmp / "out"
    out.mkdir()
    victim = tmp / "precious.json"
    victim.write_text("keep me")
    (out / "tune.json").symlink_to(victim)
    write_all(out, result, rows)
    return ("ok", "the link replaced") if victim.read_text() == "keep me" else ("lost", "the linked file overwritten")


# --- 2. demo with a bad config -----------------------------------------------------------------------------------


@case("lost/demo-bad-config")
def _demo_bad_config(tree: Path, tmp: Path) -> tuple[str, str]:
    out = tmp / "d"
    out.mkdir()
    (out / "knowledge.sqlite").write_bytes(b"the user's store")
    (out / "decisions.jsonl").write_text('{"t": 1}\n')
    (tmp / "bad.yaml").write_text("controller: {loop_interval_s: -1}\n")
    done = cli(tree, tmp, "demo", "--out", str(out), "--config", "bad.yaml")
    if not (out / "knowledge.sqlite").exists() or not (out / "decisions.jsonl").exists():
        return "lost", "the store or the decision log deleted before the config was refused"
    return refused(done, "loop_interval_s")


@case("lost/demo-foreign-store", limit_s=30)
def _demo_foreign_store(tree: Path, tmp: Path) -> tuple[str, str]:
    from daedalus_spark.demo import live

    out = tmp / "d"
    out.mkdir()
    (out / "knowledge.sqlite").write_bytes(b"the user's store")
    stopped = RuntimeError("the demo went on to start Spark")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise stopped

    live.LocalCluster = refuse  # type: ignore[assignment,misc] # nothing is started either way
    try:
        live.run_demo(out, live.DemoPlan())
    except OSError as exc:
        kept = (out / "knowledge.sqlite").exists()
        return ("clear", str(exc)[:160]) if kept else ("lost", "deleted, then refused")
    except RuntimeError as exc:
        if exc is not stopped:
            raise
    return ("lost", "the store it did not write deleted") if not (out / "knowledge.sqlite").exists() else ("ok", "")


# --- 3. a Prometheus echoing the bearer token ---------------------------------------------------------------------


class _Echo(_Quiet):
    def do_GET(self) -> None:
        body = f"bad request: {self.headers.get('Authorization')!r}; token {TOKEN} refused".encode()
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815 - http.server names it


@case("secret/tune-echoed-token")
def _tune_secret(tree: Path, tmp: Path) -> tuple[str, str]:
    (tmp / "g.yaml").write_text(GRID)
    (tmp / "c.yaml").write_text("monitor: {scrape_interval_s: 1, bearer_token_env: PROBE_TOKEN}\n")
    with http_server(_Echo) as server:
        url = f"http://127.0.0.1:{server.server_port}"
        done = cli(
            tree, tmp, "tune", "--grid", "g.yaml", "--config", "c.yaml", "--job-model", "local",
            "--prometheus-url", url, env={"PROBE_TOKEN": TOKEN},
        )  # fmt: skip
    if done is not None and TOKEN in done.stdout + done.stderr:
        return "secret", "the token on stderr"
    return refused(done, "Prometheus")


# --- 4. SIGTERM while Prometheus trickles ------------------------------------------------------------------------


class _Trickle(_Quiet):
    def do_GET(self) -> None:
        self.server.asked = True  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()
        try:
            while not self.server.done.wait(0.05):  # type: ignore[attr-defined]
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            pass

    do_POST = do_GET  # noqa: N815 - http.server names it


@case("hang/run-sigterm-while-prometheus-trickles", limit_s=240)
def _run_sigterm(tree: Path, tmp: Path) -> tuple[str, str]:
    with http_server(_Trickle) as server:
        server.asked, server.done = False, threading.Event()  # type: ignore[attr-defined]
        (tmp / "c.yaml").write_text(
            f"controller: {{loop_interval_s: 5, knowledge_path: {tmp / 'k.sqlite'}}}\n"
            f"monitor: {{prometheus_url: 'http://127.0.0.1:{server.server_port}', scrape_interval_s: 1, "
            "timeout_s: 60}\nforecast: {background_refit: false}\n"
            f"runtime: {{decision_log: {tmp / 'd.jsonl'}, metrics_port: 0}}\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "daedalus_spark", "run", "--config", "c.yaml"],
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        try:
            deadline = time.monotonic() + 180
            while not server.asked and time.monotonic() < deadline:  # type: ignore[attr-defined]
                time.sleep(0.1)
            time.sleep(0.5)
            stopped = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                output, _ = proc.communicate(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                return "hang", "still running 40 s after SIGTERM (Kubernetes would SIGKILL it at 30 s)"
            took = time.monotonic() - stopped
        finally:
            server.done.set()  # type: ignore[attr-defined]
            if proc.poll() is None:
                proc.kill()
    if took > 25:
        return "hang", f"stopped {took:.0f} s after SIGTERM"
    if "knowledge in" not in output:
        return "silent", f"stopped in {took:.1f} s without saying where the knowledge is"
    return "ok", f"stopped in {took:.1f} s, said where the knowledge is"


# --- 5. /healthz while every tick fails to save ------------------------------------------------------------------


@case("silent/healthz-with-a-locked-store")
def _healthz_locked(tree: Path, tmp: Path) -> tuple[str, str]:
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.runtime.wiring import assemble_sidecar
    from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

    config = parse_config(
        {
            "controller": {"loop_interval_s": 5, "knowledge_path": str(tmp / "k.sqlite"), "max_rescales_per_hour": 0},
            "forecast": {"background_refit": False},
            "runtime": {"decision_log": str(tmp / "d.jsonl"), "metrics_port": 0},
        }
    )
    car = assemble_sidecar(config, ScriptedMonitor(), ScriptedActuator(), clock=FakeClock(1_700_000_000.0))
    car.store.busy_timeout_s = 0.05
    holder = sqlite3.connect(tmp / "k.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    for _ in range(2):
        car.clock.advance(5)  # type: ignore[attr-defined]
        car.step()
    healthy, details = car.health()
    holder.close()
    car.close()
    if healthy:
        return "silent", f"200 ok with {details['failing_ticks']} ticks unsaved"
    return "ok", f"503 {details['status']}"


# --- 6, 8a. tune --since ---------------------------------------------------------------------------------------


class _EmptyPrometheus(_Quiet):
    def do_GET(self) -> None:
        self.server.requests += 1  # type: ignore[attr-defined]
        body = b'{"status": "success", "data": {"resultType": "matrix", "result": []}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815 - http.server names it


def _tune_since(tree: Path, tmp: Path, since: str, names: tuple[str, ...]) -> tuple[str, str]:
    (tmp / "g.yaml").write_text(GRID)
    (tmp / "c.yaml").write_text("monitor: {scrape_interval_s: 1}\n")
    with http_server(_EmptyPrometheus) as server:
        server.requests = 0  # type: ignore[attr-defined]
        url = f"http://127.0.0.1:{server.server_port}"
        done = cli(
            tree, tmp, "tune", "--grid", "g.yaml", "--config", "c.yaml", "--job-model", "local",
            "--prometheus-url", url, "--since", since, timeout_s=30,
        )  # fmt: skip
        asked = server.requests  # type: ignore[attr-defined]
    if done is None:
        return "hang", f"{asked} range queries in 30 s, nothing printed"
    verdict = refused(done, *names)
    return verdict[0], f"{verdict[1]} ({asked} queries)"


@case("hang/tune-since-100000d", limit_s=60)
def _since_huge(tree: Path, tmp: Path) -> tuple[str, str]:
    return _tune_since(tree, tmp, "100000d", ("--since",))


@case("traceback/tune-since-0d", limit_s=60)
def _since_zero(tree: Path, tmp: Path) -> tuple[str, str]:
    return _tune_since(tree, tmp, "0d", ("--since",))


# --- 7. a named pipe as the token file ---------------------------------------------------------------------------


def _pipe_config(tmp: Path) -> None:
    os.mkfifo(tmp / "pipe")
    (tmp / "c.yaml").write_text(
        "monitor: {prometheus_url: 'http://127.0.0.1:9', scrape_interval_s: 1, bearer_token_file: pipe}\n"
    )


@case("silent/validate-config-named-pipe-token")
def _validate_pipe(tree: Path, tmp: Path) -> tuple[str, str]:
    _pipe_config(tmp)
    return refused(cli(tree, tmp, "validate-config", "c.yaml", timeout_s=30), "named pipe", "bearer_token_file")


@case("hang/run-named-pipe-token", limit_s=90)
def _run_pipe(tree: Path, tmp: Path) -> tuple[str, str]:
    _pipe_config(tmp)
    return refused(cli(tree, tmp, "run", "--config", "c.yaml", timeout_s=60), "named pipe", "bearer_token_file")


# --- 8b, 13. damaged stored history ------------------------------------------------------------------------------


def _store_with_history(tmp: Path) -> Path:
    from daedalus_spark.config import Config
    from daedalus_spark.domain import CapacityTable
    from daedalus_spark.knowledge.history import ForecastRecord
    from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
    from daedalus_spark.knowledge.state import Knowledge, snapshot

    k = Knowledge.fresh(Config())
    k.history.latest_table = CapacityTable(4, 4000.0, (1100.0, 2100.0, 3000.0, 4000.0), frozenset({2, 4}), ())
    for i in range(3):
        t = 1e9 + 60 * i
        k.history.add_forecast(ForecastRecord(t, "arima", (1, 0, 0), 1, 0.1, t, 60.0, (1.0, 2.0), (2.0, 3.0), ()))
    path = tmp / "k.sqlite"
    SqliteKnowledgeStore(path).save(snapshot(k))
    return path


def _damage_history(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    with sqlite3.connect(path) as conn:
        state = json.loads(conn.execute("SELECT json FROM component WHERE name = 'history'").fetchone()[0])
        change(state)
        conn.execute("UPDATE component SET json = ? WHERE name = 'history'", (json.dumps(state),))


@case("traceback/report-capacity-not-a-number")
def _report_nan(tree: Path, tmp: Path) -> tuple[str, str]:
    path = _store_with_history(tmp)
    _damage_history(path, lambda s: s["latest_table"].__setitem__("current_per_s", float("nan")))
    done = cli(tree, tmp, "report", "--knowledge", str(path))
    if done is None or "Traceback" in done.stderr:
        return refused(done)
    named = "current_per_s" in done.stdout and str(path) in done.stdout
    return ("ok", "left out, named with its file") if named else ("silent", "not named, or without the file")


@case("silent/report-one-bad-forecast")
def _report_bad_forecast(tree: Path, tmp: Path) -> tuple[str, str]:
    path = _store_with_history(tmp)
    _damage_history(path, lambda s: s["forecasts"][1].__setitem__("time_s", "soon"))
    done = cli(tree, tmp, "report", "--knowledge", str(path), "--json")
    if done is None or done.returncode != 0:
        return refused(done)
    r = json.loads(done.stdout)
    if r.get("capacity") is None:
        return "silent", "one damaged forecast discarded the whole history (the capacity table too)"
    named = any("forecasts[1]" in d and str(path) in d for d in r.get("damage", []))
    return ("ok", "the record left out and named") if named else ("misleading", " / ".join(r.get("damage", []))[:160])


# --- 9. the agent's endpoint -------------------------------------------------------------------------------------


@contextmanager
def _agent() -> Iterator[tuple[int, list[int]]]:
    from prometheus_client import CollectorRegistry

    from daedalus_spark.agent.server import Routes, serve

    applied: list[int] = []
    routes = Routes(
        CollectorRegistry(), lambda: {"current": 1}, lambda t: applied.append(t) or {"target": t}, 1, 8, None
    )
    server = serve(routes, "127.0.0.1", 0)  # the shipped bounds
    try:
        yield server.server_port, applied
    finally:
        server.shutdown()
        server.server_close()


def _reply(sock: socket.socket) -> int:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return int(data.split(b" ")[1])


def _put(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b'PUT /executors HTTP/1.0\r\nContent-Length: 13\r\n\r\n{"target": 2}')
        return _reply(sock)


@case("silent/agent-starved-by-tricklers", limit_s=120)
def _agent_tricklers(tree: Path, tmp: Path) -> tuple[str, str]:
    with _agent() as (port, _):
        stop = threading.Event()
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(16)]

        def trickle(s: socket.socket) -> None:
            for byte in b"PUT /executors HTTP/1.1\r\n":
                try:
                    s.send(bytes([byte]))
                except OSError:
                    return
                if stop.wait(1.0):
                    return

        for s in socks:
            threading.Thread(target=trickle, args=(s,), daemon=True).start()
        time.sleep(1.0)
        codes = [_put(port) for _ in range(3)]
        stop.set()
        for s in socks:
            s.close()
    return ("ok", f"PUTs {codes}") if codes == [200] * 3 else ("silent", f"the controller's PUTs got {codes}")


@case("silent/agent-400-simultaneous", limit_s=120)
def _agent_burst(tree: Path, tmp: Path) -> tuple[str, str]:
    from concurrent.futures import ThreadPoolExecutor

    with _agent() as (port, _):

        def get(_: int) -> int:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                    s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                    return _reply(s)
            except (OSError, IndexError, ValueError):
                return 0

        with ThreadPoolExecutor(max_workers=100) as pool:
            codes = list(pool.map(get, range(400)))
    lost = codes.count(0)
    return ("silent", f"{lost} of 400 without an HTTP answer") if lost else ("ok", f"{codes.count(200)} x 200")


@case("traceback/agent-slow-client-log", limit_s=120)
def _agent_traceback(tree: Path, tmp: Path) -> tuple[str, str]:
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err), _agent() as (port, _):
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"PUT /executors HTTP/1.1\r\nContent-Length: 20\r\n\r\n{")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        time.sleep(1.0)
        _put(port)
    return ("traceback", "tracebacks in the agent's log") if "Traceback" in err.getvalue() else ("ok", "quiet")


# --- 10. the documented tune command ------------------------------------------------------------------------------


@case("misleading/tune-documented-command")
def _tune_documented(tree: Path, tmp: Path) -> tuple[str, str]:
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{port.getsockname()[1]}"
    port.close()
    deploy = tree / "deploy"
    done = cli(
        tree, tmp, "tune", "--config", str(deploy / "daedalus.yaml"), "--grid", str(deploy / "tune.yaml"),
        "--job-model", "local", "--prometheus-url", url, "--since", "7d",
    )  # fmt: skip
    if done is not None and "rate_window_s" in done.stderr and "must be at least" in done.stderr:
        return "misleading", "the documented command refused with the shipped config"
    if done is not None and "unreachable" in done.stderr:
        return "ok", "got as far as asking Prometheus"
    return refused(done, "Prometheus")


# --- 11. ignored demo options -------------------------------------------------------------------------------------


@case("silent/demo-simulated-autoscaler", limit_s=90)
def _demo_simulated(tree: Path, tmp: Path) -> tuple[str, str]:
    done = cli(tree, tmp, "demo", "--simulated", "--autoscaler", "spark-da", "--out", "o", timeout_s=10)
    if done is None:
        return "silent", "ran the simulation, --autoscaler ignored"
    return refused(done, "--autoscaler")


@case("silent/demo-negative-duration")
def _demo_duration(tree: Path, tmp: Path) -> tuple[str, str]:
    from daedalus_spark.cli import build_parser

    try:
        args = build_parser().parse_args(["demo", "--duration", "-5"])
    except SystemExit:
        return "clear", "refused by the parser"
    return "silent", f"--duration {args.duration} accepted"


# --- 12. redaction by value ---------------------------------------------------------------------------------------


@case("silent/redaction-token-0")
def _redaction(tree: Path, tmp: Path) -> tuple[str, str]:
    from daedalus_spark.redact import bearer_token, redact

    bearer_token("0", "probe")
    line = "tick 10 took 0.50 s, 0 rescales"
    shown = redact(line)
    if shown != line:
        return "silent", f"log garbled: {shown!r}"
    return (
        ("ok", "fields masked")
        if redact("Authorization: Bearer 0") == "Authorization: Bearer ***"
        else (
            "secret",
            "the header's token shown",
        )
    )


# --- the capacity window default ----------------------------------------------------------------------------------


@case("silent/capacity-aligned-1s-default")
def _capacity_default(tree: Path, tmp: Path) -> tuple[str, str]:
    import numpy as np

    rng = np.random.default_rng(7)
    t = np.arange(1800)
    load = 0.5 + 0.3 * np.sin(2 * np.pi * t / 600)
    cols: dict[str, dict[str, Any]] = {"u": {}, "t": {}}
    for name in ("e1", "e2"):
        u = load + rng.normal(0, 0.005, t.size)
        cols["u"][name], cols["t"][name] = u, (500 + 33_000 * u) * (1 + rng.normal(0, 0.02, t.size))
    for kind, c in cols.items():
        rows = "\n".join(f"{i},{c['e1'][i]:.6f},{c['e2'][i]:.6f}" for i in t)
        (tmp / f"{kind}.csv").write_text("time,e1,e2\n" + rows + "\n")
    done = cli(tree, tmp, "capacity", "--utilization", "u.csv", "--throughput", "t.csv", "--json")
    if done is None or done.returncode != 0:
        return refused(done)
    error = json.loads(done.stdout)["total_capacity"] / 67_000 - 1
    said = [line for line in done.stderr.splitlines() if "assumed" in line]
    if abs(error) > 0.02:
        return "silent", f"{error:+.1%} against the true capacity, by default"
    return ("ok", f"{error:+.1%}; said: {said[0][:80]}") if said else ("silent", f"{error:+.1%}, assumption unsaid")


def child(name: str, tree: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="probe-") as d:
        try:
            verdict = CASES[name](tree, Path(d))
        except Exception as exc:  # noqa: BLE001 - what escaped the code under test
            verdict = ("traceback", f"{type(exc).__name__}: {exc}"[:160])
    print(json.dumps(verdict))


def run_case(name: str, tree: Path) -> tuple[str, str]:
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", name, "--tree", str(tree)],
            capture_output=True,
            text=True,
            timeout=LIMITS[name],
            env={**os.environ, "PYTHONPATH": str(tree)},  # the tree probed comes before the installed package
        )
    except subprocess.TimeoutExpired:
        return "hang", f"no verdict within {LIMITS[name]:g} s"
    try:
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
        return str(verdict[0]), str(verdict[1])
    except (IndexError, ValueError):
        return "traceback", (done.stderr.strip().splitlines() or ["no output"])[-1][:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree probed (default: this one)")
    parser.add_argument("--only", default="", help="run only cases whose id starts with this")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.child:
        child(args.child, tree)
        return 0
    counts: Counter[str] = Counter()
    for name in (n for n in CASES if n.startswith(args.only)):
        result, detail = run_case(name, tree)
        counts[result] += 1
        print(f"{result:10} {name:46} {detail if args.verbose or result != 'ok' else ''}", flush=True)
    print(f"\n{sum(counts.values())} cases: " + ", ".join(f"{counts[k]} {k}" for k in CLASSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
