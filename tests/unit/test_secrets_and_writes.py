"""Secrets out of every output (logs, decision log, store, report); writes only where meant (report --out, --json
with --out); and the smaller cases: --dry-run's live count, Ctrl-C during start-up, a CSV column without a name."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
from pathlib import Path

import pytest

from daedalus_spark import __main__ as console
from daedalus_spark.cli import main
from daedalus_spark.clock import FakeClock
from daedalus_spark.config import parse_config
from daedalus_spark.execute.dry_run import DryRunActuator
from daedalus_spark.execute.port import Actuation, ActuatorError, Outcome
from daedalus_spark.redact import RedactingFilter, bearer_token, redact
from daedalus_spark.runtime.wiring import assemble_sidecar, make_actuator
from daedalus_spark.testing import ScriptedMonitor, config_in, saved_store

TOKEN = "tok-8d1f0c2e"  # a marker to look for, not a credential


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://admin:pw1@agent:9095/executors refused", "http://***@agent:9095/executors refused"),
        ("https://user@prom:9090", "https://***@prom:9090"),
        ("header 'Authorization: Bearer abc.def-1' invalid", "header 'Authorization: Bearer ***' invalid"),
        ("no secret in http://agent:9095/x", "no secret in http://agent:9095/x"),
        ("mail me at someone@example.com", "mail me at someone@example.com"),
    ],
    ids=["url-password", "url-user", "bearer-header", "plain-url", "an-address-is-not-a-url"],
)
def test_redact_masks_user_info_and_bearer_values(text, shown) -> None:
    assert redact(text) == shown


def test_a_token_read_is_masked_wherever_it_turns_up() -> None:
    assert bearer_token(f"  {TOKEN}\n", "actuator.token_env (X)") == TOKEN  # a file's newline is trimmed
    assert redact(f"b'{TOKEN}' refused") == "b'***' refused"


@pytest.mark.parametrize(
    "raw",
    [f"{TOKEN}\nsecond", f"{TOKEN}\rX", f"a {TOKEN}", f"{TOKEN}\x00X"],
    ids=["two-lines", "carriage-return-inside", "space-inside", "nul-inside"],
)
def test_a_token_with_a_break_inside_is_refused_naming_where_it_came_from(raw) -> None:
    with pytest.raises(ValueError, match=r"actuator.token_env \(DAEDALUS_AGENT_TOKEN\): the bearer token holds") as err:
        make_actuator(parse_config({}), dry_run=False, environ={"DAEDALUS_AGENT_TOKEN": raw})
    assert TOKEN not in str(err.value)


def test_the_agent_token_from_a_file_with_a_newline_works(tmp_path: Path) -> None:
    config = parse_config({"actuator": {"agent_url": "http://127.0.0.1:9", "retries": 1, "confirm_timeout_s": 0}})
    actuator = make_actuator(config, dry_run=False, environ={"DAEDALUS_AGENT_TOKEN": TOKEN + "\n"})
    actuation = actuator.apply(3)  # nothing listens on port 9: fails, but on the connection, not the header
    assert actuation.outcome is Outcome.FAILED
    assert "Invalid header" not in actuation.detail and TOKEN not in actuation.detail


class LeakyActuator:
    """Fails quoting a URL with a password and the bearer header, as an HTTP library's error may."""

    def current(self) -> int:
        return 4

    def apply(self, target: int) -> Actuation:
        return Actuation(target, Outcome.FAILED, f"http://admin:pw1@agent/executors: 'Authorization: Bearer {TOKEN}'")


def test_no_secret_reaches_the_decision_log_the_store_the_log_or_the_report(tmp_path: Path, capsys) -> None:
    bearer_token(TOKEN, "test")  # read by this process, as the actuator's token would be
    handler = logging.StreamHandler(stream := io.StringIO())
    handler.addFilter(RedactingFilter())
    logging.getLogger().addHandler(handler)
    try:
        car = assemble_sidecar(
            config_in(tmp_path), ScriptedMonitor(), LeakyActuator(), clock=FakeClock(1_700_000_000.0)
        )
        car.step()
        logging.getLogger("test").warning("actuation failed: %s", f"Bearer {TOKEN}")
        car.close()
    finally:
        logging.getLogger().removeHandler(handler)
    stored = "".join(r[0] for r in sqlite3.connect(tmp_path / "k.sqlite").execute("SELECT json FROM decision"))
    assert main(["report", "--knowledge", str(tmp_path / "k.sqlite")]) == 0
    report = capsys.readouterr().out
    outputs = {"decision log": (tmp_path / "decisions.jsonl").read_text(), "store": stored, "report": report}
    outputs["log"] = stream.getvalue()
    for where, text in outputs.items():
        assert TOKEN not in text and "pw1" not in text, where
    assert "http://***@agent" in outputs["decision log"] and "Bearer ***" in outputs["log"]


