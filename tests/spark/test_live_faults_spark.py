"""Live faults on one local cluster: an executor JVM killed, the agent unreachable, the driver restarted; exact counts.

The behaviour each test asserts is written down in docs/hardening.md ("Live faults"). One cluster, one job and one
generator serve the module, in file order. The controller is the real sidecar (`Sidecar.run`: the loop on its
scheduler, the scrape monitor on the agent, the agent actuator, the SQLite store, the decision log) on a thread of
this process; the actuator reaches the agent through a gate the test can close (the agent's port as the actuator
sees it). Everything is polled with deadlines; whatever a test starts, it stops.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from daedalus_spark.agent import Agent, AgentConfig, start_agent
from daedalus_spark.clock import SystemClock
from daedalus_spark.config import Config, MonitorConfig
from daedalus_spark.demo.counts import final_counts, read_sink, words_in_log
from daedalus_spark.execute.agent import AgentActuator
from daedalus_spark.httpserve import free_port
from daedalus_spark.loop import StepResult
from daedalus_spark.monitor.promserver import find_binary, start_prometheus
from daedalus_spark.runtime.wiring import assemble_sidecar, make_monitor
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, LocalLogSink
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import request, scrape, total, wait_until
from tests.spark.jobs import decisions, live_config

pytestmark = pytest.mark.spark
TOPIC, QUERY, PARTITIONS = "words", "wordcount_faults", 2
CPUS = 0.5
LINES_PER_S = 150.0  # one executor carries it easily: the controller has no reason of its own to rescale


class Gate(socketserver.ThreadingTCPServer):
    """A TCP forwarder to the agent on a port of its own: closed, that port refuses connections; opened, it listens
    on the same port again."""

    daemon_threads, allow_reuse_address = True, True

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.target = target
        super().__init__(("127.0.0.1", port), _Forward)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)

    def __exit__(self, *_: object) -> None:
        self.close()


class _Forward(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Any = self.server
        with socket.create_connection(server.target, timeout=10) as upstream:
            ends = [self.request, upstream]
            while True:
                readable, _, _ = select.select(ends, [], [], 10)
                if not readable:
                    return
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.request else self.request).sendall(data)


@dataclass
class Driver:
    """The job's driver in this process: session, agent (always on `agent_port`) and query; restartable."""

    cluster: LocalCluster
    root: Path
    agent_port: int
    spark: SparkSession | None = None
    agent: Agent | None = None
    query: StreamingQuery | None = None

    @property
    def agent_url(self) -> str:
        return f"http://127.0.0.1:{self.agent_port}"

    @property
    def app_id(self) -> str:
        assert self.spark is not None
        return str(self.spark.sparkContext.applicationId)

    def start(self, log: LocalLog) -> None:
        self.spark = self.cluster.session("daedalus-test-faults", **{"spark.sql.shuffle.partitions": str(PARTITIONS)})
        self.agent = start_agent(
            self.spark,
            AgentConfig(port=self.agent_port, max_executors=2, poll_s=0.5, initial_target=2),
            latest_offsets={TOPIC: lambda: log.latest_offsets(TOPIC)},
        )
        frame = wordcount.build(self.spark, read_values(self.spark, source="local", topic=TOPIC, path=str(log.root)))
        self.query = write_stream(
            frame,
            sink="files",
            name=QUERY,
            output_mode="update",
            checkpoint=str(self.root / "ckpt"),
            trigger_s=1.0,
            path=str(self.root / "sink"),
        ).start()
        wait_until(lambda: live(self.agent_url) == 2, "2 executors", 120)

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()
        if self.agent is not None:
            self.agent.stop()
        if self.spark is not None:
            self.spark.stop()
        self.query = self.agent = self.spark = None


@dataclass
class Job:
    driver: Driver
    log: LocalLog
    generator: Generator
    feeder: threading.Thread
    exporter_url: str
    root: Path
    gate_port: int = field(default_factory=free_port)


def live(agent_url: str) -> int:
    try:
        return int(request(f"{agent_url}/executors")[1]["current"])
    except OSError:
        return -1


