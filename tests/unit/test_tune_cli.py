"""`daedalus-spark tune` on bad input: one line, exit 2, nothing written (no --out, nothing in the working
directory); the job profile read from a knowledge store; the answer's files from given rows (no Spark here)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from daedalus_spark.cli import main
from daedalus_spark.config import Config, parse_config
from daedalus_spark.domain import CapacityTable, Recovery
from daedalus_spark.httpserve import free_port
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import Knowledge, snapshot
from daedalus_spark.testing import TUNE_GRID, TUNE_INPUTS, TUNE_TRACE, tune_row
from daedalus_spark.tune.grid import SplitSettings, TuneGrid, candidates
from daedalus_spark.tune.outputs import summary, write_all
from daedalus_spark.tune.profile import KnowledgeTooYoung, job_model_from_knowledge
from daedalus_spark.tune.result import decide, tune_result
from daedalus_spark.tune.split import HOLDOUT, SELECT
from tests.conftest import ROOT, execute_notebook


def _store(path: Path, *, table: bool, recoveries: tuple[str, ...]) -> Path:
    k = Knowledge.fresh(Config())
    if table:
        k.history.latest_table = CapacityTable(
            4, 4000.0, (1100.0, 2100.0, 3000.0, 4000.0, 4800.0), frozenset({2, 4}), ()
        )
    for direction in recoveries:
        k.recoveries.append(Recovery(100.0, direction, 2, 4 if direction == "out" else 1, 50.0, 20.0))
    k.recovery.downtime_scale_out_s, k.recovery.downtime_scale_in_s = 42.0, 11.0
    SqliteKnowledgeStore(path).save(snapshot(k))
    return path


def _foreign(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    return path


CASES = [
    (
        "unknown-grid-key",
        {"g.yaml": "knobs: {controller.loop_intervals: [30]}\n"},
        ["--grid", "g.yaml"],
        "knobs.controller.loop_intervals: unknown config key",
    ),
    (
        "grid-value-out-of-bounds",
        {"g.yaml": "knobs: {capacity.unobserved_margin_ratio: [0.1, 0.7]}\n"},
        ["--grid", "g.yaml"],
        "knobs.capacity.unobserved_margin_ratio[1] = 0.7",
    ),
    ("grid-unknown-section-key", {"g.yaml": "splits: {holdout_s: 1}\n"}, ["--grid", "g.yaml"], "splits: unknown key"),
    ("grid-missing", {}, [], "deploy/tune.yaml: invalid tune grid: cannot read"),
    ("empty-trace", {"t.csv": "second|count\n"}, ["--trace", "t.csv"], "t.csv: no data rows"),
    ("gapped-trace", {"t.csv": "0|5\n1|5\n5|5\n"}, ["--trace", "t.csv"], "second 5 out of order"),
    (
        "too-short-history",
        {"t.csv": "second|count\n" + "0|5\n" * 1 + "".join(f"{i}|5\n" for i in range(1, 500))},
        ["--trace", "t.csv"],
        "leave no holdout window (the newest 125 s are held out)",
    ),
    ("no-history", {}, [], "no history: pass --trace FILE, --prometheus-url URL"),
    (
        "bad-since",
        {"c.yaml": "monitor: {scrape_interval_s: 1}\n"},
        ["--config", "c.yaml", "--prometheus-url", "http://127.0.0.1:9", "--since", "a week"],
        "--since: 'a week' is not a duration",
    ),
    (  # checked as monitor.prometheus_url, which it stands for
        "bad-prometheus-url",
        {},
        ["--prometheus-url", "ftp://x"],
        "monitor.prometheus_url: expected an http:// or https:// URL with a host (got 'ftp://x')",
    ),
]


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    try:
        code = main(["tune", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("files", "argv", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys, files, argv, expected) -> None:
    files = {"g.yaml": TUNE_GRID, "t.csv": TUNE_TRACE, **files} if "--grid" in argv or "--trace" in argv else files
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    defaults = [] if "--grid" in argv or expected.startswith("deploy/") else ["--grid", "g.yaml"]
    if defaults:
        (tmp_path / "g.yaml").write_text(TUNE_GRID)
    before = sorted(p.name for p in tmp_path.iterdir())
    job = ["--job-model", "local"] if "--trace" in argv or "--prometheus-url" in argv or not argv else []
    code, err = _run(tmp_path, monkeypatch, capsys, [*defaults, *job, *argv, "--out", "out/tune"])
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("daedalus-spark tune: error: ") and expected in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("monitor", "expected"),
    [
        pytest.param("{scrape_interval_s: 1}", "Prometheus at {url} unreachable (ConnectionError)", id="unreachable"),
        pytest.param(  # written for a Prometheus: used as written (one for the embedded scraper is adapted)
            "{prometheus_url: 'http://127.0.0.1:1'}",
            "monitor.rate_window_s (5 s) must be at least 4 × monitor.scrape_interval_s",
            id="rate-window",
        ),
        pytest.param(
            "{scrape_interval_s: 1, job_labels_env: {application_id: DAEDALUS_TUNE_TEST_UNSET}}",
            "monitor.job_labels_env.application_id: environment variable DAEDALUS_TUNE_TEST_UNSET is unset",
            id="label-from-an-unset-variable",
        ),
    ],
)
def test_prometheus_url_from_the_command_line(tmp_path, monkeypatch, capsys, monitor, expected) -> None:
    """--prometheus-url is checked with the config's monitor settings, as if the config had it."""
    (tmp_path / "g.yaml").write_text(TUNE_GRID)
    (tmp_path / "c.yaml").write_text(f"monitor: {monitor}\n")
    url = f"http://127.0.0.1:{free_port()}"
    argv = ["--grid", "g.yaml", "--config", "c.yaml", "--job-model", "local", "--prometheus-url", url]
    code, err = _run(tmp_path, monkeypatch, capsys, argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert expected.format(url=url) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "g.yaml"]


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        pytest.param(lambda d: _foreign(d / "k.sqlite"), "not a daedalus-spark knowledge file", id="foreign-store"),
        pytest.param(lambda d: d / "missing.sqlite", "no such file", id="missing-store"),
        pytest.param(
            lambda d: _store(d / "k.sqlite", table=False, recoveries=()),
            "too young for tune: no capacity observed",
            id="fresh-store",
        ),
        pytest.param(
            lambda d: _store(d / "k.sqlite", table=True, recoveries=("out",)),
            "too young for tune: no scale-in recovery measured",
            id="no-scale-in-yet",
        ),
    ],
)
def test_knowledge_store_that_cannot_give_a_profile(tmp_path, monkeypatch, capsys, store, expected) -> None:
    (tmp_path / "g.yaml").write_text(TUNE_GRID)
    (tmp_path / "t.csv").write_text(TUNE_TRACE)
    path = store(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err = _run(tmp_path, monkeypatch, capsys, ["--grid", "g.yaml", "--trace", "t.csv", "--knowledge", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert expected in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_profile_from_knowledge(tmp_path: Path) -> None:
    from daedalus_spark.report.knowledge_report import load_knowledge

    config = parse_config({"controller": {"max_scaleout": 12}})
    k = load_knowledge(_store(tmp_path / "k.sqlite", table=True, recoveries=("out", "in")), config)
    model = job_model_from_knowledge(k, config, "k.sqlite")
    assert model.executor_capacity_per_s == pytest.approx((2100 / 2 + 4000 / 4) / 2)  # median over observed 2 and 4
    assert (model.downtime_scale_out.low_s, model.downtime_scale_out.high_s) == (42.0, 42.0)
    assert (model.downtime_scale_in.low_s, model.downtime_scale_in.high_s) == (11.0, 11.0)
    assert model.partitions == 12 * 12 and model.reference_scaleout == 12 and model.engine == "continuous"
    with pytest.raises(KnowledgeTooYoung, match="no scale-out recovery measured"):
        k.recoveries.clear()
        job_model_from_knowledge(k, config, "k.sqlite")


@pytest.mark.parametrize(
    ("learned_partitions", "partitions", "reference"),
    [
        # nothing learned of the topic: the table's scale-outs (1..the max_scaleout it had), 12 partitions each
        pytest.param(0, None, None, id="from-the-table"),
        pytest.param(8, 8, 8, id="from-the-partitions-learned"),
    ],
)
def test_profile_from_knowledge_with_the_settings_left_to_the_topic(
    tmp_path: Path, learned_partitions, partitions, reference
) -> None:
    from daedalus_spark.report.knowledge_report import load_knowledge

    config = Config()
    assert config.controller.max_scaleout == 0 and config.capacity.partitions == 0
    k = load_knowledge(_store(tmp_path / "k.sqlite", table=True, recoveries=("out", "in")), config)
    k.capacity.partition_shares = {("events", p): 1 / learned_partitions for p in range(learned_partitions)}
    assert k.history.latest_table is not None
    most = len(k.history.latest_table.per_scaleout_per_s)
    model = job_model_from_knowledge(k, config, "k.sqlite")
    assert model.reference_scaleout == (reference or most)
    assert model.partitions == (partitions or 12 * most)


def test_answer_files_from_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate 2 is cheapest on the older part without violations; 1 is cheaper but violates: 2 is recommended,
    its held-out saving is against candidate 0 (the config as it is)."""
    config = Config()
    grid = TuneGrid.model_validate({"knobs": {"controller.cooldown_s": [60, 120]}})
    cands = candidates(grid, config)
    rows = [
        tune_row(0, SELECT, 10.0),
        tune_row(0, HOLDOUT, 8.0),
        tune_row(1, SELECT, 7.0, viol=1),
        tune_row(1, HOLDOUT, 6.0),
        tune_row(2, SELECT, 9.0, resc=2),
        tune_row(2, HOLDOUT, 6.8, resc=1),
    ]
    answer = decide(rows, cands, grid, config)
    assert answer.chosen == 2 and answer.changes == {"controller.cooldown_s": 120}
    assert answer.saving_ratio() == pytest.approx(0.15)
    result = tune_result(
        answer,
        recommended_yaml="controller:\n  cooldown_s: 120\n",
        diff="+  cooldown_s: 120\n",
        inputs=TUNE_INPUTS,
    )
    write_all(tmp_path, result, rows)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "index.html",
        "pareto.png",
        "recommended.diff",
        "recommended.yaml",
        "rows.csv",
        "tune.json",
    ]
    saved = json.loads((tmp_path / "tune.json").read_text())
    risk = {"violations": 0, "rescales_per_hour": 1.0, "rescales": 1, "allowed_rescales": 6.0, "within_budget": True}
    assert saved["recommendation"]["risk"] == risk  # 3/h over 1 h in 1 window, and the bucket's 3
    assert [c["pareto"] for c in saved["candidates"]] == [True, True, True]  # 0: fewest rescales
    text = summary(result)
    assert "recommendation: candidate 2: controller.cooldown_s: 120" in text and "saving 15.0%" in text
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 7
    page = (tmp_path / "index.html").read_text()
    assert page.count("<tr") == 4 and "<tr style='font-weight:bold'><td>2</td>" in page  # header + 3, 2 in bold
    assert "+  cooldown_s: 120" in page and "<img src='pareto.png'" in page
    monkeypatch.setenv("DAEDALUS_TUNE", str(tmp_path / "tune.json"))  # the notebook reads what was written
    notebook = execute_notebook(ROOT / "notebooks" / "tune.ipynb", monkeypatch, tmp_path)
    assert notebook["rec"]["candidate"] == 2 and notebook["best"]["candidate"] == 2


def test_package_zip_ships_the_whole_package(tmp_path: Path) -> None:
    """What --master ships to a cluster's executors: every module and the packaged profiles, no caches."""
    import zipfile

    from daedalus_spark.tune.spark import package_zip

    names = set(zipfile.ZipFile(package_zip(tmp_path)).namelist())
    assert {
        "daedalus_spark/__init__.py",
        "daedalus_spark/tune/task.py",
        "daedalus_spark/sim/profiles/local.yaml",
    } <= names
    assert not [n for n in names if "__pycache__" in n]


def test_the_documented_grid_is_valid_on_the_documented_config() -> None:
    from daedalus_spark.config import load_config
    from daedalus_spark.tune.grid import load_grid

    grid = load_grid(str(ROOT / "deploy" / "tune.yaml"))
    cands = candidates(grid, load_config(ROOT / "deploy" / "daedalus.yaml"))
    assert len(cands) == 1 + 2**5 and grid.split.holdout_s == 86400 and grid.constraints.max_rescales_per_hour is None
    assert grid.split.lead_in_s == SplitSettings().lead_in_s  # the documented grid keeps the default lead-in


def test_without_pyspark_one_line_naming_the_install(tmp_path, monkeypatch, capsys) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    hidden = lambda name, *a: None if name == "pyspark" else find_spec(name, *a)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", hidden)
    (tmp_path / "g.yaml").write_text(TUNE_GRID)
    (tmp_path / "t.csv").write_text(TUNE_TRACE)
    code, err = _run(tmp_path, monkeypatch, capsys, ["--grid", "g.yaml", "--trace", "t.csv", "--job-model", "local"])
    assert code == 1, err
    last = err.strip().splitlines()[-1]
    assert "PySpark is not installed" in last and "[spark]" in last, err
    assert not (tmp_path / "out").exists()
