"""Demo: WordCount on a local standalone cluster, the generator replaying a compressed trace, and `daedalus-spark run`.

Everything it starts is stopped at the end, also on Ctrl-C or failure. `out/demo/` receives the decision log, the
knowledge store, its report, a timeline (CSV + PNG) and a summary.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from daedalus_spark.config import Config, load_config, render_yaml
from daedalus_spark.demo.processes import Processes
from daedalus_spark.demo.timeline import Sampler, plot, write_csv
from daedalus_spark.monitor.files import BUNDLED_TRACES
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus
from daedalus_spark.sparkcluster import LocalCluster, cpu_quota_support
from daedalus_spark.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "deploy" / "demo.yaml"
TRACE = BUNDLED_TRACES["wordcount"]


@dataclass(frozen=True)
class DemoPlan:
    """Sizes measured on this machine (docs/demo.md): 0.25 CPU per executor, a 1-core executor per standalone worker."""

    max_scaleout: int = 4  # standalone workers started, one executor each
    cpus_per_executor: float = 0.25
    partitions: int = 8
    trace: Path = TRACE
    trace_start_s: int = 0
    trace_seconds: int = 10800  # one 3-hour load cycle of the WordCount trace...
    duration_s: float = 480.0  # ...played in 8 minutes
    scale: float = 0.015  # peak 40,000 x 0.015 x 22.5 (compression) = 13,500 lines/s: ~3 of the 4 executors here
    initial_executors: int = 2
    use_prometheus: bool = True

    @property
    def compression(self) -> float:
        return self.trace_seconds / self.duration_s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_processes(condition: Callable[[], bool], what: str, timeout_s: float, processes: Processes) -> None:
    """Wait for `condition`, failing at once when one of the demo's processes has exited."""

    def none_exited() -> None:
        for name, p in processes.started:
            if p.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {p.returncode} while waiting for {what}; "
                    f"see {processes.log_dir / (name + '.log')}"
                )

    wait_until(condition, what, timeout_s, interval_s=0.5, still_alive=none_exited)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - loopback
            return bool(r.status == 200)
    except OSError:
        return False


def controller_config(
    base: Config,
    out: Path,
    *,
    agent_url: str,
    scrape_urls: list[str],
    prometheus_url: str,
    metrics_port: int,
    max_scaleout: int,
) -> Config:
    """The demo config with this run's paths, ports and URLs filled in."""
    return base.model_copy(
        update={
            "controller": base.controller.model_copy(
                update={"knowledge_path": str(out / "knowledge.sqlite"), "max_scaleout": max_scaleout}
            ),
            "monitor": base.monitor.model_copy(update={"scrape_urls": scrape_urls, "prometheus_url": prometheus_url}),
            "actuator": base.actuator.model_copy(update={"agent_url": agent_url}),
            "runtime": base.runtime.model_copy(
                update={"decision_log": str(out / "decisions.jsonl"), "metrics_port": metrics_port}
            ),
        }
    )


def run_demo(out: Path, plan: DemoPlan = DemoPlan(), config_path: Path = DEMO_CONFIG, log: Any = print) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("knowledge.sqlite", "decisions.jsonl"):
        (out / stale).unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix="daedalus-demo-"))
    processes = Processes(out)
    for name in ("wordcount", "generator", "controller"):
        (out / f"{name}.log").unlink(missing_ok=True)
    base = load_config(config_path)
    cluster = LocalCluster(
        workers=plan.max_scaleout, cpus_per_executor=plan.cpus_per_executor, memory_per_worker="768m"
    )
    prometheus: PrometheusServer | None = None
    sampler: Sampler | None = None
    started = time.monotonic()
    try:
        log(
            f"demo: starting {plan.max_scaleout} Spark workers ({plan.cpus_per_executor:g} CPU each; cgroup quota: "
            f"{cpu_quota_support() or 'none'})"
        )
        cluster.start()
        exporter_url = cluster.start_cpu_exporter()
        agent_port, controller_port = free_port(), free_port()
        agent = f"http://127.0.0.1:{agent_port}"
        processes.python(
            "wordcount",
            "daedalus_spark.workloads.wordcount",
            "--master",
            cluster.master_url,
            "--log-dir",
            str(work / "log"),
            "--partitions",
            str(plan.partitions),
            "--sink",
            "noop",
            "--checkpoint",
            str(work / "checkpoint"),
            "--agent-port",
            str(agent_port),
            "--config",
            str(config_path),
            "--max-executors",
            str(plan.max_scaleout),
            "--initial-executors",
            str(plan.initial_executors),
            "--conf",
            "spark.executor.cores=1",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.ui.showConsoleProgress=false",
        )
        log("demo: WordCount starting with the agent ...")
        wait_for_processes(lambda: answers(f"{agent}/healthz"), "the agent", 180, processes)
        prometheus_url = ""
        if plan.use_prometheus and find_binary() is not None:
            targets = [u.removeprefix("http://").removesuffix("/metrics") for u in (f"{agent}/metrics", exporter_url)]
            prometheus = start_prometheus([*targets, f"127.0.0.1:{controller_port}"], workdir=work / "prometheus")
            prometheus_url = prometheus.url
        config = controller_config(
            base,
            out,
            agent_url=agent,
            scrape_urls=[f"{agent}/metrics", exporter_url],
            prometheus_url=prometheus_url,
            metrics_port=controller_port,
            max_scaleout=plan.max_scaleout,
        )
        (out / "demo-config.yaml").write_text(render_yaml(config))
        processes.python(
            "generator",
            "daedalus_spark.workloads.generator",
            "wordcount",
            "--trace",
            str(plan.trace),
            "--start-s",
            str(plan.trace_start_s),
            "--duration-s",
            str(plan.trace_seconds),
            "--compression",
            f"{plan.compression:.6g}",
            "--scale",
            f"{plan.scale:g}",
            "--log-dir",
            str(work / "log"),
            "--partitions",
            str(plan.partitions),
        )
        processes.start(
            "controller", [sys.executable, "-m", "daedalus_spark.cli", "run", "--config", str(out / "demo-config.yaml")]
        )
        sampler = Sampler(f"{agent}/metrics").start()
        log(
            f"demo: load cycle of {plan.duration_s:.0f} s running; monitor: "
            f"{'Prometheus ' + prometheus_url if prometheus_url else 'embedded scraper'}; "
            f"controller metrics on 127.0.0.1:{controller_port}; logs in {out}"
        )
        _wait_out(plan.duration_s, processes, log)
    except KeyboardInterrupt:
        log("demo: interrupted; stopping everything")
    finally:
        if sampler is not None:
            sampler.stop()
        processes.stop_all()
        if prometheus is not None:
            prometheus.stop()
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    return _finish(out, plan, sampler.samples if sampler else [], time.monotonic() - started, log)


