"""Demo: WordCount on a local standalone cluster reading a local Kafka broker (or the local log: `source local`),
the generator replaying a compressed trace into it, and an autoscaler.

The autoscaler is ours (`daedalus-spark run`) by default, or one a Spark user runs today for the live comparison
(benchmarks/live_compare.py): Spark's dynamic allocation switched on in the job, the DStreams batch-duration rule as
the loop's `batch_ratio` planner, or a static count. Everything it starts is stopped at the end, also on Ctrl-C or
failure. `out/demo/` receives the decision log, the knowledge store, its report, a timeline (CSV + PNG) and a summary.
"""

from __future__ import annotations

import errno
import json
import math
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daedalus_spark import metricnames as names
from daedalus_spark.config import Config, ConfigError, load_config, load_model, render_yaml
from daedalus_spark.demo.counts import WordCounts, kafka_word_counts, word_counts
from daedalus_spark.demo.history import PROMTOOL_TIMEOUT_S, topic_history
from daedalus_spark.demo.plan import AUTOSCALERS as AUTOSCALERS
from daedalus_spark.demo.plan import DEMO_CONFIG as DEMO_CONFIG
from daedalus_spark.demo.plan import SOURCES as SOURCES
from daedalus_spark.demo.plan import TRACE as TRACE
from daedalus_spark.demo.plan import DemoPlan as DemoPlan
from daedalus_spark.demo.processes import INTERRUPTED, Processes, sigterm_interrupts
from daedalus_spark.demo.summary import LiveRun, failed_checks, format_summary, summarize
from daedalus_spark.demo.timeline import OFFSETS, QUERY_RECORDS, Sampler, plot, totals, write_csv
from daedalus_spark.httpserve import free_port
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.monitor.native import NATIVE_QUERIES
from daedalus_spark.monitor.promserver import PrometheusServer, find_binary, start_prometheus, write_history
from daedalus_spark.progress import Progress
from daedalus_spark.report.outfile import replace_file
from daedalus_spark.sparkcluster import LocalCluster, cpu_quota_support
from daedalus_spark.waiting import wait_until

TOPIC = "wordcount"  # the pipeline's and the generator's default topic
GROUP = "daedalus-wordcount"  # the consumer group the job commits its batches' end offsets for (Kafka)
WARMUP_WRITE_S = 300.0  # the generator writing the warm-up lines (a second or two)
WARMUP_BATCH_S = 900.0  # the query's first batch on cold executors (25-119 s measured, docs/demo.md)


def autoscaler_job_args(plan: DemoPlan) -> list[str]:
    """The WordCount job's arguments that hand its executors to the autoscaler.

    spark-da: Spark's dynamic allocation as a user switches it on without an external shuffle service (shuffle
    tracking), bounded like ours, its other settings Spark's defaults except the idle timeout, compressed like the
    demo's loop (60 s -> 10 s); the agent then refuses targets (metrics only). static: the largest scale-out, held.
    The others: the agent sets the initial count and the controller the rest."""
    if plan.autoscaler == "spark-da":
        settings = {
            "enabled": "true",
            "shuffleTracking.enabled": "true",
            "minExecutors": "1",
            "maxExecutors": str(plan.max_scaleout),
            "initialExecutors": str(plan.initial_executors),
            "executorIdleTimeout": "10s",
        }
        return [arg for key, value in settings.items() for arg in ("--conf", f"spark.dynamicAllocation.{key}={value}")]
    initial = (plan.static_executors or plan.max_scaleout) if plan.autoscaler == "static" else plan.initial_executors
    return ["--initial-executors", str(initial)]


def wait_for_processes(
    condition: Callable[[], bool], what: str, timeout_s: float, processes: Processes, may_exit: tuple[str, ...] = ()
) -> None:
    """Wait for `condition`, failing at once when one of the demo's processes (but `may_exit`) has exited."""

    def none_exited() -> None:
        for name, p in processes.started:
            if p.poll() is not None and name not in may_exit:
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


