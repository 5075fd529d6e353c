"""Probe: bad input against every command, the sidecar's HTTP endpoint and the stored fields, each outcome classified.

Run before and after a fix; the counts go to docs/hardening.md:

    .venv/bin/python benchmarks/bad_input_probe.py [--only PREFIX] [--verbose]

Classes: ok (good input did the right thing), clear (refused: exit 2, one line naming the problem), misleading
(refused, but the line does not name the problem, or a good input refused), traceback, silent (exit 0 or went on
with a wrong result, or a secret in any output), hang (no answer within the case's limit).
Commands run as subprocesses (`run` must start and be stopped); stored fields and the runtime run in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SECRET = "s3cr3t-Tok3n"  # noqa: S105 - a marker to look for in outputs, not a credential
PASSWORD = "hunter2pw"  # noqa: S105 - the same
CLASSES = ("ok", "clear", "misleading", "traceback", "silent", "hang")


@dataclass
class Outcome:
    code: int | None  # None: hang
    out: str
    err: str
    note: str = ""


@dataclass
class Case:
    id: str
    run: Callable[[Path], Outcome]
    expect: str  # "refuse", "accept", or "either" (a clear refusal, or exit 0 and `check` passes)
    names: tuple[str, ...] = ()  # a refusal must mention one of these
    check: Callable[[Outcome], str] | None = None  # for accepted input: '' when right, else what is wrong
    secrets: tuple[str, ...] = (SECRET, PASSWORD)
    result: str = ""
    detail: str = ""


def classify(case: Case, o: Outcome) -> tuple[str, str]:
    text = o.out + o.err
    if o.code is None:
        return "hang", o.note
    if "Traceback" in text:
        return "traceback", text.strip().splitlines()[-1][:160]
    leaked = [s for s in case.secrets if s in text]
    if leaked:
        return "silent", f"secret in output: {leaked[0]}"
    if case.expect == "either" and o.code == 0:  # damage: refused clearly, or gone on without it and said so
        problem = case.check(o) if case.check else ""
        return ("silent", problem) if problem else ("ok", o.note)
    if case.expect in ("refuse", "either"):
        if o.code == 0:
            return "silent", (o.note or "exit 0: " + o.out.strip()[:100])
        lines = [line for line in o.err.strip().splitlines() if line.strip()]
        one_line = len(lines) == 1 or (o.note and len(lines) <= 1)
        named = any(n.lower() in (o.err + o.note).lower() for n in case.names)
        if one_line and named:
            return "clear", (lines[0] if lines else o.note)[:200]
        return "misleading", ((lines[0] if lines else o.note) or f"exit {o.code}")[:200]
    if o.code != 0:
        return "misleading", f"good input refused: {o.err.strip()[:160]}"
    problem = case.check(o) if case.check else ""
    return ("silent", problem) if problem else ("ok", o.note)


# ---- commands (subprocesses) ----

PY = sys.executable
# The console script's module (`python -m daedalus_spark`); a checkout from before it existed runs the CLI module.
CLI = "daedalus_spark" if (ROOT / "daedalus_spark" / "__main__.py").exists() else "daedalus_spark.cli"


def cli(*argv: str, timeout_s: float = 60.0, cwd: Path | None = None, env: dict[str, str] | None = None) -> Outcome:
    try:
        p = subprocess.run(
            [PY, "-m", CLI, *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=cwd or ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
    except subprocess.TimeoutExpired:
        return Outcome(None, "", "", f"no answer in {timeout_s:g} s")
    return Outcome(p.returncode, p.stdout, p.stderr)


def write_config(tmp: Path, data: dict, name: str = "c.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data))
    return path


def base(tmp: Path, **sections: dict) -> dict:
    data = {
        "controller": {"loop_interval_s": 5, "knowledge_path": str(tmp / "k.sqlite")},
        "runtime": {"decision_log": str(tmp / "d.jsonl"), "metrics_port": 0},
        "forecast": {"background_refit": False},
    }
    for section, values in sections.items():
        data[section] = {**data.get(section, {}), **values}
    return data


def validate(**sections: dict) -> Callable[[Path], Outcome]:
    return lambda tmp: cli("validate-config", str(write_config(tmp, base(tmp, **sections))))


def validate_text(text: str) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        path = tmp / "c.yaml"
        path.write_text(text)
        return cli("validate-config", str(path))

    return run


def sidecar(
    prepare: Callable[[Path], dict] | None = None,
    *,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    life_s: float = 20.0,
    interrupt_after_s: float | None = None,
) -> Callable[[Path], Outcome]:
    """`run` as a subprocess: refused at start (exits by itself), or started (stopped with SIGTERM after life_s)."""

    def run(tmp: Path) -> Outcome:
        data = prepare(tmp) if prepare else base(tmp)
        config = write_config(tmp, data)
        p = subprocess.Popen(
            [PY, "-m", CLI, "run", "--config", str(config), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
        note = ""
        try:
            if interrupt_after_s is not None:
                time.sleep(interrupt_after_s)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=30)
                return Outcome(0 if p.returncode in (0, 130, -2, 2) else p.returncode, out, err, "interrupted")
            out, err = p.communicate(timeout=life_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                return Outcome(None, out, err, "did not stop on SIGTERM")
            note = "started and ran until stopped"
            return Outcome(0, out, err, note)
        return Outcome(p.returncode, out, err, note)

    return run


def report(prepare: Callable[[Path], list[str]], timeout_s: float = 60.0) -> Callable[[Path], Outcome]:
    return lambda tmp: cli("report", *prepare(tmp), timeout_s=timeout_s)


# ---- stored fields ----


def saved_store(tmp: Path) -> Path:
    """A store as a controller leaves it after three ticks, one of them a rescale (built in-process)."""
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.controller import Controller
    from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
    from daedalus_spark.loop import Loop
    from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

    path = tmp / "k.sqlite"
    config = parse_config(base(tmp))
    store = SqliteKnowledgeStore(path)
    clock = FakeClock(1_700_000_000.0)
    loop = Loop(Controller(config), ScriptedMonitor(), ScriptedActuator(), store, clock)
    for _ in range(3):
        loop.step()
        clock.advance(5)
    return path


def damaged(sql: str, *params: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            conn.execute(sql, params)
        return path

    return make


def decision_field(key: str, value: object) -> Callable[[Path], Path]:
    """Every stored decision's `key` set to `value`."""

    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            for seq, text in conn.execute("SELECT seq, json FROM decision").fetchall():
                raw = json.loads(text)
                raw[key] = value
                conn.execute("UPDATE decision SET json = ? WHERE seq = ?", (json.dumps(raw), seq))
        return path

    return make


