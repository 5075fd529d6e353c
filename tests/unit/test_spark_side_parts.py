"""The Spark side's pure parts, no Spark needed: local log, pacing, generator, target validation, agent HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from daedalus_spark.agent.driverui import ExecutorInfo
from daedalus_spark.agent.queries import (
    QueryStats,
    flatten_offsets,
    offsets_by_partition,
)
from daedalus_spark.agent.scaler import choose_victims
from daedalus_spark.agent.server import Routes, serve
from daedalus_spark.agent.targets import TargetError, parse_target, validate_target
from daedalus_spark.workloads.generator import Generator, LocalLogSink
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line
from tests.spark.helpers import request


def test_local_log_appends_reads_and_commits(tmp_path: Path) -> None:
    log = LocalLog(tmp_path)
    log.create_topic("t", 2)
    assert log.latest_offsets("t") == {0: 0, 1: 0}
    assert log.append("t", 0, ["a", "b"]) == 2
    assert log.append("t", 0, ["c"]) == 3
    assert log.append("t", 1, []) == 0
    assert log.latest_offsets("t") == {0: 3, 1: 0}
    assert list(log.read("t", 0, 1, 3)) == [(1, "b"), (2, "c")]
    assert list(log.read("t", 0, 0, 10)) == [(0, "a"), (1, "b"), (2, "c")]
    log.commit("t", "g", {0: 2, 1: 0})
    assert log.committed("t", "g") == {0: 2, 1: 0}
    assert log.lag("t", "g") == {0: 1, 1: 0}
    assert log.lag("t", "other") == {0: 3, 1: 0}


def test_local_log_rejects_bad_input(tmp_path: Path) -> None:
    log = LocalLog(tmp_path)
    log.create_topic("t", 1)
    with pytest.raises(ValueError):
        log.append("t", 0, ["two\nlines"])
    with pytest.raises(FileNotFoundError):
        log.append("t", 5, ["x"])
    with pytest.raises(ValueError):
        log.create_topic("t", 3)
    with pytest.raises(ValueError):
        log.create_topic("../escape", 1)


def test_pacer_spreads_each_trace_second_and_compresses() -> None:
    pacer = Pacer(np.array([10.0, 20.0]), compression=2.0, scale=0.5)
    assert pacer.duration_s == 1.0 and pacer.total == 15
    assert [pacer.due(t) for t in (0.0, 0.25, 0.5, 0.75, 1.0, 5.0)] == [0, 2, 5, 10, 15, 15]
    assert pacer.rate_at(0.1) == 10.0 and pacer.rate_at(0.6) == 20.0 and pacer.rate_at(2.0) == 0.0


def test_pace_keeper_reports_falling_behind() -> None:
    keeper = PaceKeeper(Pacer(np.full(10, 100.0)), tolerance_s=1.0, max_batch=30)
    assert keeper.next_batch(1.0) == 30  # bounded batch
    keeper.record(30)
    assert keeper.keeping_up(1.0)  # 70 behind, allowed 100
    assert not keeper.keeping_up(2.0)  # 170 behind


class FakeSink:
    partitions = 3

    def __init__(self) -> None:
        self.sent: dict[int, list[str]] = {0: [], 1: [], 2: []}

    def send(self, partition: int, records: Any) -> None:
        self.sent[partition].extend(records)

    def flush(self) -> None:
        return None


def test_generator_with_injected_clock_produces_the_trace_round_robin() -> None:
    now = [0.0]
    sink = FakeSink()
    gen = Generator(PaceKeeper(Pacer(np.array([9.0, 3.0]))), sink, wordcount_line, "t", clock=lambda: now[0])
    assert gen.step(0.5) == 4 and gen.step(1.0) == 5 and gen.step(2.0) == 3
    assert [len(sink.sent[p]) for p in range(3)] == [4, 4, 4]
    assert gen.keeper.finished(2.0) and gen.lagging_ticks == 0
    assert gen.metrics.registry.get_sample_value("daedalus_generator_records_produced_total", {"topic": "t"}) == 12


def test_generator_counts_lagging_ticks() -> None:
    gen = Generator(PaceKeeper(Pacer(np.full(5, 100.0)), max_batch=10), FakeSink(), wordcount_line, "t")
    for t in (1.0, 2.0, 3.0):
        gen.step(t)
    assert gen.lagging_ticks >= 1


def test_generator_run_writes_to_local_log(tmp_path: Path) -> None:
    log = LocalLog(tmp_path)
    log.create_topic("t", 2)
    clock = iter(float(t) for t in range(100))
    gen = Generator(
        PaceKeeper(Pacer(np.array([5.0, 5.0]))),
        LocalLogSink(log, "t", 2),
        wordcount_line,
        "t",
        clock=lambda: next(clock),
        tick_s=0.0,
    )
    assert gen.run(report=lambda _: None) == 10
    assert sum(log.latest_offsets("t").values()) == 10


@pytest.mark.parametrize(
    "value,ok",
    [
        (0, False),
        (1, True),
        (4, True),
        (5, False),
        (-1, False),
        (2.0, False),
        ("2", False),
        (True, False),
        (None, False),
    ],
)
def test_validate_target(value: object, ok: bool) -> None:
    if ok:
        assert validate_target(value, min_executors=1, max_executors=4) == value
    else:
        with pytest.raises(TargetError):
            validate_target(value, min_executors=1, max_executors=4)


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"n": 1}', b"\xff"])
def test_parse_target_rejects_malformed_bodies(body: bytes) -> None:
    with pytest.raises(TargetError):
        parse_target(body, min_executors=1, max_executors=4)


def test_choose_victims_prefers_least_running_work() -> None:
    e = [
        ExecutorInfo("0", True, 1, 2, 9.0),
        ExecutorInfo("1", True, 1, 0, 5.0),
        ExecutorInfo("2", True, 1, 0, 1.0),
        ExecutorInfo("3", False, 1, 0, 0.0),
        ExecutorInfo("driver", True, 2, 0, 0.0),
    ]
    assert choose_victims(e, 2) == ["2", "1"]
    assert choose_victims(e, 0) == []


def test_offsets_and_lag_per_partition() -> None:
    assert flatten_offsets('{"t": {"0": 5, "1": 7}}') == {("t", "0"): 5, ("t", "1"): 7}
    assert flatten_offsets(None) == {} and flatten_offsets("not json") == {}
    stats = QueryStats("q", 3, 12, 1.0, 1.0, 0.5, {("t", "0"): 5, ("t", "1"): 7, ("k", "0"): 1}, {("k", "0"): 4})
    offsets = offsets_by_partition(stats, {"t": lambda: {0: 9, 1: 7}})
    assert offsets == {("t", "0"): (9, 5), ("t", "1"): (7, 7), ("k", "0"): (4, 1)}


def test_server_applies_valid_targets_with_token_and_rejects_others() -> None:
    applied: list[int] = []
    routes = Routes(
        CollectorRegistry(),
        lambda: {"current": 1, "target": None},
        lambda t: applied.append(t) or {"current": 1, "target": t},
        1,
        3,
        "s3cret",
    )
    server = serve(routes, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        assert server.server_address[0] == "127.0.0.1"
        assert request(f"{url}/executors")[0] == 401
        assert request(f"{url}/executors", "PUT", b'{"target": 2}')[0] == 401
        assert request(f"{url}/executors", "PUT", b'{"target": 2}', "wrong")[0] == 401
        assert request(f"{url}/executors", "PUT", b'{"target": 9}', "s3cret")[0] == 400
        assert applied == []
        assert request(f"{url}/executors", "PUT", b'{"target": 2}', "s3cret") == (200, {"current": 1, "target": 2})
        assert applied == [2]
        assert request(f"{url}/executors", token="s3cret")[0] == 200
        assert request(f"{url}/nothing")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