def run_demo(
    out: Path,
    plan: DemoPlan = DemoPlan(),  # noqa: B008 - a frozen dataclass, never changed
    config_path: Path = DEMO_CONFIG,
    log: Any = print,
) -> int:
    if plan.autoscaler not in AUTOSCALERS:
        raise ValueError(f"autoscaler {plan.autoscaler!r}: expected one of {', '.join(AUTOSCALERS)}")
    if plan.source not in SOURCES:
        raise ValueError(f"source {plan.source!r}: expected one of {', '.join(SOURCES)}")
    base = load_config(config_path)  # everything checked before anything in `out` is touched
    stale = _earlier_demo_outputs(out)
    out.mkdir(parents=True, exist_ok=True)
    for path in stale:
        path.unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix="daedalus-demo-"))
    running = _Running(
        Processes(out),
        LocalCluster(workers=plan.max_scaleout, cpus_per_executor=plan.cpus_per_executor, memory_per_worker="768m"),
        LocalKafka() if plan.source == "kafka" else None,
    )
    load_ended_s, drained, counts, interrupted = math.inf, False, None, False
    started = time.monotonic()
    with sigterm_interrupts():
        try:
            sampler = _start_everything(out, plan, config_path, base, work, running, log)
            _wait_out(plan.duration_s, running.processes, log)
            load_ended_s = time.monotonic() - sampler.started
            drained = _drain(sampler, plan.drain_s, running.processes, log)
            if drained:
                counts = _counts(running, work)
        except KeyboardInterrupt:
            interrupted = True
            log("demo: interrupted; stopping everything")
        finally:
            running.stop()
            shutil.rmtree(work, ignore_errors=True)
    samples = running.sampler.samples if running.sampler else []
    lag_check = running.lag_check.summary() if running.lag_check is not None else None
    run = LiveRun(samples, load_ended_s, drained, running.agent_answer, counts, lag_check)
    code = _finish(out, plan, run, time.monotonic() - started, log, target_recovery_s=base.controller.target_recovery_s)
    return INTERRUPTED if interrupted else code


def _earlier_demo_outputs(out: Path) -> list[Path]:
    """The files of an earlier demo in `out` to start afresh. The knowledge store and decision log only when that
    demo's config names them (the demo wrote them); any other such file is refused, never deleted."""
    logs = [out / name for name in ("wordcount.log", "generator.log", "controller.log")]
    kept = [out / "knowledge.sqlite", out / "decisions.jsonl"]
    if not any(p.exists() or p.is_symlink() for p in kept):
        return logs
    try:
        # Only its paths are read: load_config would warn about the planning of a config about to be replaced.
        earlier = load_model(Config, out / "demo-config.yaml")
        ours = {Path(p).resolve() for p in (earlier.controller.knowledge_path, earlier.runtime.decision_log)}
    except (ConfigError, OSError):
        ours = set()
    for path in kept:
        if (path.exists() or path.is_symlink()) and (path.is_symlink() or path.resolve() not in ours):
            raise FileExistsError(
                errno.EEXIST,
                "not written by an earlier demo in this directory: move it away or pass another --out",
                str(path),
            )
    return logs + kept


@dataclass
class _Running:
    """What a demo has started, for stopping it all whatever happens; the agent's first answer on /executors."""

    processes: Processes
    cluster: LocalCluster
    kafka: LocalKafka | None = None
    prometheus: PrometheusServer | None = None
    exporter: Any = None
    lag_check: Any = None  # a LagCheck when the job reads Kafka and Prometheus runs
    sampler: Sampler | None = None
    agent_answer: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
        if self.lag_check is not None:
            self.lag_check.stop()
        self.processes.stop_all()
        if self.prometheus is not None:
            self.prometheus.stop()
        if self.exporter is not None:
            self.exporter.shutdown()
            self.exporter.server_close()
        self.cluster.stop()
        if self.kafka is not None:
            self.kafka.stop()


def _counts(running: _Running, work: Path) -> WordCounts:
    """The words produced, read back from the topic (or the local log), against the words WordCount counted."""
    if running.kafka is not None:
        return kafka_word_counts(running.kafka.bootstrap, TOPIC, work / "counts")
    return word_counts(work / "log", TOPIC, work / "counts")


