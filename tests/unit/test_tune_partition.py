"""tune's Spark partitions as tables: which candidates share their models' work, a window's alike ones grouped, the
largest groups split until the cores have enough partitions."""

from __future__ import annotations

from typing import Any

import pytest

from daedalus_spark.config import Config
from daedalus_spark.tune.partition import partitions, split_largest, window_groups, work_kind
from daedalus_spark.tune.split import SELECT, Window
from daedalus_spark.tune.task import WindowTask

CONFIG = Config().model_dump(mode="python")


def _config(**sections: dict[str, Any]) -> dict[str, Any]:
    return {
        name: {**value, **sections.get(name, {})} if isinstance(value, dict) else value
        for name, value in CONFIG.items()
    }


# Windows by index: the first is short (no lead-in at the history's start), the others equally long.
WINDOWS = (Window(0, SELECT, 0, 0, 600), Window(1, SELECT, 0, 600, 1200), Window(2, SELECT, 600, 1200, 1800))
# Candidates by index: 0-2 alike (the planner's knobs do not feed the forecaster), 3 at another interval level,
# 4 at another loop interval.
CONFIGS = (
    CONFIG,
    _config(controller={"horizon": {"target_share_ratio": 0.5}}),
    _config(capacity={"unobserved_margin_ratio": 0.05}),
    _config(forecast={"interval_level": 0.8}),
    _config(controller={"loop_interval_s": 30.0}),
)


def _tasks(candidates: list[int], windows: list[int]) -> list[WindowTask]:
    """Tasks in tasks_for's order (by candidate, then window)."""
    return [WindowTask(c, CONFIGS[c], WINDOWS[w], seed=w) for c in candidates for w in windows]


def _ids(parts: list[list[WindowTask]]) -> list[list[tuple[int, int]]]:
    return [[(t.window.index, t.candidate) for t in part] for part in parts]


@pytest.mark.parametrize(
    ("a", "b", "alike"),
    [
        pytest.param(0, 0, True, id="the-same-config"),
        pytest.param(0, 1, True, id="another-planner-knob:alike"),
        pytest.param(0, 2, True, id="another-capacity-knob:alike"),
        pytest.param(0, 3, False, id="another-interval-level:its-own-forecasts"),
        pytest.param(0, 4, False, id="another-loop-interval:its-models-get-other-values"),
        pytest.param(3, 4, False, id="both-differ"),
    ],
)
def test_work_kind(a: int, b: int, alike: bool) -> None:
    assert (work_kind(CONFIGS[a]) == work_kind(CONFIGS[b])) is alike


@pytest.mark.parametrize(
    ("candidates", "windows", "expected"),
    [
        pytest.param(
            [0, 1, 2],
            [0, 1, 2],
            [[(1, 0), (1, 1), (1, 2)], [(2, 0), (2, 1), (2, 2)], [(0, 0), (0, 1), (0, 2)]],
            id="one-kind:a-group-per-window,longest-first,equal-ones-by-index",
        ),
        pytest.param(
            [0, 3, 1, 4, 2],
            [1],
            [[(1, 0), (1, 1), (1, 2)], [(1, 3)], [(1, 4)]],
            id="kinds-of-one-window:a-group-each,by-their-first-candidate,in-a-group-by-candidate",
        ),
        pytest.param(
            [3, 0, 4],
            [0, 2],
            [[(2, 0)], [(2, 3)], [(2, 4)], [(0, 0)], [(0, 3)], [(0, 4)]],
            id="kinds-and-windows:the-window-first",
        ),
        pytest.param([], [0, 1], [], id="no-tasks"),
    ],
)
def test_window_groups(candidates: list[int], windows: list[int], expected: list[list[tuple[int, int]]]) -> None:
    assert _ids(window_groups(_tasks(candidates, windows))) == expected


@pytest.mark.parametrize(
    ("groups", "target", "expected"),
    [
        pytest.param([[0, 1], [2]], 2, [[0, 1], [2]], id="as-many-as-the-target:unchanged"),
        pytest.param([[0, 1], [2], [3]], 2, [[0, 1], [2], [3]], id="more-than-the-target:unchanged"),
        pytest.param([[0, 1, 2, 3, 4]], 2, [[0, 1], [2, 3, 4]], id="one-group-in-two-contiguous-parts"),
        pytest.param([[0, 1, 2, 3, 4, 5]], 3, [[0, 1], [2, 3], [4, 5]], id="in-equal-parts-not-halves-of-halves"),
        pytest.param([[0, 1, 2, 3], [4, 5]], 3, [[0, 1], [2, 3], [4, 5]], id="the-largest-first"),
        pytest.param([[0, 1], [2, 3]], 3, [[0], [1], [2, 3]], id="equal-groups:the-first-first"),
        pytest.param(
            [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10]],
            4,
            [[0, 1], [2, 3, 4], [5, 6, 7], [8, 9, 10]],
            id="the-largest-parts-first:a-group-cut-twice-before-a-smaller-one-once",
        ),
        pytest.param([[0, 1], [2]], 5, [[0], [1], [2]], id="never-below-one-item-per-part"),
        pytest.param([], 4, [], id="no-groups"),
    ],
)
def test_split_largest(groups: list[list[int]], target: int, expected: list[list[int]]) -> None:
    assert split_largest(groups, target) == expected


@pytest.mark.parametrize(
    ("candidates", "windows", "target", "expected"),
    [
        pytest.param(
            [0, 1, 2, 3],
            [0, 1],
            2,
            [[(1, 0), (1, 1), (1, 2)], [(1, 3)], [(0, 0), (0, 1), (0, 2)], [(0, 3)]],
            id="enough-groups:one-partition-per-window-and-kind",
        ),
        pytest.param(
            [0, 1, 2, 3],
            [0, 1],
            6,
            [[(1, 0)], [(1, 1), (1, 2)], [(1, 3)], [(0, 0)], [(0, 1), (0, 2)], [(0, 3)]],
            id="too-few:the-largest-split",
        ),
        pytest.param(
            [0, 1],
            [1],
            4,
            [[(1, 0)], [(1, 1)]],
            id="fewer-tasks-than-the-target:one-each",
        ),
    ],
)
def test_partitions(
    candidates: list[int], windows: list[int], target: int, expected: list[list[tuple[int, int]]]
) -> None:
    assert _ids(partitions(_tasks(candidates, windows), target)) == expected


def test_partitions_hold_every_task_once_and_each_one_window_and_kind() -> None:
    tasks = _tasks([0, 1, 2, 3, 4], [0, 1, 2])
    for target in (1, 4, 9, 20):
        parts = partitions(tasks, target)
        flat = [(t.window.index, t.candidate) for part in parts for t in part]
        assert sorted(flat) == sorted((t.window.index, t.candidate) for t in tasks), target
        assert len(parts) == min(max(target, 9), len(tasks)), target
        for part in parts:
            assert len({(t.window.index, work_kind(t.config)) for t in part}) == 1, target
            assert [t.candidate for t in part] == sorted(t.candidate for t in part), target
