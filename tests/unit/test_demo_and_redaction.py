"""`demo` checks everything before touching --out and never deletes a store it did not write; --simulated refuses
the live demo's options; redaction masks secret fields, not every occurrence of a short value."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import Config
from daedalus_spark.redact import RedactingFilter, bearer_token, redact


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--simulated", "--autoscaler", "spark-da"], "--autoscaler applies to the live demo only"),
        (["--simulated", "--duration", "100"], "--duration applies to the live demo only"),
        (["--simulated", "--no-prometheus"], "--no-prometheus applies to the live demo only"),
        (["--duration", "-5"], "--duration: -5 is outside [10, 86400]"),
        (["--duration", "nan"], "--duration: 'nan' is not a finite number"),
    ],
    ids=["simulated-autoscaler", "simulated-duration", "simulated-no-prometheus", "negative-duration", "nan-duration"],
)
def test_demo_options_that_would_be_ignored_or_are_absurd_are_refused(tmp_path: Path, capsys, argv, expected) -> None:
    try:
        code = main(["demo", "--out", str(tmp_path / "out"), *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and expected in err, err
    assert not (tmp_path / "out").exists()


def _earlier_outputs(out: Path) -> dict[str, bytes]:
    out.mkdir()
    files = {"knowledge.sqlite": b"a store the user keeps", "decisions.jsonl": b'{"t": 1}\n'}
    for name, data in files.items():
        (out / name).write_bytes(data)
    return files


def test_demo_with_a_bad_config_touches_nothing_in_out(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    files = _earlier_outputs(out)
    (tmp_path / "bad.yaml").write_text("controller: {loop_interval_s: -1}\n")
    assert main(["demo", "--out", str(out), "--config", str(tmp_path / "bad.yaml")]) == 2
    assert "controller.loop_interval_s" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def test_demo_refuses_a_store_no_earlier_demo_wrote_and_leaves_it(tmp_path: Path, capsys) -> None:
    from daedalus_spark.demo.live import DemoPlan, run_demo

    out = tmp_path / "out"
    files = _earlier_outputs(out)
    with pytest.raises(FileExistsError, match="not written by an earlier demo"):
        run_demo(out, DemoPlan())
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def _earlier_demo_config(out: Path, config: Config) -> None:
    """`out/demo-config.yaml` as an earlier demo wrote it from `config` (its paths under `out`)."""
    from daedalus_spark.config import render_yaml
    from daedalus_spark.demo.live import controller_config

    earlier = controller_config(
        config,
        out,
        agent_url="http://127.0.0.1:1",
        scrape_urls=["http://127.0.0.1:1/metrics"],
        prometheus_url="",
        metrics_port=0,
        max_scaleout=4,
    )
    (out / "demo-config.yaml").write_text(render_yaml(earlier))


def test_demo_starts_afresh_over_its_own_earlier_outputs(tmp_path: Path) -> None:
    from daedalus_spark.config import load_config
    from daedalus_spark.demo.live import DEMO_CONFIG, _earlier_demo_outputs

    out = tmp_path / "out"
    _earlier_outputs(out)
    _earlier_demo_config(out, load_config(DEMO_CONFIG))
    assert {p.name for p in _earlier_demo_outputs(out) if p.exists()} == {"knowledge.sqlite", "decisions.jsonl"}


def test_an_earlier_demos_config_is_read_for_its_paths_without_warning_about_its_planning(
    tmp_path: Path, caplog
) -> None:
    """A demo of an older version (forecast horizon 60 s) is replaced: its planning is not the new run's."""
    from daedalus_spark.config import load_config
    from daedalus_spark.demo.live import DEMO_CONFIG, _earlier_demo_outputs

    out = tmp_path / "out"
    _earlier_outputs(out)
    base = load_config(DEMO_CONFIG)
    _earlier_demo_config(
        out, base.model_copy(update={"forecast": base.forecast.model_copy(update={"horizon_s": 60.0})})
    )
    caplog.clear()
    assert {p.name for p in _earlier_demo_outputs(out) if p.exists()} == {"knowledge.sqlite", "decisions.jsonl"}
    assert not [r for r in caplog.records if "horizon_s" in r.getMessage()]


@pytest.mark.parametrize(
    ("token", "text", "shown"),
    [
        ("0", "tick 10 took 0.50 s, 0 rescales", "tick 10 took 0.50 s, 0 rescales"),
        ("0", "header 'Authorization: Bearer 0' refused", "header 'Authorization: Bearer ***' refused"),
        ("abc", "authorization: basic abc", "authorization: basic ***"),
        ("tok-77aa55cc", "b'tok-77aa55cc' refused", "b'***' refused"),
        ("tok-77aa55cc", "tok-77aa55ccd is another value", "tok-77aa55ccd is another value"),
        ("secret99", "the bearer token is empty", "the bearer token is empty"),
    ],
    ids=[
        "short-value-alone",
        "short-value-as-bearer",
        "basic-field",
        "long-value-alone",
        "long-value-inside-another",
        "prose",
    ],
)
def test_redaction_masks_the_field_not_every_occurrence(token, text, shown) -> None:
    bearer_token(token, "test")
    assert redact(text) == shown


def test_a_token_of_0_does_not_garble_the_log() -> None:
    bearer_token("0", "test")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "tick %d at %.1f: %s", (10, 100.0, "0 ok"), None)
    RedactingFilter().filter(record)
    assert record.getMessage() == "tick 10 at 100.0: 0 ok"