def component_field(component: str, key: str, value: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            raw = json.loads(conn.execute("SELECT json FROM component WHERE name = ?", (component,)).fetchone()[0])
            raw[key] = value
            conn.execute("UPDATE component SET json = ? WHERE name = ?", (json.dumps(raw), component))
        return path

    return make


def add_recovery(record: dict) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = saved_store(tmp)
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO recovery (key, time_s, json) VALUES (?, ?, ?)",
                (os.urandom(16), 0.0, json.dumps(record)),
            )
        return path

    return make


def report_on(make: Callable[[Path], Path], *extra: str) -> Callable[[Path], Outcome]:
    return lambda tmp: cli("report", "--knowledge", str(make(tmp)), *extra)


def resume_then_tick(make: Callable[[Path], Path], ticks: int = 2) -> Callable[[Path], Outcome]:
    """The sidecar resumed from a damaged store, ticking against the scripted job (in-process, fake clock):
    refused at start with one line, or ticks that decide (a tick that raises counts as a traceback)."""

    def run(tmp: Path) -> Outcome:
        from daedalus_spark.clock import FakeClock
        from daedalus_spark.config import parse_config
        from daedalus_spark.runtime.wiring import assemble_sidecar
        from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

        make(tmp)
        config = parse_config(base(tmp, controller={"cooldown_s": 60}))
        clock = FakeClock(1_700_000_100.0)
        err = io.StringIO()
        with _captured_logs(err):
            try:
                car = assemble_sidecar(config, ScriptedMonitor(workload_per_s=6000), ScriptedActuator(), clock=clock)
            except Exception as exc:  # noqa: BLE001 - what cli.main would print, if it is one of its errors
                return _as_cli_error(exc, err.getvalue())
            reasons = []
            for _ in range(ticks):
                clock.advance(600)
                result = car.step()
                reasons.append("raised" if result is None else result.decision.reason.value)
            car.close()
        if "raised" in reasons:
            return Outcome(1, "", err.getvalue() + "\nTraceback (tick raised)", "")
        return Outcome(0, " ".join(reasons), err.getvalue())

    return run