def executor_ids(agent_url: str) -> list[str]:
    return [str(e) for e in request(f"{agent_url}/executors")[1]["executors"]]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    root = tmp_path_factory.mktemp("faults")
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, PARTITIONS)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    generator = Generator(
        PaceKeeper(Pacer(np.full(1800, LINES_PER_S))),
        LocalLogSink(log, TOPIC, PARTITIONS),
        wordcount_line,
        TOPIC,
        tick_s=0.1,
        seed=21,
    )
    feeder = threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True)
    with LocalCluster(workers=2, cpus_per_executor=CPUS, memory_per_worker="768m") as cluster:
        exporter_url = cluster.start_cpu_exporter()
        driver = Driver(cluster, root, free_port())
        try:
            driver.start(log)
            feeder.start()
            yield Job(driver, log, generator, feeder, exporter_url, root)
        finally:
            generator.keeper.pacer = Pacer(np.zeros(0))
            feeder.join(timeout=30)
            driver.stop()


def fault_config(job: Job, name: str, **controller: Any) -> Config:
    """The live test's compressed settings; scrapes the agent directly, actuates through the gate. The rescale budget
    of 3 an hour is earned from empty: no scale-in for 20 minutes, and at 2 = max_scaleout no scale-out, so any
    rescale in these tests would be the fault's doing."""
    base = live_config(job.root, job.driver.agent_url, job.exporter_url)
    settings = {
        "max_rescales_per_hour": 3,
        "knowledge_path": str(job.root / "knowledge.sqlite"),  # shared: later tests start from what earlier learned
        **controller,
    }
    return base.model_copy(
        update={
            "controller": base.controller.model_copy(update=settings),
            "actuator": base.actuator.model_copy(update={"agent_url": f"http://127.0.0.1:{job.gate_port}"}),
            "runtime": base.runtime.model_copy(
                update={"metrics_port": 0, "decision_log": str(job.root / f"{name}.jsonl")}
            ),
        }
    )


class Controlling:
    """The sidecar running on a thread for the duration of a `with`."""

    def __init__(self, config: Config) -> None:
        clock = SystemClock()
        self.config, self.results = config, []  # type: ignore[var-annotated]
        monitor, actuator = make_monitor(config, clock), AgentActuator(config.actuator)
        self.sidecar = assemble_sidecar(config, monitor, actuator, clock=clock, extra_publishers=[self])
        self._thread = threading.Thread(target=self.sidecar.run, kwargs={"handle_signals": False}, daemon=True)

    def __enter__(self) -> Controlling:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.sidecar.stop()
        self._thread.join(timeout=90)
        assert not self._thread.is_alive(), "the sidecar stopped"

    def publish(self, result: StepResult) -> None:
        self.results.append(result)

    def decisions(self) -> list[dict[str, Any]]:
        return decisions(Path(self.config.runtime.decision_log))

    def wait_observed(self, count: int, what: str, timeout_s: float = 90) -> None:
        wanted = sum(r.observation is not None for r in self.results) + count
        wait_until(lambda: sum(r.observation is not None for r in self.results) >= wanted, what, timeout_s, step_s=0.5)

    def wait_ticks(self, count: int, what: str, timeout_s: float = 90) -> None:
        wanted = len(self.decisions()) + count
        wait_until(lambda: len(self.decisions()) >= wanted, what, timeout_s, step_s=0.5)


def actuations(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("actuation")]


def executor_pid(app_id: str, executor_id: str) -> int:
    """The pid of the executor JVM of `app_id` with `executor_id`, found by its command line in /proc. A JVM that is
    starting a program (Hadoop runs `chmod` on every file it writes) has a forked child with the same command line
    for a moment: the JVM is the match whose parent is not a match."""
    matches: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        words = [a.decode(errors="replace") for a in args]
        if "org.apache.spark.executor.CoarseGrainedExecutorBackend" not in words:
            continue
        if _arg(words, "--app-id") == app_id and _arg(words, "--executor-id") == executor_id:
            matches[int(entry.name)] = parent
    jvms = [pid for pid, parent in matches.items() if parent not in matches]
    if len(jvms) != 1:
        raise LookupError(f"{len(jvms)} executor JVMs {executor_id} of {app_id} running, expected one")
    return jvms[0]


