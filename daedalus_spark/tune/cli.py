"""Tuning shell: the `tune` subcommand — read the config, grid, job profile and history; run the grid on Spark;
print and write the answer."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from daedalus_spark.config import Config, ConfigError, load_config
from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
from daedalus_spark.knowledge.state import IncompatibleKnowledge
from daedalus_spark.monitor.files import InputFileError
from daedalus_spark.progress import Progress
from daedalus_spark.redact import redact
from daedalus_spark.report.jsonout import strict_json
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.tune.grid import Candidate, TuneGrid, candidates, load_grid
from daedalus_spark.tune.history import History, check_gaps, from_prometheus, from_trace, parse_duration
from daedalus_spark.tune.split import HOLDOUT, SELECT, HistoryError, Plan, plan_windows
from daedalus_spark.tune.task import Setting, WindowTask, window_seed

MAX_CONFIG_TEXT = 1024 * 1024
_RATE_WINDOW_RULE = "must be at least 4 × monitor.scrape_interval_s"  # config/monitor.py's refusal
MAX_SINCE_S = 366 * 86400  # beyond a year is no one's Prometheus retention: refused, not queried


def _fail(message: str) -> int:
    print(f"daedalus-spark tune: error: {' '.join(redact(message).split())}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    try:
        return tune(args)
    except ConfigError as exc:
        return _fail(exc.one_line())
    except (HistoryError, IncompatibleKnowledge, InputFileError, KnowledgeStoreError) as exc:
        return _fail(str(exc))


def _config_text(path: Path | None) -> str:
    if path is None:
        return ""
    with path.open("rb") as f:  # load_config read it already; bounded all the same
        return f.read(MAX_CONFIG_TEXT).decode("utf-8")


def _config_for_history(args: argparse.Namespace) -> Config:
    """The config, checked as if it held --prometheus-url (which stands for monitor.prometheus_url). A config
    written without a Prometheus URL may set its rate window for the embedded scraper (a scrape every
    monitor.step_s); read from a Prometheus scraping every monitor.scrape_interval_s, rate() needs 4 of those: that
    window is used for the history, and said on one line. A config written for Prometheus is used as written."""
    if not args.prometheus_url or args.trace is not None:
        return load_config(args.config)
    try:
        for_prometheus = bool(load_config(args.config).monitor.prometheus_url)
    except ConfigError as exc:  # e.g. token settings that only a Prometheus URL makes valid
        if _RATE_WINDOW_RULE in exc.one_line():
            raise
        for_prometheus = False
    overlay: dict[str, Any] = {"prometheus_url": args.prometheus_url}
    try:
        return load_config(args.config, {"monitor": overlay})
    except ConfigError as exc:
        if for_prometheus or _RATE_WINDOW_RULE not in exc.one_line():
            raise
    scrape_s = load_config(args.config, {"monitor": {**overlay, "rate_window_s": 3600.0}}).monitor.scrape_interval_s
    overlay["rate_window_s"] = 4 * scrape_s
    print(
        f"tune: monitor.rate_window_s is set for the embedded scraper (the config has no prometheus_url); the "
        f"history's rate() uses {4 * scrape_s:g} s, 4 x monitor.scrape_interval_s ({scrape_s:g} s) of your Prometheus",
        file=sys.stderr,
    )
    return load_config(args.config, {"monitor": overlay})


def _since_s(text: str, step_s: float, now_s: float) -> float:
    """--since in seconds: at least two steps, at most MAX_SINCE_S, and not before 1970 (an injected --now)."""
    try:
        since_s = parse_duration(text)
    except ValueError as exc:
        raise HistoryError(f"--since: {exc}") from None
    if since_s < 2 * step_s:
        raise HistoryError(f"--since {text}: shorter than two steps of history.step_s ({step_s:g} s)")
    if since_s > MAX_SINCE_S:
        raise HistoryError(
            f"--since {text}: more than {MAX_SINCE_S // 86400:g} days ({since_s / 86400:g} d); Prometheus keeps 15 d "
            "by default (its --storage.tsdb.retention.time)"
        )
    if since_s > now_s:
        raise HistoryError(f"--since {text} reaches before 1970 (the history ends at {now_s:g} s)")
    return since_s


def _history(args: argparse.Namespace, config: Config, grid: TuneGrid) -> History:
    if args.trace is not None:
        if args.since is not None:
            raise HistoryError("--since applies to a history read from Prometheus; a --trace is read whole")
        return from_trace(args.trace)
    url = args.prometheus_url or config.monitor.prometheus_url
    if not url:
        raise HistoryError("no history: pass --trace FILE, --prometheus-url URL, or set monitor.prometheus_url")
    from daedalus_spark.config import http_url

    try:
        http_url(url)
    except ValueError as exc:
        raise HistoryError(f"Prometheus URL {url[:80]!r}: {exc}") from None
    now = time.time() if args.now is None else args.now
    since_s = _since_s(args.since or "7d", grid.history.step_s, now)
    return from_prometheus(config, url=url, since_s=since_s, step_s=grid.history.step_s, now_s=now, environ=os.environ)


def tasks_for(cands: list[Candidate], plan: Plan, seed: int) -> list[WindowTask]:
    return [
        WindowTask(c.index, c.config.model_dump(mode="python"), w, window_seed(seed, w.index))
        for c in cands
        for w in plan.windows
    ]


def setting_for(job_model: JobModel, peak_per_s: float, config: Config) -> Setting:
    """The job sized for the whole history's peak (not each window's), judged against your recovery and latency
    targets."""
    ctl = config.controller
    return Setting(job_model.model_dump(mode="python"), peak_per_s, ctl.target_recovery_s, ctl.target_latency_s)


class _TuneProgress:
    """The simulations done (`run_tasks`'s callback), as one Progress from the first report on."""

    def __init__(self) -> None:
        self._progress: Progress | None = None
        self._closed = False

    def __call__(self, done: int, total: int) -> None:
        if self._closed:
            return
        if self._progress is None:
            self._progress = Progress(sys.stderr, "tune", total, "simulations")
        self._progress.advance_to(done)
        if done >= total:
            self._progress.close()
            self._closed = True


def _when(history: History, index: int) -> str:
    """A second of the history: UTC time for a Prometheus history, seconds from the start for a trace."""
    if not history.start_unix_s:
        return f"{index} s"
    return datetime.fromtimestamp(history.start_unix_s + index, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _inputs(args: argparse.Namespace, history: History, plan: Plan, job: str, n: int) -> dict[str, Any]:
    t0 = history.start_unix_s
    return {
        "history": history.source,
        "start_unix_s": t0,
        "seconds": len(history.workload_per_s),
        "gaps": [{"start_unix_s": t0 + a, "seconds": b - a} for a, b in history.gaps()],
        "dropped": [{"start_unix_s": t0 + a, "seconds": b - a} for a, b in plan.dropped],
        "notes": list(history.notes),
        "holdout_start_unix_s": t0 + plan.holdout_start_s,
        "holdout_hours": sum(w.seconds for w in plan.part(HOLDOUT)) / 3600.0,
        "select_hours": sum(w.seconds for w in plan.part(SELECT)) / 3600.0,
        "windows": [asdict(w) for w in plan.windows],
        "job": job,
        "grid": str(args.grid),
        "candidates": n,
        "master": args.master,
    }


def tune(args: argparse.Namespace) -> int:
    """Everything is read and checked before --out is created or Spark started."""
    from daedalus_spark.tune.diff import recommended_yaml, unified_diff
    from daedalus_spark.tune.outputs import summary, write_all
    from daedalus_spark.tune.profile import load_profile
    from daedalus_spark.tune.result import decide, tune_result
    from daedalus_spark.tune.spark import run_tasks

    config = _config_for_history(args)
    user_text = _config_text(args.config)
    grid = load_grid(str(args.grid))
    cands = candidates(grid, config, str(args.grid))
    job_model, job = load_profile(args.knowledge, args.job_model, config)
    history = _history(args, config, grid)
    check_gaps(history, grid.history.max_gap_ratio)
    plan = plan_windows(history.stretches(), grid.split)
    for note in history.notes:
        print(f"tune: {note}", file=sys.stderr)
    for a, b in history.gaps():
        print(f"tune: no samples for {b - a} s from {_when(history, a)}: windows end before it", file=sys.stderr)
    setting = setting_for(job_model, history.peak_per_s, config)
    if importlib.util.find_spec("pyspark") is None:
        print(
            "daedalus-spark tune: runs its simulations on Spark, and PySpark is not installed here: "
            "pip install -c constraints.txt '.[spark]' (or `make`, which installs it)",
            file=sys.stderr,
        )
        return 1
    tasks = tasks_for(cands, plan, grid.seed)
    print(f"tune: {len(cands)} candidates x {len(plan.windows)} windows on {args.master}", file=sys.stderr)
    try:
        rows = run_tasks(
            tasks,
            history.workload_per_s,
            setting,
            master=args.master,
            progress=None if args.no_progress else _TuneProgress(),
        )
    except Exception as exc:  # Spark could not start, or its job failed: one line here, the details in Spark's log
        if type(exc).__module__.partition(".")[0] not in ("pyspark", "py4j"):
            raise
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        print(f"daedalus-spark tune: Spark on {args.master} failed: {redact(first.strip())[:300]}", file=sys.stderr)
        return 1
    answer = decide(rows, cands, grid, config)
    recommended = recommended_yaml(user_text, answer.changes)
    diff = unified_diff(user_text, recommended, name=str(args.config or "config.yaml"))
    result = tune_result(
        answer, recommended_yaml=recommended, diff=diff, inputs=_inputs(args, history, plan, job, len(cands))
    )
    write_all(args.out, result, rows)
    text = summary(result) + f"\nwritten: {args.out}/index.html, tune.json, recommended.yaml, recommended.diff"
    print(text, file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(strict_json(result.to_json()))
    return 0