def _start_kafka(plan: DemoPlan, running: _Running, log: Any) -> list[str]:
    """The broker with the topic, and kafka-exporter's series for it; returns the exporter's scrape target."""
    if running.kafka is None:
        return []
    from daedalus_spark.kafkacluster import exporter

    log(f"demo: starting a local Kafka {running.kafka.kafka_version} broker (KRaft)")
    running.kafka.start()
    running.kafka.create_topic(TOPIC, plan.partitions)
    running.exporter = exporter.serve(running.kafka.bootstrap, [TOPIC], [GROUP], 0)
    return [f"127.0.0.1:{running.exporter.server_port}"]


def _start_everything(
    out: Path, plan: DemoPlan, config_path: Path, base: Config, work: Path, running: _Running, log: Any
) -> Sampler:
    """The cluster, the job with the agent, Prometheus if used, the generator and the controller; returns the
    sampler of the agent's metrics, started."""
    controlled = plan.autoscaler in ("daedalus", "batch-ratio")
    kafka_targets = _start_kafka(plan, running, log)
    log(
        f"demo: starting {plan.max_scaleout} Spark workers ({plan.cpus_per_executor:g} CPU each; cgroup quota: "
        f"{cpu_quota_support() or 'none'})"
    )
    running.cluster.start()
    exporter_url = running.cluster.start_cpu_exporter()
    agent_port, controller_port = free_port(), free_port()
    agent = f"http://127.0.0.1:{agent_port}"
    processes = running.processes
    if plan.warmup_s > 0:
        args = _generator_args(plan, work, running.kafka, warmup=True)
        processes.run("warmup", "daedalus_spark.workloads.generator", "wordcount", *args, timeout_s=WARMUP_WRITE_S)
    processes.python(
        "wordcount", "daedalus_spark.workloads.wordcount", *_job_args(plan, running, work, agent_port, config_path)
    )
    log("demo: WordCount starting with the agent ...")
    wait_for_processes(lambda: answers(f"{agent}/healthz"), "the agent", 180, processes)
    if plan.warmup_s > 0:
        log(f"demo: the query's first batch works off {plan.warmup_s:g} s of load on cold executors (warm-up) ...")
        wait_for_processes(lambda: _worked_off(f"{agent}/metrics"), "the warm-up batch", WARMUP_BATCH_S, processes)
    broker = BrokerOffsets(running.kafka.bootstrap) if running.kafka is not None else None
    end_offsets = list(broker.latest_offsets(TOPIC).values()) if broker is not None else None
    # The load first: the topic's earlier cycles (if any) end where it begins.
    processes.python(
        "generator", "daedalus_spark.workloads.generator", "wordcount", *_generator_args(plan, work, running.kafka)
    )
    load_started_s = time.time()
    prometheus_url = ""
    if controlled and plan.use_prometheus and find_binary() is not None:
        if end_offsets is not None and plan.history_cycles > 0:
            lines = topic_history(
                plan.pacer(),
                topic=TOPIC,
                partitions=plan.partitions,
                cycles=plan.history_cycles,
                end_s=math.floor(load_started_s),
                end_offsets=end_offsets,
            )
            write_history(lines, work / "prometheus", timeout_s=PROMTOOL_TIMEOUT_S)
            log(f"demo: the topic's {plan.history_cycles} earlier load cycles written into Prometheus's history")
        targets = [u.removeprefix("http://").removesuffix("/metrics") for u in (f"{agent}/metrics", exporter_url)]
        running.prometheus = start_prometheus(
            [*targets, *kafka_targets, f"127.0.0.1:{controller_port}"], workdir=work / "prometheus"
        )
        prometheus_url = running.prometheus.url
    config = controller_config(
        base,
        out,
        agent_url=agent,
        scrape_urls=[f"{agent}/metrics", exporter_url],
        prometheus_url=prometheus_url,
        metrics_port=controller_port,
        max_scaleout=plan.max_scaleout,
    )
    if kafka_targets and prometheus_url:
        # The workload from kafka-exporter's offsets, as monitor.metrics native reads it: the broker's at every
        # scrape, and the topic's earlier cycles (the agent's offsets move only when a batch starts).
        update = {"query_workload": NATIVE_QUERIES["workload"].replace("$source_selector", f'topic="{TOPIC}"')}
        config = config.model_copy(update={"monitor": config.monitor.model_copy(update=update)})
    if plan.autoscaler == "batch-ratio":
        config = config.model_copy(
            update={"controller": config.controller.model_copy(update={"planner": "batch_ratio"})}
        )
    replace_file(out / "demo-config.yaml", render_yaml(config).encode())
    if controlled:
        processes.start(
            "controller", [sys.executable, "-m", "daedalus_spark.cli", "run", "--config", str(out / "demo-config.yaml")]
        )
    running.sampler = sampler = Sampler(f"{agent}/metrics").start()
    if broker is not None and running.prometheus is not None:
        from daedalus_spark.demo.lagcheck import LagCheck

        trigger_s = config.capacity.trigger_interval_s
        running.lag_check = LagCheck(running.prometheus.url, broker, TOPIC, GROUP, trigger_s=trigger_s).start()
    running.agent_answer = _agent_status(agent, processes)
    log(
        f"demo: load cycle of {plan.duration_s:.0f} s running; autoscaler {plan.autoscaler}"
        + (
            f"; monitor: {'Prometheus ' + prometheus_url if prometheus_url else 'embedded scraper'}; "
            f"controller metrics on 127.0.0.1:{controller_port}"
            if controlled
            else f"; the agent: {_mode(running.agent_answer)}"
        )
        + f"; logs in {out}"
    )
    return sampler