def _wait_out(duration_s: float, processes: Processes, log: Any) -> None:
    deadline = time.monotonic() + duration_s
    next_note = time.monotonic() + 60
    while time.monotonic() < deadline:
        for name, p in processes.started:
            if p.poll() is not None and name != "generator":
                raise RuntimeError(f"{name} exited with {p.returncode}; see {processes.log_dir / (name + '.log')}")
        if time.monotonic() >= next_note:
            log(f"demo: {deadline - time.monotonic():.0f} s to go")
            next_note += 60
        time.sleep(1)


def _finish(out: Path, plan: DemoPlan, samples: list[Any], wall_s: float, log: Any) -> int:
    decisions = (
        [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines() if line.strip()]
        if (out / "decisions.jsonl").exists()
        else []
    )
    if samples:
        write_csv(samples, out / "timeline.csv")
        plot(samples, out / "timeline.png", f"daedalus-spark demo: WordCount, {plan.max_scaleout} executors max")
    summary = summarize(plan, samples, decisions, wall_s)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    report = _report(out)
    log(format_summary(summary) + (f"\nreport: {report}" if report else ""))
    return 0 if summary["scale_outs"] and summary["scale_ins"] else 1


def summarize(plan: DemoPlan, samples: list[Any], decisions: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    t = np.array([s.t_s for s in samples]) if samples else np.zeros(0)
    live = np.array([s.executors for s in samples]) if samples else np.zeros(0)
    lag = np.array([s.lag_records for s in samples]) if samples else np.zeros(0)
    ok = np.isfinite(live)
    executor_s = float(np.sum(live[ok][:-1] * np.diff(t[ok]))) if ok.sum() > 1 else 0.0
    span_s = float(t[ok][-1] - t[ok][0]) if ok.sum() > 1 else 0.0
    applied = [d for d in decisions if d.get("actuation") and d["actuation"]["outcome"] in ("applied", "unconfirmed")]
    reasons: dict[str, int] = {}
    for d in decisions:
        reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
    finite_lag = lag[np.isfinite(lag)]
    return {
        "wall_s": round(wall_s, 1),
        "ticks": len(decisions),
        "decisions_by_reason": reasons,
        "scale_outs": sum(1 for d in applied if d["target"] > d["current"]),
        "scale_ins": sum(1 for d in applied if d["target"] < d["current"]),
        "rescales_failed_or_refused": sum(
            1 for d in decisions if d.get("actuation") and d["actuation"]["outcome"] in ("failed", "refused")
        ),
        "executor_seconds": round(executor_s, 1),
        "static_max_executor_seconds": round(plan.max_scaleout * span_s, 1),
        "executor_seconds_vs_static_max": round(executor_s / (plan.max_scaleout * span_s), 3) if span_s else None,
        "lag_p95_records": round(float(np.percentile(finite_lag, 95)), 1) if finite_lag.size else None,
        "lag_max_records": round(float(finite_lag.max()), 1) if finite_lag.size else None,
        "executors_over_time": [
            [round(float(a), 1), int(b)] for a, b in zip(t[ok], live[ok], strict=True) if not math.isnan(b)
        ][::15],
    }


def format_summary(s: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"demo: {s['ticks']} ticks in {s['wall_s']:.0f} s; "
            f"scale-outs {s['scale_outs']}, scale-ins {s['scale_ins']}, "
            f"failed/refused {s['rescales_failed_or_refused']}",
            f"  decisions: {', '.join(f'{k} {v}' for k, v in sorted(s['decisions_by_reason'].items()))}",
            f"  executor-seconds {s['executor_seconds']:.0f} vs {s['static_max_executor_seconds']:.0f} static at the "
            f"largest scale-out ({s['executor_seconds_vs_static_max']})",
            f"  consumer lag p95 {s['lag_p95_records']} records, max {s['lag_max_records']}",
        ]
    )


def _report(out: Path) -> str:
    """The knowledge report of part 7, when the report command is available."""
    try:
        from daedalus_spark.report.knowledge_report import write_report
    except ImportError:
        return ""
    if not (out / "knowledge.sqlite").exists():
        return ""
    return str(write_report(out / "knowledge.sqlite", out, load_config(out / "demo-config.yaml")))
