"""Spark tests: the agent's HTTP contract served by the JVM driver plugin (`spark.plugins`) on a real standalone
cluster, at Spark 3.5 and 4.x, in a Java job and a PySpark job, and by the Python agent on Spark 3.5 — driven
through the controller's own client (execute/agent.py), with the executor counts read behind its back from the
driver's REST API."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from daedalus_spark.buildcache import JarsMissing
from daedalus_spark.config import ActuatorConfig
from daedalus_spark.execute.agent import AgentActuator
from daedalus_spark.execute.port import ActuatorError, Outcome
from daedalus_spark.httpserve import free_port
from daedalus_spark.sparkcluster import LocalCluster, rate_job
from daedalus_spark.sparkcluster import plugin as jvm
from tests.spark.helpers import answering, driver_live, request, scrape, total, wait_until

pytestmark = pytest.mark.spark
TOKEN = "plugin-s3cret"
MAX_EXECUTORS = 2
START_S = 180.0  # a driver JVM, two workers and the first batch on a busy 2-core machine
SCALE_S = 180.0  # a decommissioned executor takes ~30 s to leave; the reconcile waits 30 s first


@dataclass(frozen=True)
class Case:
    """One job: the Spark line, the job's language and which agent serves the contract."""

    line: str
    job: str  # "java" or "python"
    agent: str  # "plugin" (spark.plugins) or "python" (start_agent in the driver)
    scale_in: str  # what the agent should report in force

    @property
    def id(self) -> str:
        return f"spark{self.line}-{self.job}-{self.agent}-{self.scale_in}"


CASES = [
    Case("4", "java", "plugin", "decommission"),
    Case("4", "python", "plugin", "kill"),
    Case("3.5", "java", "plugin", "decommission"),
    Case("3.5", "python", "python", "decommission"),
]


def artifacts(line: str) -> tuple[Path, Path]:
    try:
        return jvm.spark_home(line), jvm.plugin_jar(line)
    except JarsMissing as exc:
        pytest.fail(str(exc))


def app_args(case: Case, jar: Path, work: Path, agent_port: int) -> list[str]:
    common = [str(work / "checkpoint"), str(work / "stop")]
    if case.job == "java":
        return ["--class", jvm.EXAMPLE_JOB_CLASS, str(jar), "ratecount", "200", *common]
    args = [rate_job.__file__, "--query", "ratecount", "--rows-per-second", "200"]
    args += ["--checkpoint", common[0], "--stop-file", common[1]]
    if case.agent == "python":
        args += ["--python-agent-port", str(agent_port), "--max-executors", str(MAX_EXECUTORS)]
    return args


