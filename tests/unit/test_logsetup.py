"""The sidecar's log lines: text or one JSON object per line, APScheduler's per-tick lines silenced; --version."""

from __future__ import annotations

import io
import json
import logging
from datetime import datetime

import pytest

from daedalus_spark.cli import main
from daedalus_spark.runtime.logsetup import configure_logging


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    quiet = logging.getLogger("apscheduler.executors")
    quiet_level = quiet.level
    yield
    root.handlers[:], root.level = handlers, level
    quiet.setLevel(quiet_level)


def test_json_format_writes_one_parseable_object_per_line_in_utc(restore_logging):
    out = io.StringIO()
    configure_logging("INFO", "json", stream=out)
    logging.getLogger("daedalus_spark.decisions").info("tick %s: %d -> %d", "12:00:00", 2, 3)
    try:
        raise RuntimeError("no route to the agent")
    except RuntimeError:
        logging.getLogger("daedalus_spark.runtime.sidecar").exception("tick failed\nsecond line")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the traceback and the message's newline stay inside their object
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "tick 12:00:00: 2 -> 3" and first["level"] == "INFO"
    assert first["logger"] == "daedalus_spark.decisions"
    assert datetime.fromisoformat(first["time"]).utcoffset().total_seconds() == 0
    assert second["level"] == "ERROR" and "RuntimeError: no route to the agent" in second["exception"]


def test_text_format_is_one_readable_line(restore_logging):
    out = io.StringIO()
    configure_logging("WARNING", "text", stream=out)
    logging.getLogger("daedalus_spark.x").info("hidden below the level")
    logging.getLogger("daedalus_spark.x").warning("shown")
    assert out.getvalue().count("\n") == 1 and out.getvalue().rstrip().endswith("WARNING daedalus_spark.x: shown")


def test_the_schedulers_per_tick_info_is_silenced_but_its_warnings_are_kept(restore_logging):
    out = io.StringIO()
    configure_logging("DEBUG", "text", stream=out)
    executor = logging.getLogger("apscheduler.executors.default")
    executor.info('Running job "Sidecar.step" (scheduled at 2026-11-24 12:00:00+00:00)')
    executor.info('Job "Sidecar.step" executed successfully')
    executor.warning('Run time of job "Sidecar.step" was missed by 0:00:07')
    assert "Running job" not in out.getvalue() and "executed successfully" not in out.getvalue()
    assert "was missed by" in out.getvalue()


def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"daedalus-spark {version('daedalus-spark')}"


def test_a_decision_line_carries_its_fields_as_keys_in_json_and_stays_one_line_in_text(restore_logging):
    from daedalus_spark.domain import Actuation, Decision, Reason
    from daedalus_spark.execute.port import Outcome
    from daedalus_spark.loop import StepResult
    from daedalus_spark.runtime.publishers import LogPublisher

    actuation = Actuation(3, Outcome.APPLIED, "agent said ok to Bearer s3cret")
    decision = Decision(0.0, 2, 3, Reason.SCALE_OUT_SMALLEST_VALID, actuation=actuation)
    out = io.StringIO()
    configure_logging("INFO", "json", stream=out)
    LogPublisher().publish(StepResult(0.0, decision, None, None))
    line = json.loads(out.getvalue())
    assert (line["current_scaleout"], line["target_scaleout"]) == (2, 3)
    assert (line["reason"], line["outcome"]) == ("scale_out_smallest_valid", "applied")
    assert "s3cret" not in out.getvalue() and line["tick_time"].startswith("1970-01-01T00:00:00")
    text = io.StringIO()
    configure_logging("INFO", "text", stream=text)
    LogPublisher().publish(StepResult(0.0, decision, None, None))
    assert text.getvalue().count("\n") == 1 and "target_scaleout" not in text.getvalue()
