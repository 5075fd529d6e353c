"""Tuning (pure core): the (candidate x window) tasks cut into Spark partitions, a window's candidates alike in one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from daedalus_spark.tune.task import WindowTask

T = TypeVar("T")

# Partitions per core Spark offers: at least as many as it can run at once, and some slack for uneven ones.
PARTITIONS_PER_CORE = 2


def work_kind(config: dict[str, Any]) -> str:
    """What a candidate's forecaster models are fed: candidates with the same forecast settings and loop interval ask
    the same fits, updates and forecasts, so in one process the first of them computes them and the others find them
    in the fit cache and the model memo."""
    return json.dumps(
        {"forecast": config["forecast"], "loop_interval_s": config["controller"]["loop_interval_s"]}, sort_keys=True
    )


def window_groups(tasks: Sequence[WindowTask]) -> list[list[WindowTask]]:
    """A window's tasks of one kind of work each: longest windows first (so the last wave is short), then by window
    and by the kind's first candidate; in a group, by candidate."""
    groups: dict[tuple[int, str], list[WindowTask]] = {}
    for t in sorted(tasks, key=lambda t: (t.window.index, t.candidate)):
        groups.setdefault((t.window.index, work_kind(t.config)), []).append(t)
    return sorted(groups.values(), key=lambda g: (g[0].window.lead_start_s - g[0].window.end_s, g[0].window.index))


def split_largest(groups: Sequence[Sequence[T]], target: int) -> list[list[T]]:
    """The groups as parts, at least `target` of them where the groups hold that many items: while there are fewer,
    the group whose parts are the largest is cut into one more (contiguous, sizes differing by at most one, none
    empty). In the groups' order, so the items' order is kept."""
    counts = [1] * len(groups)
    while groups and sum(counts) < target:
        i = max(range(len(groups)), key=lambda j: len(groups[j]) / counts[j])  # the first of the largest
        if counts[i] >= len(groups[i]):  # every part holds one item
            break
        counts[i] += 1
    return [
        list(g[len(g) * k // c : len(g) * (k + 1) // c]) for g, c in zip(groups, counts, strict=True) for k in range(c)
    ]


def partitions(tasks: Sequence[WindowTask], target: int) -> list[list[WindowTask]]:
    """`window_groups`, split to at least `target` partitions where they have the tasks: each partition runs in one
    Python worker, in order, so each pays its leader once."""
    return split_largest(window_groups(tasks), target)
