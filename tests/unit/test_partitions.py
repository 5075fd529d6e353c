"""Where Spark runs a micro-batch's tasks: Java's hashes (oracle values), Kafka's pinned placement, any-core LPT."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daedalus_spark.analyze.partitions import (
    busiest_share,
    even_weights,
    executor_loads,
    java_string_hash,
    topic_partition_hash,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("a", 97, id="one-char"),
        pytest.param("Aa", 2112, id="collision-1"),
        pytest.param("BB", 2112, id="collision-2"),
        pytest.param("hello", 99162322, id="hello"),
        pytest.param("polygenelubricants", -(2**31), id="overflow-to-int-min"),
        pytest.param("\U0001f600", 55357 * 31 + 56832, id="surrogate-pair-is-two-utf16-units"),
    ],
)
def test_java_string_hash_matches_javas(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_topic_partition_hash_is_kafkas_formula() -> None:
    # TopicPartition.hashCode: result = 1; result = 31 * result + partition; result = 31 * result + topic.hashCode()
    assert topic_partition_hash("hello", 3) == 31 * (31 + 3) + 99162322
    assert topic_partition_hash("polygenelubricants", 0) == 961 - 2**31  # wraps like a Java int


@given(partitions=st.integers(1, 64), scaleout=st.integers(1, 30), topic=st.text(max_size=12))
def test_kafka_spreads_equal_partitions_evenly_below_31_executors(partitions: int, scaleout: int, topic: str) -> None:
    counts = executor_loads(even_weights(partitions, topic), scaleout, "kafka")
    assert max(counts) - min(counts) <= 1
    assert busiest_share(even_weights(partitions, topic), scaleout, "kafka") == pytest.approx(
        math.ceil(partitions / scaleout) / partitions
    )


def test_kafka_pins_every_partition_of_a_topic_to_one_executor_at_31() -> None:
    """31 * (31 + p) is a multiple of 31: at 31 executors Spark prefers one executor for every partition."""
    loads = executor_loads(even_weights(24, "events"), 31, "kafka")
    assert sum(1 for load in loads if load > 0) == 1 and max(loads) == 24.0
    assert busiest_share(even_weights(24, "events"), 31, "kafka") == 1.0


@given(partitions=st.integers(1, 64), scaleout=st.integers(1, 80))
def test_any_core_with_equal_partitions_is_the_count_rule(partitions: int, scaleout: int) -> None:
    assert busiest_share(even_weights(partitions), scaleout, "any_core") == pytest.approx(
        math.ceil(partitions / scaleout) / partitions
    )


def test_any_core_places_the_longest_task_first_on_the_least_loaded_executor() -> None:
    weights = {("t", p): w for p, w in enumerate([3.0, 5.0, 3.0, 4.0, 3.0])}
    # 5 -> A, 4 -> B, 3 -> B (7), 3 -> A (8), 3 -> B (10): LPT's 10 of 18, not the best split's 9
    assert sorted(executor_loads(weights, 2, "any_core")) == [8.0, 10.0]
    assert busiest_share(weights, 2, "any_core") == pytest.approx(10 / 18)


def test_kafka_places_by_hash_not_by_weight() -> None:
    weights = {("events", p): float(p + 1) for p in range(6)}
    loads = executor_loads(weights, 4, "kafka")
    expected = [0.0] * 4
    for (topic, p), w in weights.items():
        expected[(31 * (31 + p) + java_string_hash(topic)) % 4] += w
    assert loads == expected


@pytest.mark.parametrize("bad", [0, -1])
def test_a_scaleout_below_one_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="below 1"):
        executor_loads(even_weights(4), bad, "kafka")
