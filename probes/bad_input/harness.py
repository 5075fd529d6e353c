"""The bad-input probe's harness: a case, its outcome and its class, and the CLI run as a subprocess on a config."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
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


# ---- the CLI as a subprocess ----

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


def write(path: Path, text: str) -> Path:
    """`text` written to `path`; the path back (for use inside an expression)."""
    path.write_text(text)
    return path


@contextlib.contextmanager
def captured_logs(stream: io.StringIO) -> Iterator[None]:
    """Warnings and errors logged in-process go to `stream` (the in-process cases' stderr)."""
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


def run_case(case: Case) -> Case:
    with tempfile.TemporaryDirectory(prefix="probe-") as d:
        try:
            outcome = case.run(Path(d))
        except Exception as exc:  # noqa: BLE001 - the probe's own harness met an exception escaping the code under test
            outcome = Outcome(1, "", "Traceback\n" + "".join(traceback.format_exception_only(exc)))
    case.result, case.detail = classify(case, outcome)
    return case
