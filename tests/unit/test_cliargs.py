"""Unit: `KEY=VALUE` settings, parsed one way for the jobs' --conf and --kafka-option and the benchmarks' --conf."""

from __future__ import annotations

import re

import pytest

from daedalus_spark.cliargs import key_value
from daedalus_spark.workloads.pipeline import kafka_options


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        pytest.param("spark.speculation=true", ("spark.speculation", "true"), id="plain"),
        pytest.param(" spark.x = a b ", ("spark.x", "a b"), id="stripped"),
        pytest.param("k=", ("k", ""), id="empty-value"),
        pytest.param("k=a=b", ("k", "a=b"), id="equals-in-value"),
    ],
)
def test_a_setting_is_split_at_its_first_equals_sign(setting: str, expected: tuple[str, str]) -> None:
    assert key_value(setting, "--conf") == expected


@pytest.mark.parametrize("setting", [pytest.param("novalue", id="no-equals"), pytest.param(" =x", id="no-key")])
def test_a_setting_without_a_key_is_refused_naming_the_option_and_the_setting(setting: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"--conf '{setting}': expected KEY=VALUE")):
        key_value(setting, "--conf")


def test_a_jobs_kafka_option_without_a_key_stops_the_job_with_that_message() -> None:
    with pytest.raises(SystemExit, match=re.escape("--kafka-option 'fetch.max.bytes': expected KEY=VALUE")):
        kafka_options(["fetch.max.bytes"])
    assert kafka_options([" kafka.fetch.max.bytes = 5 "]) == {"kafka.fetch.max.bytes": "5"}