@contextlib.contextmanager
def _captured_logs(stream: io.StringIO):
    import logging

    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _as_cli_error(exc: Exception, logged: str) -> Outcome:
    from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
    from daedalus_spark.knowledge.state import IncompatibleKnowledge

    if isinstance(exc, (IncompatibleKnowledge, KnowledgeStoreError)):
        return Outcome(2, "", logged + f"daedalus-spark: error: {exc}\n")
    return Outcome(1, "", logged + f"Traceback: {type(exc).__name__}: {exc}")


def mentions(*words: str) -> Callable[[Outcome], str]:
    """For damage gone on without: the output must say what was left out."""

    def check(o: Outcome) -> str:
        text = (o.out + o.err).lower()
        return "" if all(w.lower() in text for w in words) else f"went on without saying {words[0]!r} was damaged"

    return check


def not_holding_cooldown(o: Outcome) -> str:
    return "" if "cooldown" not in o.out and "recent" not in o.out else f"still held: {o.out}"


# ---- the runtime, in-process ----


def store_fails_mid_run(how: str) -> Callable[[Path], Outcome]:
    """A tick whose store cannot be written: did it actuate without a record?"""

    def run(tmp: Path) -> Outcome:
        from daedalus_spark.clock import FakeClock
        from daedalus_spark.config import parse_config
        from daedalus_spark.runtime.wiring import assemble_sidecar
        from daedalus_spark.testing import ScriptedActuator, ScriptedMonitor

        config = parse_config(base(tmp))
        actuator = ScriptedActuator()
        clock = FakeClock(1_700_000_000.0)
        err = io.StringIO()
        with _captured_logs(err):
            car = assemble_sidecar(config, ScriptedMonitor(), actuator, clock=clock)
            holder = None
            if how == "locked":
                car.store.busy_timeout_s = 0.2
                car.store.save(_empty_snapshot())
                holder = sqlite3.connect(tmp / "k.sqlite", isolation_level=None)
                holder.execute("BEGIN EXCLUSIVE")
            elif how == "directory":
                (tmp / "k.sqlite").unlink(missing_ok=True)
                (tmp / "k.sqlite").mkdir()
            elif how == "gone":
                car.store.path = tmp / "missing" / "k.sqlite"
            result = car.step()
            sent_while_broken = list(actuator.requested)
            for _ in range(5):  # still broken: /healthz must say so
                clock.advance(5)
                car.step()
            healthy_after, details = car.health()
            if holder is not None:
                holder.close()
            car.close()
        logged = (tmp / "d.jsonl").read_text() if (tmp / "d.jsonl").exists() else ""
        text = err.getvalue()
        if sent_while_broken and not logged:
            return Outcome(0, "", text, f"actuated {sent_while_broken} with no decision-log line")
        if sent_while_broken:
            return Outcome(0, "", text, f"actuated {sent_while_broken} although the store could not be written")
        if healthy_after:
            return Outcome(0, "", "", f"/healthz still ok after 6 failed ticks: {details}")
        said = result is not None and "not" in (
            (result.actuation.detail if result.actuation else "") + str(result.decision.evidence.fields())
        )
        return Outcome(2, "", "", "not actuated, said so; unhealthy after repeated failures" if said else "quiet")

    return run


def _empty_snapshot():
    from daedalus_spark.knowledge.state import FORMAT_VERSION, Snapshot

    return Snapshot(FORMAT_VERSION, {}, b"", (), ())


def health_under_slow_clients(clients: int) -> Callable[[Path], Outcome]:
    """`clients` connections that send half a request and stall; then /healthz, as the kubelet asks it."""

    def run(tmp: Path) -> Outcome:
        from prometheus_client import CollectorRegistry

        from daedalus_spark.runtime.health import serve_health

        server = serve_health(CollectorRegistry(), lambda: (True, {"status": "ok"}), "127.0.0.1", 0)
        port = server.server_port
        stalled = []
        try:
            for _ in range(clients):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET /metr")
                stalled.append(s)
            time.sleep(0.3)
            status = _get_status(port, "/healthz")
        finally:
            for s in stalled:
                s.close()
            server.shutdown()
            server.server_close()
        if status == 200:
            return Outcome(0, "200", "")
        return Outcome(0, "", "", f"/healthz answered {status} with {clients} stalled clients (a liveness failure)")

    return run


