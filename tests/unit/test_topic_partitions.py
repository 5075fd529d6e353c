"""controller.max_scaleout and capacity.partitions left at 0 follow the source topic's partition count, from the first
observation that lists the partitions: the controller holds until then, a number in the config wins, and a number
above the partition count is logged once."""

import logging
from dataclasses import replace

import numpy as np
import pytest

from daedalus_spark.config import ConfigError, parse_config, with_topic_partitions
from daedalus_spark.controller import Controller
from daedalus_spark.domain import Observation, PartitionLoad, Reason
from daedalus_spark.testing import step, window

OVERLOAD_PER_S = 8000.0  # 16 executors of 500/s: more than any max_scaleout below


def config(**controller: object) -> object:
    return parse_config({"controller": {"max_rescales_per_hour": 0, **controller}, "forecast": {"min_history_s": 600}})


def listing(obs: Observation, partitions: int) -> Observation:
    """The observation with `partitions` partitions of topic events listed, the load spread evenly."""
    total = sum(obs.workload_per_s) / len(obs.workload_per_s)
    loads = tuple(PartitionLoad("events", p, total / partitions) for p in range(partitions))
    return replace(obs, partitions=loads)


def tick(controller: Controller, t: float, partitions: int) -> object:
    obs = window(t, OVERLOAD_PER_S, 4, rng=np.random.default_rng(int(t)))
    return step(controller, listing(obs, partitions) if partitions else obs, t)


@pytest.mark.parametrize(
    ("settings", "partitions", "target", "reason", "max_scaleout", "warned"),
    [
        pytest.param({}, 0, 4, Reason.WAITING_FOR_PARTITION_COUNT, 0, "", id="count-unknown-no-scale"),
        pytest.param({}, 10, 10, None, 10, "", id="count-known-is-the-max"),
        pytest.param({"max_scaleout": 6}, 10, 6, None, 6, "", id="explicit-below-the-count-wins"),
        pytest.param(
            {"max_scaleout": 12},
            10,
            None,
            None,
            12,
            "controller.max_scaleout (12) exceeds the source topic's partition count (10)",
            id="explicit-above-the-count-wins-and-warns",
        ),
        pytest.param({"max_scaleout": 12}, 0, None, None, 12, "", id="explicit-without-a-count-scales"),
        pytest.param(
            {},
            40,
            16,
            None,
            16,
            "more than agent.max_executors (16)",
            id="count-above-the-agent-range-is-held-to-it",
        ),
    ],
)
def test_the_largest_scale_out_follows_the_topic(
    caplog, settings, partitions, target, reason, max_scaleout, warned
) -> None:
    controller = Controller(config(**settings))
    with caplog.at_level(logging.WARNING, logger="daedalus_spark.controller"):
        decision = tick(controller, 60.0, partitions)
        tick(controller, 120.0, partitions)  # a second look at the same count says nothing again
    assert controller.config.controller.max_scaleout == max_scaleout
    if reason is not None:
        assert decision.reason is reason and not decision.rescale
        assert "partition" in decision.evidence.skip.problem
        assert controller.knowledge.capacity.regressions, "it learns while it waits"
    else:
        assert decision.reason is not Reason.WAITING_FOR_PARTITION_COUNT and decision.rescale
        assert decision.target_scaleout <= max_scaleout
    if target is not None:
        assert decision.target_scaleout == target
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if warned:
        assert len([w for w in warnings if warned in w]) == 1, warnings
    else:
        assert not [w for w in warnings if "partition" in w], warnings


def test_the_count_is_taken_once_and_raised_when_the_topic_gains_partitions() -> None:
    controller = Controller(config())
    assert tick(controller, 60.0, 0).reason is Reason.WAITING_FOR_PARTITION_COUNT
    tick(controller, 120.0, 6)
    assert (controller.topic_partitions, controller.config.controller.max_scaleout) == (6, 6)
    assert controller.knowledge.capacity.config.partitions == 6
    tick(controller, 180.0, 5)  # a window that misses a partition's series does not lower it
    assert controller.config.controller.max_scaleout == 6
    tick(controller, 240.0, 10)
    assert (controller.topic_partitions, controller.config.controller.max_scaleout) == (10, 10)
    assert controller.configured.controller.max_scaleout == 0


@pytest.mark.parametrize(
    ("settings", "partitions", "max_scaleout", "capacity_partitions", "warned"),
    [
        pytest.param({}, 24, 16, 24, "agent.max_executors", id="defaults-agent-bound"),
        pytest.param({"actuator": {"kind": "dry_run"}}, 24, 24, 24, "", id="defaults-no-agent"),
        pytest.param(
            {"controller": {"min_scaleout": 4}}, 2, 4, 2, "fewer than controller.min_scaleout", id="below-min"
        ),
        pytest.param({"controller": {"max_scaleout": 8}}, 24, 8, 24, "", id="explicit-max-below"),
        pytest.param(
            {"controller": {"max_scaleout": 30}, "actuator": {"kind": "dry_run"}},
            24,
            30,
            24,
            "exceeds",
            id="explicit-max-above",
        ),
        pytest.param({"capacity": {"partitions": 48}}, 24, 16, 48, "agent.max_executors", id="explicit-partitions"),
    ],
)
def test_with_topic_partitions(settings, partitions, max_scaleout, capacity_partitions, warned) -> None:
    resolved, warnings = with_topic_partitions(parse_config(settings), partitions)
    assert (resolved.controller.max_scaleout, resolved.capacity.partitions) == (max_scaleout, capacity_partitions)
    assert (warned in " ".join(warnings)) if warned else warnings == ()


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        pytest.param({"controller": {"min_scaleout": 5}}, "", id="zero-with-any-min"),
        pytest.param({"controller": {"min_scaleout": 5, "max_scaleout": 4}}, "must not exceed", id="min-above-max"),
        pytest.param({"controller": {"max_scaleout": -1}}, "max_scaleout", id="negative"),
        pytest.param(
            {"controller": {"min_scaleout": 20}}, "(20..the topic's partition count)", id="zero-min-above-agent-range"
        ),
        pytest.param({"controller": {"min_scaleout": 20}, "actuator": {"kind": "dry_run"}}, "", id="zero-no-agent"),
        pytest.param(
            {"controller": {"max_scaleout": 17}}, "agent.min_executors..agent.max_executors", id="above-agent"
        ),
    ],
)
def test_config_max_scaleout_zero_means_the_topic(settings, error) -> None:
    if not error:
        assert parse_config(settings).controller.max_scaleout == settings["controller"].get("max_scaleout", 0)
        return
    with pytest.raises(ConfigError, match=error.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_config(settings)


def test_the_default_is_the_topic() -> None:
    defaults = parse_config({})
    assert (defaults.controller.max_scaleout, defaults.capacity.partitions) == (0, 0)
