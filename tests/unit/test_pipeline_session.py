"""The pipelines' Spark session keeps the shuffle partitions that spark-submit or the SparkApplication set."""

from __future__ import annotations

from typing import Any

import pytest

from daedalus_spark.workloads import pipeline


class FakeSession:
    """What pipeline.session touches of a SparkSession and its builder; the context conf as spark-submit left it."""

    def __init__(self, submitted: dict[str, str]) -> None:
        self.context_conf = dict(submitted)
        self.session_conf: dict[str, str] = {}
        self.builder = self
        self.sparkContext = self
        self.conf = self

    def appName(self, name: str) -> FakeSession:
        return self

    def config(self, key: str, value: str) -> FakeSession:
        self.context_conf[key] = value  # a new context takes the builder's settings
        return self

    def master(self, master: str) -> FakeSession:
        return self

    def getOrCreate(self) -> FakeSession:
        return self

    def getConf(self) -> FakeSession:
        return self

    def contains(self, key: str) -> bool:
        return key in self.context_conf

    def set(self, key: str, value: str) -> None:
        self.session_conf[key] = value

    def effective(self, key: str) -> Any:
        return self.session_conf.get(key, self.context_conf.get(key))


@pytest.mark.parametrize(
    ("submitted", "conf", "expected"),
    [
        pytest.param({}, (), "4", id="nobody-set-it-small-default"),
        pytest.param({pipeline.SHUFFLE_PARTITIONS: "8"}, (), "8", id="sparkapplication-sparkconf-kept"),
        pytest.param({}, (f"{pipeline.SHUFFLE_PARTITIONS}=16",), "16", id="pipeline-conf-kept"),
    ],
)
def test_shuffle_partitions_set_elsewhere_are_kept(monkeypatch, submitted, conf, expected):
    fake = FakeSession(submitted)
    monkeypatch.setattr(pipeline, "SparkSession", fake)
    spark = pipeline.session("wordcount", conf=conf)
    assert spark.effective(pipeline.SHUFFLE_PARTITIONS) == expected
