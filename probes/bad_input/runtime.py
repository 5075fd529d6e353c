"""The bad-input probe's in-process runtime: a store that fails mid-run, a token with a newline, a secret in a failed
actuation, and what a dry run reports, each against the sidecar ticking on the scripted job."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from bad_input.harness import PASSWORD, SECRET, Outcome, base, captured_logs, cli


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
        with captured_logs(err):
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
    with captured_logs(err):
        car = assemble_sidecar(config, ScriptedMonitor(), Leaky(), clock=FakeClock(1_700_000_000.0))
        car.step()
        car.close()
    stored = b"".join(
        row[0].encode() for row in sqlite3.connect(tmp / "k.sqlite").execute("SELECT json FROM decision")
    ).decode()
    shown = cli("report", "--knowledge", str(tmp / "k.sqlite"))
    return Outcome(0, (tmp / "d.jsonl").read_text() + stored + shown.out, err.getvalue() + shown.err)
