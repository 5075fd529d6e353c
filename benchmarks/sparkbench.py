"""Shared parts of the Spark benchmarks (spark_capacity.py, spark_rescale.py), not a benchmark itself.

The demo's setting (docs/demo.md): a local standalone cluster of 4 workers, each in a cgroup with a 0.25-CPU quota and
one 1-core executor of 512 MB; WordCount on the local log (8 partitions), sink `noop`, the agent on, 4 shuffle (state)
partitions. Here: that cluster and driver as a context manager that stops everything it started, the generator as a
subprocess (killed as a process group), scraping of the agent's and the CPU exporter's /metrics, the driver's REST
API, load averages, and the shared results file benchmarks/results/spark_local.json.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.sparkcluster import LocalCluster, cpu_quota_support
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.records import wordcount_line

RESULTS = Path(__file__).resolve().parent / "results" / "spark_local.json"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def load_note() -> str:
    one, five, fifteen = loadavg()
    return f"[load {one:.2f} {five:.2f} {fifteen:.2f}]"


def say(text: str) -> None:
    """Print a figure with the load average beside it."""
    print(f"{text}  {load_note()}", flush=True)


def command_line() -> str:
    return " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])


def install_sigterm() -> None:
    """`timeout`/kill run the context managers' cleanup (JVMs, cgroups, generator) as Ctrl-C does."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def fetch_json(url: str, timeout_s: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return json.load(r)


def scrape(url: str, timeout_s: float = 5.0) -> Samples:
    """Samples of a /metrics URL keyed by (sample name, sorted labels); empty when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    """{label value: sample} of one metric (e.g. per executor_id)."""
    return {dict(ls)[label]: v for (n, ls), v in samples.items() if n == name and label in dict(ls)}


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def zipf_weights(partitions: int, exponent: float) -> list[float]:
    """Weights 1/k^s for k = 1..P, normalised (partition 0 the largest); exponent 0 = even."""
    raw = [1.0 / (k**exponent) for k in range(1, partitions + 1)]
    return [w / sum(raw) for w in raw]


def line_pool(size: int = 50_000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [wordcount_line(rng, 0.0) for _ in range(size)]


def append_lines(log: LocalLog, topic: str, partition: int, count: int, pool: Sequence[str], start: int = 0) -> None:
    """One segment of `count` WordCount lines (one append), cycling through the pool."""
    if count <= 0:
        return
    lines: list[str] = []
    offset = start % len(pool)
    while len(lines) < count:
        take = min(count - len(lines), len(pool) - offset)
        lines.extend(pool[offset : offset + take])
        offset = 0
    log.append(topic, partition, lines)


def preload(log: LocalLog, topic: str, per_partition: Sequence[int], rounds: int, pool: Sequence[str]) -> int:
    """`rounds` appends per partition of per_partition[p] lines each: one segment per batch when the reader's
    per-partition caps equal per_partition (a task then reads exactly one segment file). Returns the lines written."""
    log.create_topic(topic, len(per_partition))
    for r in range(rounds):
        for p, count in enumerate(per_partition):
            append_lines(log, topic, p, count, pool, start=r * 7919 + p * 104_729)
    return rounds * sum(per_partition)


def lag_records(log: LocalLog, topic: str, group: str = "spark") -> tuple[int, int, int]:
    """(latest, committed, lag) summed over the topic's partitions."""
    latest = sum(log.latest_offsets(topic).values())
    committed = sum(log.committed(topic, group).values())
    return latest, committed, latest - committed


