"""End to end on real Spark: `daedalus-spark run` scales WordCount out and back in on a step trace, exactly once.

A local cluster of 2 workers (0.25 CPU each), WordCount in this process with the agent and a memory sink, the CPU
exporter, a generator thread replaying low -> high -> low, and the runtime as a subprocess with time settings scaled
down (5-s loop). The runtime is killed with SIGKILL after its first scale-out and restarted: the knowledge it left
must be the one it had, and give the same next decision. On a real Kafka broker (Spark's Kafka source, the broker's
live end offsets, placement as the Kafka source pins partitions); the exact counts are checked against every record
in the topic. The loop on the local log runs in test_live_faults_spark.py, through faults.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession

from daedalus_spark.agent import AgentConfig, start_agent
from daedalus_spark.config import (
    Config,
    render_yaml,
)
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation
from daedalus_spark.httpserve import free_port
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.sparkcluster import LocalCluster
from daedalus_spark.workloads import wordcount
from daedalus_spark.workloads.generator import Generator, KafkaSink, RecordSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import request as agent_request
from tests.spark.helpers import scrape, total, wait_until
from tests.spark.jobs import PARTITIONS, Runtime, applied, decisions, live_config

pytestmark = pytest.mark.spark
TOPIC, QUERY = "words", "wordcount_live"
CPUS = 0.25
LOW_S, HIGH_S, TAIL_S = 30, 70, 75
# The high load holds until the scale-out has come and the runtime has been killed and restarted (at least HIGH_S),
# at most this long: on a loaded machine the runtime starts, learns and decides more slowly, and a load that fell on
# a clock would leave nothing to scale out for. Each wait below names its condition and has a deadline with room.
HIGH_MAX_S = 420
START_S = 240  # the runtime's first tick, from its start: imports and a first window on a busy 2-core machine


def probe(scaleout: int, now_s: float) -> Observation:
    """A fixed observation to ask two controllers for their next decision."""
    executors = {str(i): ([400.0] * 10, [0.5] * 10) for i in range(scaleout)}
    return Observation.of(time_s=now_s, workload_per_s=400.0 * scaleout, executors=executors, uptime_s=600.0)


def next_decision(config: Config, store_path: Path, scaleout: int, now_s: float) -> tuple[object, ...]:
    controller = Controller.resume(config, SqliteKnowledgeStore(store_path))
    d = controller.tick(probe(scaleout, now_s), now_s)
    table = controller.knowledge.history.latest_table
    return d.reason, d.target_scaleout, None if table is None else table.per_scaleout_per_s


class KafkaSource:
    """A topic on a local Kafka broker, read by Spark's Kafka source, its end offsets read from the broker."""

    assignment = "kafka"  # Spark's Kafka source pins each partition to an executor
    # Spark's Kafka source (JVM) reads far more cheaply than the Python data source: one 0.25-CPU executor kept
    # up with 1,100 lines/s at a learned 1,600/s, and the demo's learned 3,600/s at 1 and 7,600/s at 2 executors.
    # On a quiet machine one executor also kept up with 5,500 lines/s (1.6 s behind, learned 7,400-8,500/s at 1),
    # so the high load is above that, and below what two carried (18,000-25,000/s learned at 2).
    low, high = 1200.0, 9000.0

    def __init__(self) -> None:
        self.kafka = LocalKafka().start()
        try:
            self.kafka.create_topic(TOPIC, PARTITIONS)
            self.offsets = BrokerOffsets(self.kafka.bootstrap)
        except BaseException:
            self.kafka.stop()
            raise

    def read(self, spark: SparkSession) -> Any:
        return read_values(spark, source="kafka", topic=TOPIC, bootstrap=self.kafka.bootstrap)

    def sink(self) -> RecordSink:
        return KafkaSink(self.kafka.bootstrap, TOPIC, PARTITIONS)

    def latest_offsets(self) -> Mapping[int, int]:
        return self.offsets.latest_offsets(TOPIC)

    def lines(self) -> Iterator[str]:
        """Every record of the topic, read from the start of each partition to its end offset now."""
        from kafka import KafkaConsumer, TopicPartition

        ends = {TopicPartition(TOPIC, p): end for p, end in self.latest_offsets().items()}
        consumer = KafkaConsumer(bootstrap_servers=self.kafka.bootstrap, enable_auto_commit=False, group_id=None)
        try:
            consumer.assign(list(ends))
            consumer.seek_to_beginning()
            deadline = time.monotonic() + 300
            while any(consumer.position(tp) < end for tp, end in ends.items()):
                assert time.monotonic() < deadline, "the topic's records not read within 300 s"
                for tp, records in consumer.poll(timeout_ms=1000, max_records=50_000).items():
                    for record in records:
                        if record.offset < ends[tp]:
                            yield record.value.decode()
        finally:
            consumer.close()

    def close(self) -> None:
        self.offsets.close()
        self.kafka.stop()


