"""Benchmark (Execute): a scale-in from 2 executors to 1 by decommissioning against one by killing, live on the
local standalone cluster, through the JVM agent plugin.

The job (jvm/ RateCount: the rate source, each row holding its task `--row-ms` so both executors always have a task
running, a stateful count per key, a micro-batch every 500 ms) runs twice with the
same Spark settings (spark.decommission.enabled with shuffle and RDD block migration), once with the plugin's
`scaleIn=decommission` and once with `scaleIn=kill`. Each round: target 2, wait for both executors and a steady
half-minute, then target 1 and watch 45 s. Per round it prints the stall (the longest gap between completed
micro-batches in those 45 s, against the longest in the steady half-minute before), the failed tasks (Spark's
per-stage counts, from the driver's REST API) and how long the leaving executor took to be gone.

    .venv/bin/python benchmarks/decommission_scale_in.py [--rounds 3] [--rows-per-second 160] [--row-ms 5]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from daedalus_spark.agent.driverui import fetch_json
from daedalus_spark.httpserve import free_port
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.sparkcluster import plugin as jvm
from daedalus_spark.waiting import wait_until

STEADY_S = 30.0
WATCH_S = 45.0


@dataclass(frozen=True)
class Round:
    mode: str
    steady_gap_s: float
    stall_s: float
    failed_tasks: int
    gone_s: float


def agent_status(job: jvm.SubmittedJob) -> dict[str, object]:
    status = fetch_json(f"{job.agent_url}/executors", 30)
    assert isinstance(status, dict)
    return status


def put_target(job: jvm.SubmittedJob, target: int) -> None:
    import urllib.request

    body = f'{{"target": {target}}}'.encode()
    request = urllib.request.Request(f"{job.agent_url}/executors", data=body, method="PUT")
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def executors(job: jvm.SubmittedJob) -> list[dict[str, object]]:
    app = fetch_json(f"{job.ui_url}/api/v1/applications", 30)[0]["id"]
    return list(fetch_json(f"{job.ui_url}/api/v1/applications/{app}/allexecutors", 30))


def live(job: jvm.SubmittedJob) -> int:
    return sum(1 for e in executors(job) if e.get("isActive") and e.get("id") != "driver")


def failed_tasks(job: jvm.SubmittedJob) -> int:
    """Failed task attempts over the stages the driver lists (an executor's own count is lost with the executor)."""
    app = fetch_json(f"{job.ui_url}/api/v1/applications", 30)[0]["id"]
    stages = fetch_json(f"{job.ui_url}/api/v1/applications/{app}/stages", 30)
    return sum(int(s.get("numFailedTasks", 0)) for s in stages)


def batch_times(job: jvm.SubmittedJob, seconds: float) -> list[float]:
    """Wall-clock times at which the query's completed-batch counter grew, watched for `seconds`."""
    times, seen, end = [], _completed(job), time.monotonic() + seconds
    while time.monotonic() < end:
        now = _completed(job)
        if now > seen:
            times.append(time.monotonic())
            seen = now
        time.sleep(0.1)
    return times


def _completed(job: jvm.SubmittedJob) -> float:
    text = fetch_text(f"{job.agent_url}/metrics")
    for line in text.splitlines():
        if line.startswith("daedalus_spark_query_batches_total{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def fetch_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def longest_gap(times: list[float], start: float, end: float) -> float:
    points = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(points))


def one_round(job: jvm.SubmittedJob, mode: str) -> Round:
    put_target(job, 2)
    wait_until(lambda: live(job) == 2 and agent_status(job)["current"] == 2, "2 executors", 180)
    start = time.monotonic()
    steady = batch_times(job, STEADY_S)
    steady_gap = longest_gap(steady, start, time.monotonic())
    failed_before = failed_tasks(job)
    asked = time.monotonic()
    put_target(job, 1)
    watched = batch_times_until_gone(job, WATCH_S)
    times, gone = watched
    stall = longest_gap(times, asked, asked + WATCH_S)
    return Round(mode, steady_gap, stall, failed_tasks(job) - failed_before, gone - asked)


def batch_times_until_gone(job: jvm.SubmittedJob, seconds: float) -> tuple[list[float], float]:
    """Batch completion times over `seconds`, and when the driver first listed a single live executor."""
    times, seen, end, gone = [], _completed(job), time.monotonic() + seconds, float("nan")
    while time.monotonic() < end:
        now = _completed(job)
        if now > seen:
            times.append(time.monotonic())
            seen = now
        if gone != gone and live(job) == 1:
            gone = time.monotonic()
        time.sleep(0.1)
    return times, gone


def run_mode(mode: str, rounds: int, *, rate: int, row_ms: float, root: Path) -> list[Round]:
    home, jar = jvm.spark_home("4"), jvm.plugin_jar("4")
    work = root / mode
    work.mkdir()
    port = free_port()
    conf = {**jvm.DECOMMISSION_CONF, **jvm.plugin_conf(port=port, initialTarget="2", scaleIn=mode)}
    app = ["--class", jvm.EXAMPLE_JOB_CLASS, str(jar), "ratecount", str(rate), str(work / "ck"), str(work / "stop")]
    app.append(str(row_ms))
    results = []
    with LocalCluster(workers=2, memory_per_worker="1g", home=str(home)) as cluster:
        job = jvm.submit(home, app, master=cluster.master_url, workdir=work, conf=conf, jars=[jar], agent_port=port)
        try:
            wait_until(lambda: _up(job), f"the {mode} job's agent", 180)
            assert agent_status(job)["scale_in"] == mode, agent_status(job)
            for index in range(rounds):
                result = one_round(job, mode)
                print(
                    f"{mode:>12} round {index + 1}: stall {result.stall_s:5.1f} s (steady gap "
                    f"{result.steady_gap_s:4.1f} s), failed tasks {result.failed_tasks}, executor gone after "
                    f"{result.gone_s:5.1f} s",
                    flush=True,
                )
                results.append(result)
        finally:
            job.stop()
    return results


def _up(job: jvm.SubmittedJob) -> bool:
    if not job.running():
        raise RuntimeError(f"the driver exited: see {job.log}")
    try:
        return agent_status(job)["current"] == 2
    except OSError:
        return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows-per-second", type=int, default=160)
    p.add_argument("--row-ms", type=float, default=5.0, help="how long each row holds its task")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="daedalus-decommission-") as root:
        rounds = {
            mode: run_mode(mode, args.rounds, rate=args.rows_per_second, row_ms=args.row_ms, root=Path(root))
            for mode in ("decommission", "kill")
        }
    print("\nmode          stall s (median, max)   failed tasks (total)   gone after s (median)")
    for mode, results in rounds.items():
        stalls = [r.stall_s for r in results]
        failed = sum(r.failed_tasks for r in results)
        gone = statistics.median(r.gone_s for r in results)
        median, worst = statistics.median(stalls), max(stalls)
        print(f"{mode:<13} {median:6.1f} {worst:6.1f}          {failed:4d}                 {gone:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
