"""End to end on real Spark, through the JVM driver plugin: `daedalus-spark run` scales a PySpark job on Spark 4.x and a
Java job on Spark 3.5 out and back in, with the executor counts read behind its back from the driver's
REST API and every record counted once.

Per case: a local standalone cluster of 2 workers of that Spark line, a job started by that line's spark-submit
with the plugin (`spark.plugins`) and Spark's Kafka connector of the same version, reading a topic of the one local
Kafka broker. Each record holds its task for RECORD_MS (waiting, not computing: the 2 cores stay free for the
driver, the broker and the controller), so one executor carries about 1000 / RECORD_MS records/s and two about
twice that. The controller sees the job only through the plugin's /metrics (busy time as utilization) and sets the
count only through its PUT /executors; its largest scale-out is the topic's partition count (2), read from the
partitions the plugin lists. A generator replays low -> high -> low.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark")

from daedalus_spark.buildcache import JarsMissing
from daedalus_spark.config import render_yaml
from daedalus_spark.httpserve import free_port
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.jars import connector_jars
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.sparkcluster import LocalCluster, kafka_count_job
from daedalus_spark.sparkcluster import plugin as jvm
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from tests.spark.helpers import answering, driver_live, request, scrape, total, wait_until
from tests.spark.jobs import PARTITIONS, Runtime, applied, decisions, live_config

pytestmark = pytest.mark.spark
TOKEN = "loop-s3cret"
QUERY = "kafkacount"
MAX_EXECUTORS = 2
RECORD_MS = 1.5
LOW, HIGH = 120.0, 900.0  # records/s: one executor carries LOW easily and HIGH not at all; two carry HIGH
# Each level holds until what the test waits for happens, with a deadline: the controller settled at 1 executor
# under the low load, a scale-out under the high load, a scale-in after the load fell.
SETTLE_S, HIGH_MAX_S, TAIL_MAX_S = 480, 480, 480
HOLD_MAX_S = 3600  # longer than any of those
START_S = 240.0  # a driver JVM, two workers, the first batch, or the runtime's first tick, on a busy 2-core machine
SCALE_S = 180.0  # a decommissioned executor takes ~30 s to leave; the plugin's reconcile waits 30 s first


@dataclass(frozen=True)
class Case:
    line: str  # the Spark line: "3.5" or "4"
    job: str  # "java" (the Maven-built example) or "python"

    @property
    def id(self) -> str:
        return f"spark{self.line}-{self.job}"

    @property
    def scale_in(self) -> str:
        return "decommission" if self.job == "java" else "kill"  # both ways of leaving, one per language


# Each Spark line once and each job once (3-11 min a case on a 2-core machine): the other two pairings differ only
# in what test_agent_plugin_spark.py already runs for every pairing, the plugin's scaling with exact counts.
CASES = [Case("4", "python"), Case("3.5", "java")]


class Load:
    """The generator's rate, switched now and held: the pacer's seconds so far are kept, the rest is `level`."""

    def __init__(self, level: float) -> None:
        self.rates, self.since = np.full(HOLD_MAX_S, level), time.monotonic()
        self.keeper = PaceKeeper(Pacer(self.rates))

    def set(self, level: float) -> float:
        """Switch to `level`; returns the wall time of the switch."""
        done = int(time.monotonic() - self.since) + 1
        self.rates = np.concatenate([self.rates[:done], np.full(HOLD_MAX_S, level)])
        self.keeper.pacer = Pacer(self.rates)
        return time.time()

    def end(self) -> None:
        self.keeper.pacer = Pacer(np.zeros(0))  # nothing more is due: the generator ends at its next tick


def holds_one(ticks: list[dict[str, object]]) -> bool:
    """The last three ticks that decided on data kept 1 executor with a capacity at 1 learned, and nothing since
    moved it. A tick skipped for a late scrape (a busy machine) neither counts nor breaks the run."""
    learned = [i for i, d in enumerate(ticks) if "capacity_current_per_s" in d["evidence"]]  # type: ignore[operator]
    last = learned[-3:]
    return (
        len(last) == 3
        and all(ticks[i]["current"] == ticks[i]["target"] == 1 for i in last)
        and all(d["target"] in (0, 1) for d in ticks[last[-1] :])
    )


def shown(ticks: list[dict[str, object]], last: int = 60) -> str:
    """The last ticks, one a line, for a failure message (CI keeps the message, not always the captured output)."""
    lines = [
        f"{float(d['time_s']):.1f} {d['current']}->{d['target']} {d['reason']} "  # type: ignore[arg-type]
        f"capacity={d['evidence'].get('capacity_current_per_s')} "  # type: ignore[attr-defined]
        f"load={d['evidence'].get('workload_avg_per_s')}"  # type: ignore[attr-defined]
        for d in ticks[-last:]
    ]
    return f"{len(ticks)} ticks, the last {len(lines)}:\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def kafka() -> Iterator[LocalKafka]:
    broker = LocalKafka().start()
    try:
        yield broker
    finally:
        broker.stop()


@dataclass
class Job:
    case: Case
    submitted: jvm.SubmittedJob
    topic: str
    output: Path


def start_job(case: Case, kafka: LocalKafka, master: str, work: Path) -> Job:
    try:
        home, jar = jvm.spark_home(case.line), jvm.plugin_jar(case.line)
        line = jvm.spark_lines()[case.line]
        kafka_jars = connector_jars(home / "jars", line.spark)
    except JarsMissing as exc:
        pytest.fail(str(exc))
    topic, output, port = f"count-{case.id.replace('.', '')}", work / "counts", free_port()
    kafka.create_topic(topic, PARTITIONS)
    conf = jvm.plugin_conf(port=port, max_executors=MAX_EXECUTORS, initialTarget="1", scaleIn=case.scale_in)
    if case.scale_in == "decommission":
        conf.update(jvm.DECOMMISSION_CONF)
    conf["spark.sql.shuffle.partitions"] = str(PARTITIONS)
    env = {"DAEDALUS_AGENT_TOKEN": TOKEN, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    common = [str(work / "checkpoint"), str(work / "stop"), str(output), str(RECORD_MS)]
    if case.job == "java":
        app = ["--class", "daedalus.spark.example.KafkaCount", str(jar), QUERY, kafka.bootstrap, topic, *common]
    else:
        app = [kafka_count_job.__file__, "--query", QUERY, "--bootstrap", kafka.bootstrap, "--topic", topic]
        app += ["--checkpoint", common[0], "--stop-file", common[1], "--output", common[2], "--record-ms", common[3]]
        if case.line == "3.5":  # that line's own PySpark ahead of the installed one
            env["PYTHONPATH"] = str(jvm.runtime_dir())
    submitted = jvm.submit(
        home, app, master=master, workdir=work, conf=conf, jars=[jar, *kafka_jars], env=env, agent_port=port
    )
    return Job(case, submitted, topic, output)


@pytest.fixture(params=CASES, ids=lambda c: c.id)
def job(request: pytest.FixtureRequest, kafka: LocalKafka, tmp_path: Path) -> Iterator[Job]:
    case: Case = request.param
    with LocalCluster(workers=MAX_EXECUTORS, memory_per_worker="1g", home=str(jvm.spark_home(case.line))) as cluster:
        started = start_job(case, kafka, cluster.master_url, tmp_path)
        try:
            wait_until(lambda: answering(started.submitted), "the plugin answering /healthz", START_S)
            wait_until(lambda: driver_live(started.submitted) == 1, "the initial target of 1 executor", START_S)
            yield started
        finally:
            started.submitted.stop()
    assert not started.submitted.running()


def test_the_controller_scales_the_job_out_and_in_through_the_plugin_every_record_once(
    job: Job, kafka: LocalKafka, tmp_path: Path
) -> None:
    submitted = job.submitted
    base = live_config(tmp_path, submitted.agent_url, None, "kafka")
    # the largest scale-out and the partition count left to the topic, as the plugin lists its partitions
    config = base.model_copy(
        update={
            "controller": base.controller.model_copy(update={"max_scaleout": 0}),
            "capacity": base.capacity.model_copy(update={"partitions": 0}),
        }
    )
    config_file = tmp_path / "live.yaml"
    config_file.write_text(render_yaml(config))
    decision_log = Path(config.runtime.decision_log)
    runtime = Runtime(config_file, tmp_path / "runtime.log", {"DAEDALUS_AGENT_TOKEN": TOKEN})

    load = Load(LOW)
    generator = Generator(load.keeper, KafkaSink(kafka.bootstrap, job.topic, PARTITIONS), wordcount_line, job.topic)
    feeder = threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True)
    ticks = lambda: decisions(decision_log)  # noqa: E731

    def after(t: float, direction: int) -> list[dict[str, object]]:
        return [d for d in applied(ticks(), direction) if float(d["time_s"]) > t]  # type: ignore[arg-type]

    def wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
        try:
            wait_until(condition, what, timeout_s, 1)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}; {shown(ticks())}") from None

    try:
        feeder.start()
        runtime.start()
        wait_until(lambda: bool(ticks()), "the runtime's first tick", START_S, step_s=0.5)
        # A controller that has seen a few seconds of a job may scale out to be safe (its capacity then rests on a
        # batch or two); the high load waits until it holds 1 executor with the low load learned.
        wait_for(lambda: holds_one(ticks()), "the controller holding 1 executor at the low load", SETTLE_S)
        high_at = load.set(HIGH)
        wait_for(lambda: bool(after(high_at, +1)), "a scale-out under the high load", HIGH_MAX_S)
        wait_until(lambda: driver_live(submitted) == 2, "2 executors in the driver's REST API", SCALE_S)
        low_at = load.set(LOW)  # and it stays low until the controller has scaled back in
        wait_for(lambda: bool(after(low_at, -1)), "a scale-in after the load fell", TAIL_MAX_S)
        wait_until(lambda: driver_live(submitted) == 1, "the executor asked to leave gone from the driver", SCALE_S)
        status = request(f"{submitted.agent_url}/executors", token=TOKEN)[1]
        assert (status["target"], status["current"], status["scale_in"]) == (1, 1, job.case.scale_in), status
        assert runtime.stop() == 0  # SIGTERM: finish the tick, save, exit 0
    finally:
        runtime.stop()
        load.end()
        feeder.join(timeout=30)

    offsets = BrokerOffsets(kafka.bootstrap)
    try:
        produced = sum(offsets.latest_offsets(job.topic).values())
    finally:
        offsets.close()
    assert produced == generator.keeper.produced > 0
    lag = lambda: total(scrape(submitted.agent_url), "daedalus_spark_lag_records")  # noqa: E731
    wait_until(lambda: lag() == 0 and kafka_count_job.read_counts(job.output)[0] >= produced, "the backlog read", 300)
    records, size = kafka_count_job.read_counts(job.output)
    assert records == produced, "every record counted once across the rescales"
    assert size > 0
    logged = ticks()
    assert logged and all(t.get("reason") for t in logged), "every tick has a logged reason"
    assert f"source topic: {PARTITIONS} partitions" in (tmp_path / "runtime.log").read_text()
    print(f"{job.case.id}: {len(logged)} ticks, {produced} records")