def _arg(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words[:-1] else None


def per_executor_capacity(record: dict[str, Any]) -> float | None:
    capacity = record.get("evidence", {}).get("capacity_current_per_s")
    return None if capacity is None else float(capacity) / int(record["current"])


def test_executor_killed_is_replaced_and_not_learned(job: Job) -> None:
    agent_url = job.driver.agent_url
    with Gate(job.gate_port, ("127.0.0.1", job.driver.agent_port)) as _, Controlling(fault_config(job, "kill")) as c:
        wait_until(
            lambda: any(per_executor_capacity(r) for r in c.decisions() if r["current"] == 2),
            "a capacity learned at 2 executors",
            180,
            step_s=1,
        )
        c.wait_ticks(2, "two more ticks")
        before = [p for r in c.decisions() if (p := per_executor_capacity(r)) is not None and r["current"] == 2]
        ticks_before = len(c.decisions())
        victim = max(executor_ids(agent_url), key=int)
        os.kill(executor_pid(job.driver.app_id, victim), signal.SIGKILL)
        wait_until(lambda: victim not in executor_ids(agent_url), f"executor {victim} gone from the agent", 120)
        replaced = lambda: live(agent_url) == 2 and len(set(executor_ids(agent_url)) - {victim}) == 2  # noqa: E731
        wait_until(replaced, "a replacement executor", 180)
        replaced_by = sorted(executor_ids(agent_url))
        c.wait_ticks(4, "four ticks after the replacement")
        knowledge = c.sidecar.loop.controller.knowledge
        after = c.decisions()[ticks_before:]

    for r in after:
        evidence = r.get("evidence", {})
        print(r["time_s"], r["current"], r["target"], r["reason"], evidence.get("problem", ""), end=" ")
        print(evidence.get("capacity_basis"), evidence.get("capacity_current_per_s"))
    print(f"killed {victim}, now {replaced_by}; capacity per executor before {before[-3:]}")
    assert not actuations(c.decisions()), "the count came back by Spark and the agent: the controller sent nothing"
    saw_loss = [r for r in after if r["current"] < 2 or "executors but the scale-out" in str(r.get("evidence"))]
    assert saw_loss, "a tick saw the executor missing"
    assert knowledge.recovery.pending is None and not knowledge.recoveries, "the loss is no recovery of a rescale"
    assert knowledge.last_rescale_s is None, "no cool-down from a loss"
    learned_after = [p for r in after if (p := per_executor_capacity(r)) is not None]
    assert learned_after, "the controller decides again after the replacement"
    # Not learned as a capacity: the survivor's throughput read as the capacity of two would halve it per executor
    # (before, the estimate only settles from above as the load varies).
    assert min(learned_after) >= 0.6 * before[-1], (before, learned_after)


def test_driver_restart_is_a_new_application(job: Job, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="daedalus_spark.controller")
    notices = lambda: [r.getMessage() for r in caplog.records if "new application" in r.getMessage()]  # noqa: E731
    old_app = job.driver.app_id
    gate = Gate(job.gate_port, ("127.0.0.1", job.driver.agent_port))
    with gate, Controlling(fault_config(job, "restart")) as c:
        c.wait_observed(2, "two ticks that observed the first application")
        learned = set(c.sidecar.loop.controller.knowledge.capacity.regressions)
        stopped_s = time.time()
        job.driver.stop()
        job.driver.start(job.log)  # same cluster, same checkpoint, the agent on the same port
        wait_until(lambda: bool(notices()), "the restart noticed", 120)
        noticed_s = float(c.decisions()[-1]["time_s"])
        c.wait_ticks(3, "three ticks on the new application")
        knowledge = c.sidecar.loop.controller.knowledge
    new_app = job.driver.app_id
    records = c.decisions()
    print(old_app, "->", new_app, notices())
    for r in records:
        print(r["time_s"], r["current"], r["target"], r["reason"], r.get("actuation"))
    assert new_app != old_app
    # told by the application id the monitor observed, not by the uptime
    assert any(f"the application id changed from {old_app} to {new_app}" in n for n in notices()), notices()
    assert knowledge.application_id == new_app
    # from the driver's stop until the controller noticed the new application, nothing was sent to either
    assert not [r for r in actuations(records) if stopped_s <= float(r["time_s"]) <= noticed_s]
    assert knowledge.recovery.pending is None, "the restart is no recovery of an old rescale"
    assert learned and learned <= set(knowledge.capacity.regressions), "the capacity per executor is kept"


def test_agent_unreachable_fails_the_actuation_and_the_loop_recovers(job: Job) -> None:
    agent_url = job.driver.agent_url
    assert request(f"{agent_url}/executors", "PUT", {"target": 1})[0] == 200
    wait_until(lambda: live(agent_url) == 1, "1 executor", 90)
    # min_scaleout 2 makes every tick at 1 executor decide a scale-out: the one the closed port must fail
    config = fault_config(job, "unreachable", min_scaleout=2)
    with Controlling(config) as c:
        wait_until(
            lambda: len([r for r in actuations(c.decisions()) if r["actuation"]["outcome"] == "failed"]) >= 2,
            "two failed actuations",
            180,
            step_s=1,
        )
        knowledge = c.sidecar.loop.controller.knowledge
        no_cooldown, no_recovery = knowledge.last_rescale_s is None, knowledge.recovery.pending is None
        failed_until = len(c.decisions())
        with Gate(job.gate_port, ("127.0.0.1", job.driver.agent_port)):
            wait_until(
                # accepted: the agent took the target (the next ticks confirm it: the 2 live below)
                lambda: any(r["actuation"]["outcome"] in ("accepted", "applied") for r in actuations(c.decisions())),
                "an accepted rescale once the agent is back",
                120,
                step_s=1,
            )
            wait_until(lambda: live(agent_url) == 2, "2 executors", 60)
        records = c.decisions()

    failed = [r for r in records[:failed_until] if r.get("actuation")]
    assert failed and all(r["actuation"]["outcome"] == "failed" for r in failed), failed
    assert all(str(job.gate_port) in r["actuation"]["detail"] for r in failed), "the failure names the agent"
    assert no_cooldown and no_recovery, "a failed rescale starts no cool-down and no recovery measurement"
    assert not any(r["reason"] == "cooldown_after_rescale" for r in records[:failed_until]), "ticks kept deciding"


@pytest.mark.skipif(find_binary() is None, reason="no prometheus binary")
def test_prometheus_restart_skips_ticks_and_reads_no_spike(job: Job) -> None:
    agent, exporter = f"127.0.0.1:{job.driver.agent_port}", job.exporter_url
    workdir, port = job.root / "prometheus", free_port()
    server = start_prometheus([agent, exporter], workdir=workdir, scrape_interval_s=1, port=port)
    try:
        base = fault_config(job, "prometheus")
        monitor = MonitorConfig(prometheus_url=server.url, scrape_interval_s=1, step_s=1, rate_window_s=4, timeout_s=3)
        with Controlling(base.model_copy(update={"monitor": monitor})) as c:
            c.wait_observed(3, "3 observed ticks", 120)
            before = [x for r in c.results if r.observation for x in r.observation.workload_per_s]
            server.stop()
            down_from = len(c.results)
            c.wait_ticks(3, "three loop intervals without Prometheus")
            down = c.results[down_from:]
            server = start_prometheus([agent, exporter], workdir=workdir, scrape_interval_s=1, port=port)
            up_from = len(c.results)
            wait_until(lambda: sum(r.observation is not None for r in c.results[up_from:]) >= 3, "3 ticks after", 120)
            after = [x for r in c.results[up_from:] if r.observation for x in r.observation.workload_per_s]
    finally:
        server.stop()
    print(f"workload before {max(before):.0f}/s max, after {max(after):.0f}/s max; down ticks", len(down))
    assert down and all(r.observation is None and r.monitor_error is not None for r in down[1:]), "skipped"
    assert all(
        r.decision.reason.value == "skip_missing_data" and r.decision.evidence.fields().get("monitor_error")
        for r in down[1:]
    )
    assert not any(r.actuation for r in c.results), "nothing actuated"
    # the gap is missing samples to rate(), not a burst: no sample after the restart above what the load ever was
    assert after and max(after) <= max(1.5 * max(before), 2 * LINES_PER_S), (before, after)


def test_every_word_counted_once_across_the_faults(job: Job) -> None:
    job.generator.keeper.pacer = Pacer(np.zeros(0))
    job.feeder.join(timeout=30)
    assert not job.feeder.is_alive(), "the generator stopped"
    agent_url = job.driver.agent_url
    wait_until(lambda: total(scrape(agent_url), "daedalus_spark_lag_records") == 0, "lag back to 0", 180, step_s=1)
    assert job.driver.query is not None
    job.driver.query.processAllAvailable()
    _, words = words_in_log(job.log, TOPIC)
    counted = sum(final_counts(read_sink(job.root / "sink")).values())
    print(f"words appended {words}, counted {counted}")
    assert words > 0 and counted == words