@pytest.fixture
def job(tmp_path: Path) -> Iterator[tuple[SparkSession, str, str, KafkaSource]]:
    source = KafkaSource()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with (
        contextlib.closing(source),
        LocalCluster(workers=2, cpus_per_executor=CPUS, memory_per_worker="768m") as cluster,
    ):
        exporter_url = cluster.start_cpu_exporter()
        spark = cluster.session("daedalus-test-live-loop", **{"spark.sql.shuffle.partitions": str(PARTITIONS)})
        agent = query = None
        try:
            agent = start_agent(
                spark,
                AgentConfig(port=free_port(), max_executors=2, poll_s=0.5, initial_target=1),
                latest_offsets={TOPIC: source.latest_offsets},
            )
            frame = wordcount.build(spark, source.read(spark))
            query = write_stream(
                frame, sink="memory", name=QUERY, output_mode="update", checkpoint=str(tmp_path / "ckpt"), trigger_s=1.0
            ).start()
            wait_until(lambda: agent_request(f"{agent.url}/executors")[1].get("current") == 1, "1 executor", 300)
            yield spark, agent.url, exporter_url, source
        finally:
            if query is not None:
                query.stop()
            if agent is not None:
                agent.stop()
            spark.stop()


class JobSampler:
    """Once a second, the query's records read, its lag and the live executors, from the agent (a thread)."""

    def __init__(self, agent_url: str) -> None:
        self.agent_url, self.samples = agent_url, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> JobSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                m = scrape(self.agent_url)
            except OSError:
                continue
            records = total(m, "daedalus_spark_query_input_records_total")
            lag, live = total(m, "daedalus_spark_lag_records"), total(m, "daedalus_spark_executors")
            self.samples.append((time.monotonic(), records, lag, live))

    def throughput_per_s(self, executors: int, since: float, until: float) -> tuple[float, bool] | None:
        """Records/s over the first run of samples between `since` and `until` (monotonic; the high load) with
        `executors` live, and whether the lag grew over it (the job could not keep up, so it ran as fast as it can);
        None without such a run of 10 s. Over the whole run, not per window: stalls and long batches are part of
        what the job does."""
        run = []
        for sample in self.samples:
            if since <= sample[0] <= until and sample[3] == executors:
                run.append(sample)
            elif run:
                break
        if len(run) < 2 or run[-1][0] - run[0][0] < 10:
            return None
        return (run[-1][1] - run[0][1]) / (run[-1][0] - run[0][0]), run[-1][2] > run[0][2]


def expected_counts(source: KafkaSource) -> dict[str, int]:
    words: Counter[str] = Counter()
    for line in source.lines():
        words.update(line.split())
    return dict(words)