def _source_args(work: Path, kafka: LocalKafka | None) -> list[str]:
    if kafka is None:
        return ["--log-dir", str(work / "log")]
    return ["--source", "kafka", "--bootstrap-servers", kafka.bootstrap]


def _job_args(plan: DemoPlan, running: _Running, work: Path, agent_port: int, config_path: Path) -> list[str]:
    kafka = [] if running.kafka is None else ["--group", GROUP]
    return [
        "--master",
        running.cluster.master_url,
        *_source_args(work, running.kafka),
        *kafka,
        "--partitions",
        str(plan.partitions),
        "--sink",
        "files",
        "--sink-path",
        str(work / "counts"),
        "--checkpoint",
        str(work / "checkpoint"),
        "--agent-port",
        str(agent_port),
        "--config",
        str(config_path),
        "--max-executors",
        str(plan.max_scaleout),
        "--record-cost-rounds",
        str(plan.record_cost_rounds),
        *autoscaler_job_args(plan),
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.ui.showConsoleProgress=false",
    ]


def _generator_args(plan: DemoPlan, work: Path, kafka: LocalKafka | None, *, warmup: bool = False) -> list[str]:
    """The load cycle; with `warmup`, the plan's `warmup_s` of the load before it, written within a second."""
    if warmup:
        seconds = min(round(plan.warmup_s * plan.compression), plan.trace_start_s)
        start, compression = plan.trace_start_s - seconds, float(seconds)
    else:
        start, seconds, compression = plan.trace_start_s, plan.trace_seconds, plan.compression
    return [
        "--trace",
        str(plan.trace),
        "--start-s",
        str(start),
        "--duration-s",
        str(seconds),
        "--compression",
        f"{compression:.6g}",
        "--scale",
        f"{plan.scale:g}",
        *(["--sink", "kafka", "--bootstrap-servers", kafka.bootstrap] if kafka else ["--log-dir", str(work / "log")]),
        "--partitions",
        str(plan.partitions),
    ]


def _mode(answer: dict[str, Any]) -> str:
    if "refusing" not in answer:
        return "no answer on /executors"
    return str(answer["refusing"] or "takes targets")