def answered_200(o: Outcome) -> str:
    return "" if o.out == "200" else o.note


def _get_status(port: int, path: str) -> int | str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = s.recv(64)
        return int(data.split()[1])
    except (OSError, IndexError, ValueError) as exc:
        return f"no answer ({type(exc).__name__})"


def http_request(raw: bytes, want: tuple[int, ...]) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        from prometheus_client import CollectorRegistry

        from daedalus_spark.runtime.health import serve_health

        server = serve_health(CollectorRegistry(), lambda: (True, {"status": "ok"}), "127.0.0.1", 0)
        try:
            with socket.create_connection(("127.0.0.1", server.server_port), timeout=15) as s:
                s.sendall(raw)
                s.shutdown(socket.SHUT_WR)
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
        except OSError as exc:
            return Outcome(None, "", "", f"{type(exc).__name__}")
        finally:
            server.shutdown()
            server.server_close()
        try:
            status = int(data.split()[1])
        except (IndexError, ValueError):
            return Outcome(1, "", "", f"no status line: {data[:60]!r}")
        if status in want:
            return Outcome(0 if status < 400 else 2, "", "", f"HTTP {status}")
        return Outcome(0, "", "", f"HTTP {status}, expected {want}")

    return run


class _Target(BaseHTTPRequestHandler):
    """A scrape target that misbehaves as `server.mode` says."""

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        mode = self.server.mode  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if mode == "huge":
            line = b"# HELP x y\n" + b"#" * 65535 + b"\n"
            try:
                for _ in range(64 * 1024 * 1024 // len(line)):
                    self.wfile.write(line)
            except OSError:
                pass
        elif mode == "trickle":
            try:
                for _ in range(60):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass


def scrape_target(mode: str) -> Callable[[Path], Outcome]:
    """One scrape of a target that sends 64 MB, or one byte every 0.5 s for 30 s, against timeout_s 2."""

    def run(tmp: Path) -> Outcome:
        from daedalus_spark.config import parse_config
        from daedalus_spark.monitor.port import MonitorError
        from daedalus_spark.monitor.scrape import http_fetch

        server = ThreadingHTTPServer(("127.0.0.1", 0), _Target)
        server.daemon_threads = True
        server.mode = mode  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        config = parse_config({"monitor": {"timeout_s": 2}})
        started = time.monotonic()
        try:
            body = http_fetch(url, config.monitor.timeout_s)
            outcome = Outcome(0, "", "", f"read {len(body) / 1e6:.0f} MB in {time.monotonic() - started:.1f} s")
        except MonitorError as exc:
            took = time.monotonic() - started
            outcome = Outcome(2, "", "", f"{exc} ({took:.1f} s)") if took < 2 * 2 + 1 else Outcome(0, "", "", str(exc))
        finally:
            server.shutdown()
            server.server_close()
        return outcome

    return run


def token_with_newline(tmp: Path) -> Outcome:
    """The agent's token from a file (trailing newline): the actuation's record must not carry the token."""
    from daedalus_spark.config import parse_config
    from daedalus_spark.runtime.wiring import make_actuator

    config = parse_config({"actuator": {"agent_url": "http://127.0.0.1:1", "retries": 1, "confirm_timeout_s": 0}})
    try:
        actuator = make_actuator(config, dry_run=False, environ={"DAEDALUS_AGENT_TOKEN": SECRET + "\n"})
    except ValueError as exc:
        return Outcome(2, "", f"daedalus-spark: error: {exc}\n")
    actuation = actuator.apply(3)
    return Outcome(0, actuation.detail, "", f"{actuation.outcome.value}: {actuation.detail[:120]}")


def token_check(o: Outcome) -> str:
    return "" if "Invalid header" not in o.out else "the token's newline broke every actuation"


def dry_run_count(tmp: Path) -> Outcome:
    """--dry-run against a job with 4 executors: what the decision log says the job has."""
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.runtime.wiring import assemble_sidecar, make_actuator
    from daedalus_spark.testing import ScriptedMonitor

    config = parse_config(base(tmp))
    actuator = make_actuator(config, dry_run=True, environ={})
    car = assemble_sidecar(config, ScriptedMonitor(scaleout=4), actuator, clock=FakeClock(1_700_000_000.0))
    car.step()
    car.close()
    line = json.loads((tmp / "d.jsonl").read_text().splitlines()[0])
    live = (line.get("actuation") or {}).get("live")
    return Outcome(0, json.dumps(line.get("actuation")), "", f"current {line['current']}, actuation live {live}")


def dry_run_check(o: Outcome) -> str:
    live = (json.loads(o.out) or {}).get("live")
    return "" if live in (4, None) else f"dry run reports {live} live executors; the job has 4"


def secret_in_records(tmp: Path) -> Outcome:
    """An actuation that fails with the password of a URL and the token in its detail: log, decision log, store."""
    from daedalus_spark.clock import FakeClock
    from daedalus_spark.config import parse_config
    from daedalus_spark.execute.port import Actuation
    from daedalus_spark.execute.port import Outcome as Result
    from daedalus_spark.runtime.wiring import assemble_sidecar
    from daedalus_spark.testing import ScriptedMonitor

    class Leaky:
        def current(self) -> int:
            return 4

        def apply(self, target: int) -> Actuation:
            return Actuation(
                target,
                Result.FAILED,
                f"http://admin:{PASSWORD}@agent:9095/executors: header 'Authorization: Bearer {SECRET}' refused",
            )

    config = parse_config(base(tmp))
    err = io.StringIO()
    with _captured_logs(err):
        car = assemble_sidecar(config, ScriptedMonitor(), Leaky(), clock=FakeClock(1_700_000_000.0))
        car.step()
        car.close()
    stored = b"".join(
        row[0].encode() for row in sqlite3.connect(tmp / "k.sqlite").execute("SELECT json FROM decision")
    ).decode()
    shown = cli("report", "--knowledge", str(tmp / "k.sqlite"))
    return Outcome(0, (tmp / "d.jsonl").read_text() + stored + shown.out, err.getvalue() + shown.err)


def forecast_scale(tmp: Path) -> Outcome:
    """The bundled WordCount trace ×1 and ×1e6 (whole numbers both): accuracy must not depend on the scale alone."""
    source = ROOT / "workloads" / "traces" / "wordcount_sine_40000_6h.csv"
    lines = source.read_text().splitlines()[1:]
    scores = []
    for factor in (1, 1_000_000):
        path = tmp / f"trace{factor}.txt"
        path.write_text("".join(f"{s}|{int(c) * factor}\n" for s, c in (line.split("|") for line in lines)))
        o = cli("forecast", "evaluate", "--trace", str(path), "--json", timeout_s=1800)
        if o.code != 0:
            return o
        scores.append(json.loads(o.out)["wape_median"])
    return Outcome(0, json.dumps(scores), "", f"p50 WAPE ×1 {scores[0]:.2%}, ×1e6 {scores[1]:.2%}")


def forecast_scale_check(o: Outcome) -> str:
    a, b = json.loads(o.out)
    # Not bit-identical: the optimizer meets numbers that differ in their last bits. A tenth apart is the same.
    return "" if abs(a - b) <= 0.1 * max(a, b) else f"p50 WAPE {a:.2%} at ×1 but {b:.2%} at ×1e6"


def csv_pair(header: str) -> Callable[[Path], Outcome]:
    def run(tmp: Path) -> Outcome:
        rows = "".join(f"{i},0.{i % 9 + 1},0.{(i + 3) % 9 + 1}\n" for i in range(30))
        (tmp / "u.csv").write_text(header + "\n" + rows)
        rows = "".join(f"{i},{100 * (i % 9 + 1)},{100 * ((i + 3) % 9 + 1)}\n" for i in range(30))
        (tmp / "t.csv").write_text(header + "\n" + rows)
        return cli("capacity", "--utilization", str(tmp / "u.csv"), "--throughput", str(tmp / "t.csv"))

    return run


def symlink_out(tmp: Path) -> Outcome:
    make = saved_store(tmp)
    out = tmp / "out"
    out.mkdir()
    victim = tmp / "victim.txt"
    victim.write_text("precious\n")
    (out / "index.html").symlink_to(victim)
    o = cli("report", "--knowledge", str(make), "--out", str(out))
    if victim.read_text() != "precious\n":
        return Outcome(0, o.out, o.err, "report --out wrote through a symlink into victim.txt")
    return o


def decision_log_into(name: str, content: str) -> Callable[[Path], Outcome]:
    def prepare(tmp: Path) -> dict:
        (tmp / name).write_text(content)
        return base(tmp, runtime={"decision_log": str(tmp / name)})

    run = sidecar(prepare)

    def guarded(tmp: Path) -> Outcome:
        o = run(tmp)
        if o.code == 0 and (tmp / name).read_text() != content:
            o.note = f"appended decision lines to {name}"
        return o

    return guarded


RECOVERY_OF_STRINGS = {
    "rescale_time_s": "a",
    "direction": 3,
    "from_scaleout": "x",
    "to_scaleout": None,
    "recovery_s": "long",
    "predicted_downtime_s": 1,
}
DAMAGE = [  # (id, how the store is damaged, what a clear message names)
    ("decision-time-string", decision_field("time_s", "soon"), ("time_s",)),
    ("decision-time-null", decision_field("time_s", None), ("time_s",)),
    ("decision-time-future", decision_field("time_s", 4e9), ("future",)),
    ("decision-reason-unknown", decision_field("reason", "vibes"), ("reason",)),
    ("decision-scaleout-string", decision_field("target_scaleout", "7"), ("target_scaleout",)),
    ("decision-scaleout-huge", decision_field("target_scaleout", 1e300), ("target_scaleout",)),
    ("decision-evidence-list", decision_field("evidence", [1, 2]), ("evidence",)),
    ("decision-not-json", damaged("UPDATE decision SET json = '{not json'"), ("decision",)),
    ("recovery-strings", add_recovery(RECOVERY_OF_STRINGS), ("recovery",)),
    ("recovery-missing-keys", add_recovery({"rescale_time_s": 1.0}), ("recovery",)),
]


def cases() -> list[Case]:
    refuse, accept = "refuse", "accept"
    nul = "k\x00.sqlite"
    c: list[Case] = [
        # -- configs that validate but cannot run --
        Case("config/nul-knowledge-path", validate(controller={"knowledge_path": nul}), refuse, ("knowledge_path",)),
        Case("config/nul-decision-log", validate(runtime={"decision_log": "d\x00.jsonl"}), refuse, ("decision_log",)),
        Case("config/nul-ca-file", validate(monitor={"ca_file": "ca\x00.pem"}), refuse, ("ca_file",)),
        Case(
            "config/step-longer-than-loop",
            validate(monitor={"step_s": 30}, controller={"loop_interval_s": 10}),
            refuse,
            ("step_s",),
        ),
        Case(
            "config/promql-unbalanced",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_lag": "sum(rate(x[5m]"}
            ),
            refuse,
            ("query_lag",),
        ),
        Case(
            "config/promql-garbage",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_uptime": "max by (a b) (x)"}
            ),
            refuse,
            ("query_uptime",),
        ),
        Case(
            "config/promql-unknown-placeholder",
            validate(
                monitor={"prometheus_url": "http://p:9090", "scrape_interval_s": 1, "query_lag": "sum(lag{$selectr})"}
            ),
            refuse,
            ("$selectr",),
        ),
        Case("config/queries-in-scrape-mode", validate(monitor={"query_lag": "sum(my_lag)"}), refuse, ("query_lag",)),
        Case(
            "config/max-scaleout-above-agent",
            validate(controller={"max_scaleout": 40}),
            refuse,
            ("agent.max_executors",),
        ),
        Case("config/empty-metrics-host", validate(runtime={"metrics_host": ""}), refuse, ("metrics_host",)),
        Case(
            "config/url-userinfo",
            validate(monitor={"prometheus_url": f"http://u:{PASSWORD}@p:9090", "scrape_interval_s": 1}),
            refuse,
            ("user",),
            secrets=(PASSWORD,),
        ),
        Case("config/url-query", validate(monitor={"scrape_urls": ["http://a:9095/metrics?x=1"]}), refuse, ("query",)),
        Case("config/url-fragment", validate(actuator={"agent_url": "http://a:9095#top"}), refuse, ("fragment",)),
        Case("config/k8s-name", validate(kubernetes={"name": "Spark_Worker"}), refuse, ("kubernetes.name",)),
        Case("config/k8s-namespace", validate(kubernetes={"namespace": "team a"}), refuse, ("namespace",)),
        Case(
            "config/k8s-selector",
            validate(kubernetes={"executor_selector": "spark-role=exec/utor"}),
            refuse,
            ("executor_selector",),
        ),
        Case(
            "config/k8s-selector-bad-key",
            validate(kubernetes={"executor_selector": "-role=exec"}),
            refuse,
            ("executor_selector",),
        ),
        Case(
            "config/exponent-6e2",
            validate_text("controller:\n  loop_interval_s: 6e2\n"),
            accept,
            check=lambda o: "" if "loop_interval_s: 600" in o.out else "6e2 not read as 600",
        ),
        Case(
            "config/exponent-1e308",
            validate_text("controller:\n  target_recovery_s: 1e308\n"),
            refuse,
            ("target_recovery_s",),
        ),
        Case("config/exponent-1e1-int", validate_text("controller:\n  max_scaleout: 1e1\n"), refuse, ("max_scaleout",)),
        Case("config/good", validate(), accept),
        # -- run: paths that can never work are refused at start --
        Case(
            "run/knowledge-dev-full",
            sidecar(lambda t: base(t, controller={"knowledge_path": "/dev/full"})),
            refuse,
            ("/dev/full",),
        ),
        Case(
            "run/knowledge-dev-null",
            sidecar(lambda t: base(t, controller={"knowledge_path": "/dev/null"})),
            refuse,
            ("/dev/null",),
        ),
        Case(
            "run/knowledge-is-directory",
            sidecar(lambda t: base(t, controller={"knowledge_path": str(t)})),
            refuse,
            ("directory",),
        ),
        Case(
            "run/knowledge-under-a-file",
            sidecar(lambda t: _write(t / "f", "") and base(t, controller={"knowledge_path": str(t / "f/k")})),
            refuse,
            ("k",),
        ),
        Case(
            "run/decision-log-missing-dir",
            sidecar(lambda t: base(t, runtime={"decision_log": str(t / "nope" / "d.jsonl")})),
            refuse,
            ("decision_log", "d.jsonl"),
        ),
        Case(
            "run/decision-log-is-directory",
            sidecar(lambda t: base(t, runtime={"decision_log": str(t)})),
            refuse,
            ("decision",),
        ),
        Case(
            "run/decision-log-into-yaml",
            decision_log_into("c2.yaml", "controller:\n  loop_interval_s: 5\n"),
            refuse,
            ("decision",),
        ),
        Case("run/decision-log-foreign-text", decision_log_into("notes.txt", "my notes\n"), refuse, ("decision",)),
        Case("run/good", sidecar(life_s=12), accept),
        *(
            Case(f"run/sigint-after-{t:g}s", sidecar(interrupt_after_s=t), accept)
            for t in (0.3, 1.0, 2.0, 3.5)  # interpreter, imports, building the sidecar, running
        ),
        Case(
            "run/job-labels-env-unset",
            sidecar(
                lambda t: base(
                    t,
                    monitor={
                        "prometheus_url": "http://127.0.0.1:1",
                        "scrape_interval_s": 1,
                        "job_labels_env": {"application_id": "NO_SUCH_VAR_X"},
                    },
                )
            ),
            refuse,
            ("NO_SUCH_VAR_X",),
        ),
        Case(
            "run/token-file-newline",
            sidecar(
                lambda t: base(
                    t,
                    monitor={
                        "prometheus_url": "http://127.0.0.1:1",
                        "scrape_interval_s": 1,
                        "bearer_token_file": str(_write(t / "tok", f"{SECRET}\nsecond line\n")),
                    },
                )
            ),
            refuse,
            ("bearer_token",),
        ),
        # -- runtime, in-process --
        Case("runtime/store-locked-mid-run", store_fails_mid_run("locked"), refuse, ("not",)),
        Case("runtime/store-directory-mid-run", store_fails_mid_run("directory"), refuse, ("not",)),
        Case("runtime/store-dir-gone-mid-run", store_fails_mid_run("gone"), refuse, ("not",)),
        Case("runtime/agent-token-trailing-newline", token_with_newline, accept, check=token_check),
        Case("runtime/secret-in-failed-actuation", secret_in_records, accept),
        Case("runtime/dry-run-executor-count", dry_run_count, accept, check=dry_run_check),
        # -- stored fields: the controller resumed from a damaged store (every decision row damaged alike) --
        *(
            Case(f"store/{name}", resume_then_tick(make), "either", names, check=mentions(names[0]))
            for name, make, names in DAMAGE
        ),
        Case(
            "store/last-rescale-future",
            resume_then_tick(component_field("controller", "last_rescale_s", 4_000_000_000.0)),
            "either",
            ("last_rescale_s",),
            check=lambda o: not_holding_cooldown(o) or mentions("last_rescale_s")(o),
        ),
        Case(
            "store/last-rescale-string",
            resume_then_tick(component_field("controller", "last_rescale_s", "x")),
            "either",
            ("last_rescale_s",),
            check=mentions("last_rescale_s"),
        ),
        # -- report on the same damage --
        *(
            Case(f"report/{name}", report_on(make), "either", names, check=mentions(names[0]))
            for name, make, names in DAMAGE
        ),
        Case(
            "report/last-rescale-future",
            report_on(component_field("controller", "last_rescale_s", 4_000_000_000.0)),
            "either",
            ("last_rescale_s",),
            check=mentions("last_rescale_s", "ahead"),
        ),
        Case(
            "report/json-out-together",
            lambda t: cli("report", "--knowledge", str(saved_store(t)), "--json", "--out", str(t / "o")),
            refuse,
            ("--json", "--out"),
        ),
        Case("report/out-symlink", symlink_out, accept),
        Case("report/good", report_on(lambda t: saved_store(t)), accept),
        Case(
            "report/missing-file",
            lambda t: cli("report", "--knowledge", str(t / "none.sqlite")),
            refuse,
            ("none.sqlite",),
        ),
        # -- HTTP endpoint of the sidecar --
        Case("http/healthz-with-4-stalled", health_under_slow_clients(4), accept, check=answered_200),
        Case("http/healthz-with-20-stalled", health_under_slow_clients(20), accept, check=answered_200),
        Case("http/healthz-with-200-stalled", health_under_slow_clients(200), accept, check=answered_200),
        Case("http/garbage-request-line", http_request(b"\x00\x01garbage\r\n\r\n", (400,)), refuse, ("HTTP 400",)),
        Case(
            "http/huge-header",
            http_request(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n", (400, 413, 431)),
            refuse,
            ("HTTP 4",),
        ),
        Case(
            "http/post-metrics",
            http_request(b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", (405, 501)),
            refuse,
            ("HTTP 405", "HTTP 501"),
        ),
        Case(
            "http/path-traversal",
            http_request(b"GET /../../etc/passwd HTTP/1.1\r\n\r\n", (404,)),
            refuse,
            ("HTTP 404",),
        ),
        Case("http/healthz-query", http_request(b"GET /healthz?x=1 HTTP/1.1\r\n\r\n", (200,)), accept),
        # -- unbounded reads --
        Case("scrape/64MB-body", scrape_target("huge"), refuse, ("MB", "large", "bytes")),
        Case("scrape/trickling-target", scrape_target("trickle"), refuse, ("2 s", "timeout", "longer")),
        # -- smaller --
        Case("capacity/empty-executor-name", csv_pair("time,,e2"), refuse, ("column", "name")),
        Case("capacity/blank-executor-name", csv_pair("time,  ,e2"), refuse, ("column", "name")),
        Case("forecast/scale-invariance", forecast_scale, accept, check=forecast_scale_check),
        Case("simulate/bad-policy", lambda t: cli("simulate", "--policies", "nope"), refuse, ("nope", "policy")),
    ]
    return c


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run_case(case: Case) -> Case:
    with tempfile.TemporaryDirectory(prefix="probe-") as d:
        try:
            outcome = case.run(Path(d))
        except Exception as exc:  # noqa: BLE001 - the probe's own harness met an exception escaping the code under test
            import traceback

            outcome = Outcome(1, "", "Traceback\n" + "".join(traceback.format_exception_only(exc)))
    case.result, case.detail = classify(case, outcome)
    return case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only cases whose id starts with this")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    selected = [c for c in cases() if c.id.startswith(args.only)]
    # Subprocess cases in parallel; in-process ones (they share the root logger) one at a time.
    in_process = ("runtime/", "store/", "http/", "scrape/")
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(run_case, [c for c in selected if not c.id.startswith(in_process)]))
    done += [run_case(c) for c in selected if c.id.startswith(in_process)]
    for case in done:
        print(
            f"{case.result:10} {case.id:42} {case.detail if args.verbose or case.result not in ('ok', 'clear') else ''}"
        )
    counts = Counter(c.result for c in done)
    print(f"\n{len(done)} cases: " + ", ".join(f"{counts[k]} {k}" for k in CLASSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