def test_runtime_scales_out_and_in_on_a_step_trace_exactly_once_and_survives_sigkill(
    job: tuple[SparkSession, str, str, KafkaSource], tmp_path: Path
) -> None:
    spark, agent_url, exporter_url, source = job
    config = live_config(tmp_path, agent_url, exporter_url, source.assignment)
    config_file = tmp_path / "live.yaml"
    config_file.write_text(render_yaml(config))
    decision_log, store_path = Path(config.runtime.decision_log), Path(config.controller.knowledge_path)

    # A scale-in before the first scale-out is a fair decision (the job's second executor may still show while the
    # agent retires it at start); the one this test waits for follows the high load.
    def scale_ins_after(t: float) -> list[dict[str, object]]:
        return [d for d in applied(decisions(decision_log), -1) if float(d["time_s"]) > t]  # type: ignore[arg-type]

    rates = np.concatenate([np.full(LOW_S, source.low), np.full(HIGH_MAX_S, source.high), np.full(TAIL_S, source.low)])
    generator = Generator(PaceKeeper(Pacer(rates)), source.sink(), wordcount_line, TOPIC, tick_s=0.1, seed=11)
    feeder = threading.Thread(target=generator.run, kwargs={"report": lambda _: None}, daemon=True)
    runtime = Runtime(config_file, tmp_path / "runtime.log")
    sampler = JobSampler(agent_url).__enter__()
    try:
        runtime.start()
        wait_until(lambda: decisions(decision_log), "the runtime's first tick", START_S, step_s=0.5)
        fed_from = time.monotonic()
        feeder.start()
        high_from = fed_from + LOW_S
        wait_until(
            lambda: applied(decisions(decision_log), +1),
            "a scale-out under the high load",
            LOW_S + HIGH_MAX_S,
            step_s=1,
        )
        first_out_s = float(applied(decisions(decision_log), +1)[0]["time_s"])  # type: ignore[arg-type]

        # SIGKILL right after a tick's save: the store must hold exactly what the runtime had
        ticks = len(decisions(decision_log))
        wait_until(lambda: len(decisions(decision_log)) > ticks, "the tick after the scale-out", 120, step_s=0.1)
        copy = tmp_path / "before-kill.sqlite"
        with sqlite3.connect(store_path) as saved, sqlite3.connect(copy) as target:
            saved.backup(target)  # the knowledge as the running runtime had saved it
        runtime.stop(signal.SIGKILL)
        killed_at = len(decisions(decision_log))
        before, after = SqliteKnowledgeStore(copy).load(), SqliteKnowledgeStore(store_path).load()
        assert before is not None and after == before
        now = time.time()
        expected = next_decision(config, copy, 2, now)
        assert expected[2] is not None, "a capacity table was learned before the kill"
        assert next_decision(config, store_path, 2, now) == expected
        runtime.start()  # resumes from the store
        wait_until(lambda: len(decisions(decision_log)) > killed_at, "the restarted runtime's first tick", START_S)
        # now the load falls, after at least HIGH_S of it: the same prefix of the trace, then the low tail
        fell_at = max(LOW_S + HIGH_S, int(time.monotonic() - fed_from) + 1)
        generator.keeper.pacer = Pacer(np.concatenate([rates[:fell_at], np.full(TAIL_S, source.low)]))

        try:
            wait_until(lambda: scale_ins_after(first_out_s), "a scale-in after the load fell", TAIL_S + 300, step_s=1)
        except TimeoutError:
            for d in decisions(decision_log):  # why not, tick by tick
                print(d["time_s"], d["current"], d["target"], d["reason"], d.get("notes", [""])[:1])
            raise
        wait_until(lambda: not feeder.is_alive(), "the generator to finish the trace", TAIL_S + 300, step_s=1)
        appended = sum(source.latest_offsets().values())
        wait_until(lambda: total(scrape(agent_url), "daedalus_spark_lag_records") == 0, "lag back to 0", 300)
        assert runtime.stop() == 0  # SIGTERM: finish the tick, save, exit 0
    finally:
        sampler.__exit__()
        runtime.stop(signal.SIGKILL)
        generator.keeper.pacer = Pacer(np.zeros(0))

    records = decisions(decision_log)
    assert records and all(r.get("reason") for r in records), "every tick has a logged reason"
    out, back = applied(records, +1), applied(records, -1)
    assert scale_ins_after(first_out_s), "scaled back in after the first scale-out"
    counted = lambda: {r[0]: int(r[1]) for r in spark.table(QUERY).groupBy("word").max("count").collect()}  # noqa: E731
    expected = expected_counts(source)
    assert sum(expected.values()) > 0 and appended == generator.keeper.produced  # every record produced is in it
    wait_until(lambda: counted() == expected, "the last batch in the sink", 120, step_s=1)
    assert counted() == expected, "every record counted exactly once across the rescales"
    print(f"ticks {len(records)}, scale-outs {len(out)}, scale-ins {len(back)}, records {appended}")

    # What it learned about one executor, before it scaled out, against what one executor did while saturated.
    learned = [
        float(r["evidence"]["capacity_current_per_s"])  # type: ignore[index,call-overload]
        for r in records
        if r["current"] == 1
        and float(r["time_s"]) <= first_out_s  # type: ignore[arg-type]
        and "capacity_current_per_s" in r["evidence"]  # type: ignore[operator]
    ]
    measured = sampler.throughput_per_s(1, high_from, fed_from + fell_at)
    if measured is None:  # what the job did instead: (s into the high load, records, lag, live executors)
        print("samples:", [(round(t - high_from), r, g, n) for t, r, g, n in sampler.samples])
    print(f"capacity at 1 executor learned {learned[-1:]}, the job did {measured} (records/s, saturated)")
    assert learned, "a capacity at 1 executor was learned before the first scale-out"
    if measured is None:
        # The job never ran the high load at 1 executor long enough to sample (it started with a second executor
        # the agent had not yet retired, or scaled out at once): nothing measured to hold the learned value against.
        # Seen in CI on the shared 2 cores; the scale-out, scale-in, resume and exact counts above still held.
        return
    rate, saturated = measured
    assert learned[-1] > 0
    if saturated:  # the job ran as fast as it can: the capacity learned is within 2x of that
        assert 0.5 <= learned[-1] / rate <= 2.0
    # Keeping up (a faster machine than the test's sizing assumes), the rate is only a lower bound on the capacity,
    # and what was learned before the scale-out may rest on the low load's batches, mostly their fixed cost: below
    # the rate, the safe side (docs/capacity.md). CI saw 614/s learned where one executor then kept up at 1,347/s.