def _agent_status(agent_url: str, processes: Processes) -> dict[str, Any]:
    """The agent's answer on /executors (its mode), waited for: a driver on a busy machine may take a while to give
    it; {} when it never does (the summary then shows no mode)."""
    answer: dict[str, Any] = {}

    def answered() -> bool:
        nonlocal answer
        try:
            with urllib.request.urlopen(f"{agent_url}/executors", timeout=30) as r:  # noqa: S310 - loopback
                got = json.load(r)
        except (OSError, ValueError):
            return False
        answer = got if isinstance(got, dict) else {}
        return "refusing" in answer

    try:
        wait_for_processes(answered, "the agent's mode on /executors", 180, processes)
    except TimeoutError:
        return {}
    return answer


def _worked_off(agent_metrics_url: str) -> bool:
    """Whether the query has committed a batch and read every record the source holds (the warm-up's)."""
    try:
        with urllib.request.urlopen(agent_metrics_url, timeout=5) as r:  # noqa: S310 - loopback
            now = totals(r.read().decode())
    except (OSError, ValueError):
        return False  # the driver is busy in its first batch
    read = now.get(QUERY_RECORDS, 0.0)
    return read > 0 and now.get(names.LAG_RECORDS) == 0 and read >= now.get(OFFSETS, math.inf)


def _drain(sampler: Sampler, drain_s: float, processes: Processes, log: Any) -> bool:
    """After the load cycle: wait until the job has read every record appended (lag 0, and as many read as
    appended; the exact check is on the words counted, `demo/counts.py`)."""

    def worked_off() -> bool:  # records read (numInputRows) may exceed records in: a stage retry reads again
        last = sampler.samples[-1] if sampler.samples else None
        return last is not None and last.lag_records == 0 and last.records_out >= last.records_in

    try:
        wait_for_processes(worked_off, "the lag to be worked off", drain_s, processes, may_exit=("generator",))
    except TimeoutError:
        log(f"demo: the lag was not worked off within {drain_s:.0f} s after the load cycle")
        return False
    return True


def _wait_out(duration_s: float, processes: Processes, log: Any) -> None:
    """The load cycle's time, watching that every process stays up: a bar with its ETA on a terminal, a note a minute
    in a log."""
    start = time.monotonic()
    deadline = start + duration_s
    next_note = start + 60
    bar = Progress(sys.stderr, "demo: load cycle", round(duration_s), "s") if sys.stderr.isatty() else None
    try:
        while time.monotonic() < deadline:
            for name, p in processes.started:
                if p.poll() is not None and name != "generator":
                    raise RuntimeError(f"{name} exited with {p.returncode}; see {processes.log_dir / (name + '.log')}")
            if bar is not None:
                bar.advance_to(round(time.monotonic() - start))
            elif time.monotonic() >= next_note:
                log(f"demo: {deadline - time.monotonic():.0f} s to go")
                next_note += 60
            time.sleep(1)
    finally:
        if bar is not None:
            bar.close()


def _finish(out: Path, plan: DemoPlan, run: LiveRun, wall_s: float, log: Any, *, target_recovery_s: float) -> int:
    decisions = (
        [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines() if line.strip()]
        if (out / "decisions.jsonl").exists()
        else []
    )
    if run.samples:
        write_csv(run.samples, out / "timeline.csv")
        plot(
            run.samples,
            out / "timeline.png",
            f"daedalus-spark demo: WordCount, {plan.max_scaleout} executors max, autoscaler {plan.autoscaler}",
        )
    summary = summarize(plan, run, decisions, wall_s)
    replace_file(out / "summary.json", json.dumps(summary, indent=2, allow_nan=False).encode())
    report = _report(out) if plan.autoscaler in ("daedalus", "batch-ratio") else ""
    log(format_summary(summary) + (f"\nreport: {report}" if report else ""))
    failed = failed_checks(summary, target_recovery_s=target_recovery_s)
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


def _report(out: Path) -> str:
    """The knowledge report of part 7, when the report command is available."""
    try:
        from daedalus_spark.report.knowledge_report import write_report
    except ImportError:
        return ""
    if not (out / "knowledge.sqlite").exists():
        return ""
    return str(write_report(out / "knowledge.sqlite", out, load_config(out / "demo-config.yaml")))