def start(case: Case, work: Path, master: str) -> jvm.SubmittedJob:
    home, jar = artifacts(case.line)
    port = free_port()
    conf = dict(jvm.DECOMMISSION_CONF) if case.scale_in == "decommission" else {}
    env = {"DAEDALUS_AGENT_TOKEN": TOKEN, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    jars: list[Path] = []
    if case.agent == "plugin":
        conf.update(jvm.plugin_conf(port=port, max_executors=MAX_EXECUTORS, initialTarget="1"))
        jars.append(jar)
    if case.job == "python" and case.line == "3.5":  # the runtime's own PySpark ahead of the installed one
        repo = Path(__file__).resolve().parents[2]
        env["PYTHONPATH"] = os.pathsep.join([str(jvm.runtime_dir()), str(repo)])
    app = app_args(case, jar, work, port)
    return jvm.submit(home, app, master=master, workdir=work, conf=conf, jars=jars, env=env, agent_port=port)


def batches(job: jvm.SubmittedJob) -> float:
    return total(scrape(job.agent_url), "daedalus_spark_query_batches_total")


@dataclass
class Running:
    case: Case
    job: jvm.SubmittedJob

    def actuator(self, token: str | None = TOKEN) -> AgentActuator:
        settings = ActuatorConfig(agent_url=self.job.agent_url, timeout_s=30.0, retries=2, backoff_s=0.5)
        return AgentActuator(settings, token)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def running(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    case: Case = request.param
    home, _ = artifacts(case.line)
    work = tmp_path_factory.mktemp(case.id)
    with LocalCluster(workers=MAX_EXECUTORS, memory_per_worker="1g", home=str(home)) as cluster:
        job = start(case, work, cluster.master_url)
        try:
            wait_until(lambda: answering(job), f"the {case.agent} agent answering /healthz", START_S)
            yield Running(case, job)
        finally:
            job.stop()
    assert not job.running()


def test_status_and_metrics_follow_the_job(running: Running) -> None:
    job = running.job
    if running.case.agent == "python":
        running.actuator().apply(1)  # the Python job starts without an initial target
    wait_until(lambda: batches(job) >= 3, "three completed micro-batches in /metrics", START_S)
    code, status = request(f"{job.agent_url}/executors", token=TOKEN)
    assert code == 200 and status["refusing"] == "" and status["max"] == MAX_EXECUTORS, status
    assert status.get("scale_in", "kill") == running.case.scale_in, status
    wait_until(lambda: driver_live(job) == 1, "the initial target of 1 executor, in the driver's REST API", SCALE_S)
    metrics = scrape(job.agent_url)
    assert total(metrics, "daedalus_spark_executors") == 1
    assert total(metrics, "daedalus_spark_executors_target") == 1
    assert total(metrics, "daedalus_spark_query_input_records_total", query="ratecount") > 0
    assert total(metrics, "daedalus_spark_executor_busy_seconds_total") > 0


def test_bad_requests_are_refused_and_change_nothing(running: Running) -> None:
    url = f"{running.job.agent_url}/executors"
    before = request(url, token=TOKEN)[1]
    for body in ({"target": -1}, {"target": 1.5}, {"target": "2"}, {"target": 3}, {"target": 0}, {"n": 1}, b"{"):
        code, reply = request(url, "PUT", body, token=TOKEN)
        assert code == 400 and reply["error"], (body, code, reply)
    assert request(url, "PUT", {"target": 2}, token="wrong")[0] == 401
    assert request(url, "PUT", {"target": 2})[0] == 401
    assert request(f"{running.job.agent_url}/nothing")[0] == 404
    refused = running.actuator().apply(MAX_EXECUTORS + 1)
    assert refused.outcome is Outcome.REFUSED and "above the configured maximum" in refused.detail
    after = request(url, token=TOKEN)[1]
    assert (after["target"], after["current"]) == (before["target"], before["current"])


def test_the_controller_scales_out_and_in_with_exact_counts(running: Running) -> None:
    job, actuator = running.job, running.actuator()
    out = actuator.apply(2)
    assert out.outcome is Outcome.ACCEPTED, out.detail
    wait_until(lambda: actuator.current() == 2 and driver_live(job) == 2, "2 executors (agent and driver)", SCALE_S)
    done = batches(job)
    into = actuator.apply(1)
    assert into.outcome is Outcome.ACCEPTED, into.detail
    wait_until(lambda: actuator.current() == 1, "1 executor serving, by the agent", SCALE_S)
    wait_until(lambda: driver_live(job) == 1, "the executor asked to leave gone from the driver", SCALE_S)
    wait_until(lambda: batches(job) >= done + 3, "three more micro-batches after the scale-in", SCALE_S)
    exported = lambda: total(scrape(job.agent_url), "daedalus_spark_executors")  # noqa: E731 - the next poll's view
    wait_until(lambda: exported() == 1, "the exported executor count at 1", 30)
    assert total(scrape(job.agent_url), "daedalus_spark_executors_target") == 1
    assert actuator.apply(1).outcome is Outcome.ACCEPTED and actuator.current() == 1  # idempotent


@pytest.mark.parametrize("line", ["4", "3.5"])
def test_local_mode_refuses_targets_with_409_then_an_unreachable_agent_fails(line: str, tmp_path: Path) -> None:
    case = Case(line, "java", "plugin", "kill")
    job = start(case, tmp_path, "local[2]")
    try:
        wait_until(lambda: answering(job), "the plugin answering /healthz", START_S)
        code, reply = request(f"{job.agent_url}/executors", "PUT", {"target": 2}, token=TOKEN)
        assert code == 409 and "local mode" in reply["error"], reply
        status = request(f"{job.agent_url}/executors", token=TOKEN)[1]
        assert "local mode" in status["refusing"] and status["target"] is None  # the initial target was ignored
        wait_until(lambda: batches(job) >= 2, "micro-batches reported while refusing targets", START_S)
        actuator = Running(case, job).actuator()
        assert actuator.apply(1).outcome is Outcome.REFUSED
    finally:
        job.stop()
    failed = actuator.apply(1)
    assert failed.outcome is Outcome.FAILED and not failed.outcome.changed_the_job
    with pytest.raises(ActuatorError):
        actuator.current()