def test_report_out_replaces_a_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    store = saved_store(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "index.html").symlink_to(victim)
    (out / "report.json").symlink_to(victim)
    assert main(["report", "--knowledge", str(store), "--out", str(out)]) == 0
    assert victim.read_text() == "precious\n"
    assert not (out / "index.html").is_symlink() and "<html" not in victim.read_text()
    assert json.loads((out / "report.json").read_text())["decisions"]["count"] == 3
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_report_json_with_out_is_refused_not_ignored(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--knowledge", str(tmp_path / "k.sqlite"), "--json", "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2 and "not allowed with argument --json" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_dry_run_reports_the_live_count_it_reads_never_a_made_up_one() -> None:
    assert DryRunActuator(read_live=lambda: 4).apply(6).live == 4
    assert DryRunActuator().apply(6).live is None

    def unreachable() -> int:
        raise ActuatorError("agent down")

    assert DryRunActuator(read_live=unreachable).apply(6).live is None
    assert DryRunActuator(live=3).apply(6).live == 3  # the simulator's fixed count


def test_dry_run_beside_an_agent_reads_it_and_never_puts() -> None:
    actuator = make_actuator(parse_config({}), dry_run=True, environ={})
    assert isinstance(actuator, DryRunActuator) and actuator.read_live is not None
    assert make_actuator(parse_config({"actuator": {"kind": "dry_run"}}), dry_run=False, environ={}).read_live is None


def test_ctrl_c_during_start_up_is_one_line(monkeypatch, capsys) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("daedalus_spark.cli.main", interrupted)
    assert console.main() == 130
    assert capsys.readouterr().err == "daedalus-spark: interrupted\n"


@pytest.mark.parametrize("header", ["time,,e2", "time,  ,e2", "time,e1,"], ids=["empty", "blank", "trailing"])
def test_a_csv_column_without_a_name_is_refused(tmp_path: Path, capsys, header) -> None:
    rows = "".join(f"{i},0.5,0.5\n" for i in range(10))
    (tmp_path / "u.csv").write_text(f"{header}\n{rows}")
    (tmp_path / "t.csv").write_text(f"{header}\n{rows}")
    assert main(["capacity", "--utilization", str(tmp_path / "u.csv"), "--throughput", str(tmp_path / "t.csv")]) == 2
    assert "of the header has no name" in capsys.readouterr().err


def _symlink_elsewhere(tmp_path: Path) -> Path:
    (tmp_path / "victim.txt").write_text("precious\n")
    (tmp_path / "out.json").symlink_to(tmp_path / "victim.txt")
    return tmp_path / "out.json"


def _dangling_symlink(tmp_path: Path) -> Path:
    (tmp_path / "out.json").symlink_to(tmp_path / "not-yet.txt")
    return tmp_path / "out.json"


def _earlier_output(tmp_path: Path) -> Path:
    (tmp_path / "out.json").write_text("old\n")
    return tmp_path / "out.json"


@pytest.mark.parametrize(
    "prepare",
    [_symlink_elsewhere, _dangling_symlink, _earlier_output, lambda tmp: tmp / "out.json"],
    ids=["symlink-to-a-file", "dangling-symlink", "earlier-output", "new"],
)
def test_an_output_replaces_whatever_has_its_name_and_writes_nowhere_else(tmp_path: Path, prepare) -> None:
    from daedalus_spark.report.outfile import replace_file

    path = prepare(tmp_path)
    replace_file(path, b"new\n")
    assert not path.is_symlink() and path.read_bytes() == b"new\n"
    assert not (tmp_path / "not-yet.txt").exists()
    if (tmp_path / "victim.txt").exists():
        assert (tmp_path / "victim.txt").read_text() == "precious\n"


def test_a_stream_is_written_through(tmp_path: Path) -> None:
    import os
    import threading

    from daedalus_spark.report.outfile import replace_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    replace_file(fifo, b"streamed\n")
    reader.join(timeout=10)
    assert got == [b"streamed\n"]
    replace_file(Path("/dev/null"), b"x")  # a character device: written, never renamed over
    assert Path("/dev/null").is_char_device()


def test_simulate_json_to_a_symlink_replaces_the_link(tmp_path: Path) -> None:
    link = _symlink_elsewhere(tmp_path)
    trace = tmp_path / "t.csv"
    trace.write_text("".join(f"{s}|{1000 + 10 * (s % 50)}\n" for s in range(400)))
    assert (
        main(["simulate", "--trace", str(trace), "--policies", "static:4", "--json", str(link), "--no-progress"]) == 0
    )
    assert (tmp_path / "victim.txt").read_text() == "precious\n"
    assert json.loads(link.read_text())["policies"]