def write_results(section: str, payload: dict[str, Any], path: Path = RESULTS) -> Path:
    """Merge one benchmark's section into the shared results file (other sections are kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError):
            data = json.loads(path.read_text())
    data[section] = payload
    data.setdefault("setting", SETTING)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return path


SETTING = (
    "local standalone cluster, 4 workers, cgroup v1 CPU quota 0.25 CPU each, 1 executor of 1 core (512 MB) per "
    "worker, WordCount on the local log (8 partitions), sink noop, 4 shuffle/state partitions, agent on (1-s poll); "
    "2 cores shared by driver, executors, generator and the benchmark; run with nice -n -10"
)


def header(section: str) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": command_line(),
        "loadavg_start": loadavg(),
        "cpu_quota": cpu_quota_support(),
        "cores": os.cpu_count(),
        "section": section,
    }


@dataclass
class DemoJob:
    """A running driver against the demo's cluster, with the agent and the CPU exporter."""

    cluster: LocalCluster
    spark: Any
    agent: Any
    exporter_url: str
    root: Path

    @property
    def api(self) -> str:
        sc = self.spark.sparkContext
        return f"{sc.uiWebUrl.rstrip('/')}/api/v1/applications/{sc.applicationId}"

    @property
    def app_id(self) -> str:
        return str(self.spark.sparkContext.applicationId)

    def status(self) -> dict[str, Any]:
        return dict(fetch_json(f"{self.agent.url}/executors"))

    def live(self) -> list[str]:
        return [str(e) for e in self.status()["executors"]]

    def put_target(self, target: int) -> dict[str, Any]:
        body = json.dumps({"target": target}).encode()
        req = urllib.request.Request(f"{self.agent.url}/executors", data=body, method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:
            return dict(json.load(r))

    def scale_to(self, target: int, stable_s: float = 4.0, timeout_s: float = 150.0) -> float:
        """PUT the target and wait until exactly `target` executors have been live for `stable_s` (a standalone
        master may launch extras that the agent removes after its grace); returns the seconds it took."""
        start = time.monotonic()
        self.put_target(target)
        since: float | None = None
        while True:
            now = time.monotonic()
            if len(self.live()) == target and len(self.executor_cpu()) == target:  # none launched beyond it
                since = since if since is not None else now
                if now - since >= stable_s:
                    return since - start
            else:
                since = None
            if now - start > timeout_s:
                raise TimeoutError(f"{target} executors not reached within {timeout_s:.0f} s: live {self.live()}")
            time.sleep(0.5)

    def executor_cpu(self) -> dict[str, float]:
        """CPU seconds (worker cgroup) per executor id of this application."""
        return by_label(scrape(self.exporter_url), "daedalus_spark_executor_cpu_seconds_total", "executor_id")

    def max_stage_id(self) -> int:
        stages = fetch_json(f"{self.api}/stages")
        return max((int(s["stageId"]) for s in stages), default=-1)

    def executors_rest(self) -> list[dict[str, Any]]:
        return list(fetch_json(f"{self.api}/allexecutors"))


@contextlib.contextmanager
def demo_job(
    app: str,
    *,
    workers: int = 4,
    cpus_per_executor: float = 0.25,
    initial_executors: int | None = None,
    latest_offsets: dict[str, Callable[[], dict[int, int]]] | None = None,
    start_workers: int | None = None,
    conf: dict[str, str] | None = None,
) -> Iterator[DemoJob]:
    """The demo's cluster and driver (agent, CPU exporter); everything is stopped on exit, also on errors."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(_tempdir()))
        cluster = stack.enter_context(
            LocalCluster(
                workers=start_workers if start_workers is not None else workers,
                cpus_per_executor=cpus_per_executor,
                memory_per_worker="768m",
            )
        )
        for _ in range(workers - (start_workers if start_workers is not None else workers)):
            t0 = time.monotonic()
            cluster.add_worker()
            say(f"worker start (JVM up, registered at the master): {time.monotonic() - t0:.1f} s")
        spark = cluster.session(
            app,
            **{
                "spark.sql.shuffle.partitions": "4",
                "spark.executor.memory": "512m",
                "spark.sql.streaming.numRecentProgressUpdates": "5000",
                **(conf or {}),
            },
        )
        stack.callback(spark.stop)
        agent = start_agent(
            spark,
            AgentConfig(port=0, max_executors=workers, initial_target=initial_executors),
            latest_offsets=latest_offsets,
        )
        stack.callback(agent.stop)
        exporter = cluster.start_cpu_exporter(app_id=spark.sparkContext.applicationId)
        yield DemoJob(cluster, spark, agent, exporter, tmp)


@contextlib.contextmanager
def _tempdir() -> Iterator[str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="daedalus-bench-") as tmp:
        yield tmp


def write_trace(path: Path, rates: Sequence[float]) -> Path:
    path.write_text("".join(f"{i}|{r:.3f}\n" for i, r in enumerate(rates)))
    return path


@contextlib.contextmanager
def generator(
    log_dir: Path, topic: str, partitions: int, rates: Sequence[float], work: Path, *, pool_feeder: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m daedalus_spark.workloads.generator wordcount` replaying `rates` (records/s, one per second) as a
    subprocess in its own process group; killed (group) on exit if still running. `pool_feeder`: this module's
    `feed` instead, which paces lines from a fixed pool (no random record making) for rates beyond the generator's."""
    trace = write_trace(work / f"trace-{time.monotonic_ns()}.txt", rates)
    out = open(work / f"generator-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115 - closed below
    args = ["--trace", str(trace), "--log-dir", str(log_dir), "--topic", topic, "--partitions", str(partitions)]
    command = (
        [sys.executable, str(Path(__file__).resolve()), "feed", *args]
        if pool_feeder
        else [sys.executable, "-m", "daedalus_spark.workloads.generator", "wordcount", *args]
    )
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        out.close()


def feed(argv: Sequence[str]) -> int:
    """A fast feeder: the generator's pacing (daedalus_spark.workloads.pacing) of a `second|count` trace, with lines
    taken from a fixed pool, round-robin over partitions, every 0.2 s. Exit 3 if it fell behind by > 1 s of rate."""
    import argparse

    import numpy as np

    from daedalus_spark.monitor.files import read_trace
    from daedalus_spark.workloads.pacing import PaceKeeper, Pacer

    parser = argparse.ArgumentParser(prog="sparkbench.py feed")
    for flag in ("--trace", "--log-dir", "--topic"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    args = parser.parse_args(argv)
    install_sigterm()
    log, pool = LocalLog(args.log_dir), line_pool()
    log.create_topic(args.topic, args.partitions)
    keeper = PaceKeeper(Pacer(np.asarray(read_trace(args.trace))), max_batch=1_000_000)
    start, lagging, next_partition = time.monotonic(), 0, 0
    while True:
        elapsed = time.monotonic() - start
        count = keeper.next_batch(elapsed)
        if count:
            per = [
                count // args.partitions
                + (1 if (p - next_partition) % args.partitions < count % args.partitions else 0)
                for p in range(args.partitions)
            ]
            for p, n in enumerate(per):
                append_lines(log, args.topic, p, n, pool, start=keeper.produced + p)
            next_partition = (next_partition + count) % args.partitions
            keeper.record(count)
        if not keeper.keeping_up(elapsed):
            lagging += 1
        if keeper.finished(elapsed):
            break
        time.sleep(max(0.0, 0.2 - (time.monotonic() - start - elapsed)))
    print(f"feed: produced {keeper.produced} records to {args.topic}; lagging ticks {lagging}")
    if lagging:
        print(f"feed check failed: kept up with the trace's rate: {lagging} ticks behind", file=sys.stderr)
    return 0 if lagging == 0 else 3


@dataclass
class Sampler:
    """A thread calling `sample()` every `interval_s` and keeping (t, value) rows; stopped on exit."""

    sample: Callable[[], dict[str, Any]]
    interval_s: float = 1.0
    rows: list[dict[str, Any]] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    errors: int = 0

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            t = self.now()
            try:
                row = self.sample()
            except Exception:  # noqa: BLE001 - a missed sample is counted, never fatal
                self.errors += 1
            else:
                row["t"] = t
                self.rows.append(row)
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def between(self, start: float, end: float) -> list[dict[str, Any]]:
        return [r for r in self.rows if start <= r["t"] <= end]


def wait_until_batches(query: Any, count: int, timeout_s: float) -> None:
    """Wait (bounded) until the query has completed `count` batches with input; fails when the query fails."""
    deadline = time.monotonic() + timeout_s
    while sum(1 for p in query.recentProgress if p["numInputRows"] > 0) < count:
        if query.exception() is not None:
            raise RuntimeError(f"query failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} batches not completed within {timeout_s:.0f} s")
        time.sleep(0.5)


def strict(value: Any) -> Any:
    """NaN/inf to None, tuples to lists: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def progress_rows(query: Any, t0_wall: float) -> list[dict[str, Any]]:
    """Completed batches with input: id, rows, triggerExecution (s), start and end relative to `t0_wall`."""
    out = []
    for p in query.recentProgress:
        start = dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() - t0_wall
        duration = p["durationMs"].get("triggerExecution", 0) / 1000.0
        out.append(
            {
                "batch": int(p["batchId"]),
                "rows": int(p["numInputRows"]),
                "duration_s": duration,
                "add_batch_s": p["durationMs"].get("addBatch", 0) / 1000.0,
                "start": start,
                "end": start + duration,
            }
        )
    return out


def source_stage_tasks(job: DemoJob, after_stage: int) -> list[list[dict[str, Any]]]:
    """For every completed stage after `after_stage` that read source records (the map stage of a WordCount batch),
    its successful tasks: executor, duration (s), records read; in stage order."""
    stages = [s for s in fetch_json(f"{job.api}/stages") if int(s["stageId"]) > after_stage]
    out = []
    for s in sorted(stages, key=lambda s: (int(s["stageId"]), int(s["attemptId"]))):
        if s.get("status") != "COMPLETE" or int(s.get("inputRecords", 0)) <= 0:
            continue
        tasks = fetch_json(f"{job.api}/stages/{s['stageId']}/{s['attemptId']}/taskList?length=10000")
        out.append(
            [
                {
                    "executor": str(t["executorId"]),
                    "duration_s": t.get("duration", 0) / 1000.0,
                    "records": int(t.get("taskMetrics", {}).get("inputMetrics", {}).get("recordsRead", 0)),
                    "index": int(t.get("index", 0)),
                }
                for t in tasks
                if t.get("status") == "SUCCESS"
            ]
        )
    return out


def state_stage_task_durations(job: DemoJob, after_stage: int) -> list[float]:
    """Durations (s) of the successful tasks of completed stages after `after_stage` that read no source records
    (WordCount's stateful aggregation stage)."""
    stages = [s for s in fetch_json(f"{job.api}/stages") if int(s["stageId"]) > after_stage]
    out: list[float] = []
    for s in stages:
        if s.get("status") != "COMPLETE" or int(s.get("inputRecords", 0)) > 0:
            continue
        tasks = fetch_json(f"{job.api}/stages/{s['stageId']}/{s['attemptId']}/taskList?length=10000")
        out.extend(t.get("duration", 0) / 1000.0 for t in tasks if t.get("status") == "SUCCESS")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["feed"]:
        sys.exit(feed(sys.argv[2:]))
    sys.exit("usage: sparkbench.py feed --trace F --log-dir D --topic T --partitions P")
