"""Benchmark (Spark): the capacity a controller learns from the native query set (monitor.metrics native: Spark's
own executor and streaming metrics, the local log's kafka-exporter stand-in) against the one it learns from the
agent's, on one WordCount job on the local standalone cluster.

One driver runs the agent and Spark's PrometheusServlet; one real Prometheus scrapes both; the generator steps its
rate up (so utilization spreads and the regression has a slope). Every loop interval each query set's window goes
to a controller of its own (utilization_signal busy_time, nothing actuated), and the capacity each has learned at
the current scale-out is printed side by side. The goal: within 10 %. Results go to
benchmarks/results/native_capacity.json.

  flock /tmp/daedalus-spark.lock python benchmarks/native_capacity.py [--rates 200,400,600,800,1000] [--step-s 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.config import Config, parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.monitor.native import SCRAPE_PATHS, SPARK_CONF
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import start_prometheus
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import logexporter, wordcount
from daedalus_spark.workloads.generator import Generator, LocalLogSink
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream

TOPIC = "words"
RESULTS = Path(__file__).resolve().parent / "results" / "native_capacity.json"


def config(url: str, metrics: str, loop_s: float, partitions: int) -> Config:
    return parse_config(
        {
            "controller": {
                "loop_interval_s": loop_s,
                "utilization_signal": "busy_time",
                "warmup_s": 20,
                "max_scaleout": partitions,
            },
            "monitor": {
                "prometheus_url": url,
                "metrics": metrics,
                "step_s": 1,
                "rate_window_s": 5,
                "scrape_interval_s": 1,
                "source_labels": {"topic": TOPIC},
                "consumer_group": "spark",
            },
        }
    )


def tick(name: str, monitor: PrometheusMonitor, controller: Controller, now: float, loop_s: float) -> dict[str, Any]:
    """One window into the controller: the job's mean throughput and busy fraction it saw, and the capacity it then
    holds at the current scale-out and per executor (None: none yet)."""
    try:
        obs = monitor.observe(start_s=now - loop_s, end_s=now)
    except MonitorError as exc:
        print(f"  {name}: window skipped ({exc.kind}: {exc})")
        return {"capacity_per_s": None}
    controller.conclude(controller.tick(obs, now))
    table = controller.knowledge.history.latest_table
    return {
        "throughput_per_s": sum(statistics.fmean(e.throughput_per_s) for e in obs.executors),
        "busy_ratio": statistics.fmean(u for e in obs.executors for u in e.utilization_ratio),
        "capacity_per_s": None if table is None else table.current_per_s,
        "executors": {}
        if table is None
        else {
            e.executor_id: {"capacity_per_s": e.capacity_per_s, "load_share_ratio": e.load_share_ratio}
            for e in table.executors
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="native-capacity-"))
    log = LocalLog(root / "log")
    log.create_topic(TOPIC, args.partitions)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    exporter = logexporter.serve(log, [TOPIC], ["spark"], 0)
    rates = np.repeat([float(r) for r in args.rates.split(",")], args.step_s)
    generator = Generator(
        PaceKeeper(Pacer(rates)), LocalLogSink(log, TOPIC, args.partitions), wordcount_line, TOPIC, tick_s=0.1
    )
    stop = threading.Event()
    rows: list[dict[str, Any]] = []
    try:
        with LocalCluster(workers=args.executors, memory_per_worker="1g") as cluster:
            spark = cluster.session("daedalus-native-capacity", **SPARK_CONF)
            agent = start_agent(spark, AgentConfig(port=0, max_executors=args.executors))
            query = write_stream(
                wordcount.build(spark, read_values(spark, source="local", topic=TOPIC, path=str(root / "log"))),
                sink="noop",
                name="wordcount",
                output_mode="update",
                checkpoint=str(root / "ckpt"),
                trigger_s=1,
            ).start()
            ui = spark.sparkContext.uiWebUrl
            prometheus = start_prometheus(
                [f"127.0.0.1:{exporter.server_port}", f"127.0.0.1:{agent.port}", *(f"{ui}{p}" for p in SCRAPE_PATHS)],
                workdir=root / "prometheus",
            )
            try:
                rows = measure(args, prometheus.url, generator, stop)
            finally:
                stop.set()
                prometheus.stop()
                query.stop()
                agent.stop()
                spark.stop()
    finally:
        stop.set()
        exporter.shutdown()
    return summarize(args, rows)


def measure(args: argparse.Namespace, url: str, generator: Generator, stop: threading.Event) -> list[dict[str, Any]]:
    sets = {m: config(url, m, args.loop_s, args.partitions) for m in ("agent", "native")}
    monitors = {m: PrometheusMonitor(c.monitor, "busy_time") for m, c in sets.items()}
    controllers = {m: Controller(c) for m, c in sets.items()}
    threading.Thread(target=generator.run, kwargs={"stop": stop, "report": lambda _: None}, daemon=True).start()
    rows = []
    started = time.time()
    try:
        next_tick = started + args.loop_s
        while next_tick - started <= generator.keeper.pacer.duration_s:  # windows under load only
            time.sleep(max(0.0, next_tick + 2 - time.time()))  # the last scrapes are in
            now = float(int(next_tick))
            seen = {m: tick(m, monitors[m], controllers[m], now, args.loop_s) for m in monitors}
            agent, native = (seen[m]["capacity_per_s"] for m in ("agent", "native"))
            ratio = native / agent if agent and native else None
            print(
                f"t={now - started:5.0f} s  capacity agent {agent or 0:6.0f}/s native {native or 0:6.0f}/s"
                f"  ratio {f'{ratio:.3f}' if ratio is not None else '-'}  throughput "
                + " ".join(f"{m} {seen[m].get('throughput_per_s', 0):5.0f}/s" for m in seen)
                + f"  load {os.getloadavg()[0]:.1f}"
            )
            rows.append({"t_s": round(now - started), **seen, "ratio": ratio})
            next_tick += args.loop_s
    finally:
        for monitor in monitors.values():
            monitor.close()
    return rows


def summarize(args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    result = {
        "executors": args.executors,
        "partitions": args.partitions,
        "rates_per_s": args.rates,
        "step_s": args.step_s,
        "loop_interval_s": args.loop_s,
        "ticks": rows,
        "final_ratio": ratios[-1] if ratios else None,  # after the highest step: the most evidence
        "median_ratio": statistics.median(ratios) if ratios else None,
        "within_10_percent_share": sum(abs(r - 1) <= 0.1 for r in ratios) / len(ratios) if ratios else None,
    }
    print(
        f"native / agent capacity at the current scale-out: final {result['final_ratio']}, median "
        f"{result['median_ratio']}, ticks within 10 %: {result['within_10_percent_share']}"
    )
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--executors", type=int, default=2)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--rates", default="200,400,600,800,1000", help="records/s of each step, comma-separated")
    p.add_argument("--step-s", type=int, default=60, help="seconds at each rate")
    p.add_argument("--loop-s", type=float, default=30.0, help="seconds per controller tick (window)")
    args = p.parse_args()
    result = run(args)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
