"""Spark tests: YSB, Traffic and WordCount give exact results on small hand-made inputs read from the local log."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from daedalus_spark.workloads import traffic, wordcount, ysb
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.records import CENTER_LAT, CENTER_LON, traffic_json, ysb_json
from daedalus_spark.workloads.source import read_values, write_stream
from tests.spark.helpers import wait_until

pytestmark = pytest.mark.spark
T0 = 1_700_000_000_000  # ms, a multiple of 10 s, so windows start at T0
NEAR, FAR = (CENTER_LAT + 0.001, CENTER_LON), (CENTER_LAT + 0.5, CENTER_LON)  # 0.1 km and 55 km away

YSB_INPUT = [
    [
        ysb_json("ad-0", "view", T0 + 1_000),
        ysb_json("ad-9", "view", T0 + 9_999),  # campaign-0, window 0
        ysb_json("ad-3", "click", T0 + 2_000),
        ysb_json("ad-5", "purchase", T0 + 3_000),
    ],  # not views
    [
        ysb_json("ad-10", "view", T0 + 4_000),  # campaign-1, window 0
        ysb_json("ad-1", "view", T0 + 10_000),
        ysb_json("ad-2", "view", T0 + 15_000),  # campaign-0, window 1
        ysb_json("ad-999", "view", T0 + 12_000),  # campaign-99, window 1
        ysb_json("ad-0", "click", T0 + 60_000),
        ysb_json("ad-0", "view", T0 + 60_000),
    ],  # moves the watermark
]
TRAFFIC_INPUT = [
    [
        traffic_json("v-1", *NEAR, 30.0, T0 + 1_000),
        traffic_json("v-1", *NEAR, 50.0, T0 + 8_000),
        traffic_json("v-1", *FAR, 200.0, T0 + 5_000),  # outside the radius
        traffic_json("v-2", *NEAR, 10.0, T0 + 3_000),
        traffic_json("v-1", *NEAR, 70.0, T0 + 12_000),
    ],
    [traffic_json("v-0", *NEAR, 1.0, T0 + 60_000)],  # moves the watermark
]
WORDCOUNT_INPUT = [["a b a", "c"], ["b  a"]]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One session running all three queries at once (start-up dominates; tiny inputs)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("daedalus-test-pipelines")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    queries: list[StreamingQuery] = []
    try:
        root = tmp_path_factory.mktemp("pipelines")
        for module, topic, lines in (
            (ysb, "ysb", YSB_INPUT),
            (traffic, "traffic", TRAFFIC_INPUT),
            (wordcount, "wc", WORDCOUNT_INPUT),
        ):
            queries.append(start(session, module, root, topic, lines))
        yield session
    finally:
        for query in queries:
            query.stop()
        session.stop()


def start(spark: SparkSession, module: object, root: Path, topic: str, lines: list[list[str]]) -> StreamingQuery:
    log = LocalLog(root / "log")
    log.create_topic(topic, len(lines))
    for partition, records in enumerate(lines):
        log.append(topic, partition, records)
    pipeline = module.PIPELINE  # type: ignore[attr-defined]
    frame = pipeline.build(spark, read_values(spark, source="local", topic=topic, path=str(root / "log")))
    return write_stream(
        frame,
        sink="memory",
        name=topic,
        output_mode=pipeline.output_mode,
        checkpoint=str(root / f"ckpt-{topic}"),
        trigger_s=0.2,
    ).start()


def rows(spark: SparkSession, topic: str, expect: int) -> list[tuple[object, ...]]:
    wait_until(lambda: spark.table(topic).count() >= expect, f"{expect} rows of {topic}", 120)
    return [tuple(r) for r in spark.table(topic).collect()]


def test_ysb_counts_views_per_campaign_in_10s_windows(spark: SparkSession) -> None:
    got = {(int(start.timestamp() * 1000) - T0, campaign): count for start, campaign, count in rows(spark, "ysb", 4)}
    assert got == {(0, "campaign-0"): 2, (0, "campaign-1"): 1, (10_000, "campaign-0"): 2, (10_000, "campaign-99"): 1}


def test_traffic_averages_speed_near_the_point_and_enriches(spark: SparkSession) -> None:
    got = {
        (int(start.timestamp() * 1000) - T0, vid): (avg, n, kind, seats)
        for vid, start, avg, n, kind, seats in rows(spark, "traffic", 3)
    }
    assert got == {
        (0, "v-1"): (40.0, 2, "truck", 2),
        (0, "v-2"): (10.0, 1, "bus", 40),
        (10_000, "v-1"): (70.0, 1, "truck", 2),
    }


def test_wordcount_counts_words(spark: SparkSession) -> None:
    assert dict(rows(spark, "wc", 3)) == {"a": 3, "b": 2, "c": 1}


def test_the_record_cost_keeps_every_record_and_is_computed(spark: SparkSession) -> None:
    from daedalus_spark.workloads.pipeline import with_record_cost

    values = spark.createDataFrame([("a b a",), ("",), ("c",)], "value string")
    costly = with_record_cost(values, 50)
    assert sorted(r.value for r in costly.collect()) == ["", "a b a", "c"]
    assert "sha2" in costly._jdf.queryExecution().optimizedPlan().toString()  # not folded away
    assert with_record_cost(values, 0) is values
