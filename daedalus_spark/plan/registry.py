"""Plan: the planners `controller.planner` can name, one entry each — the controller, the simulator's
`daedalus:PLANNER` policies and the config's check of the name all read this registry."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import Any

from daedalus_spark.plan.port import Planner


class Registry(MutableMapping[str, Planner[Any]]):
    """Planner names to planners. A shipped entry says where its Planner is (`module:attribute`) and is imported when
    first looked up, so that checking a name (the config does, on every load) imports no planner and no numpy; an
    entry set at run time (`registry[name] = planner`) is the planner itself."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, Planner[Any]] = {}

    def __getitem__(self, name: str) -> Planner[Any]:
        if name not in self._loaded:
            module, _, attribute = self._where[name].partition(":")  # KeyError: no entry
            self._loaded[name] = getattr(import_module(module), attribute)
        return self._loaded[name]

    def __setitem__(self, name: str, planner: Planner[Any]) -> None:
        self._loaded[name] = planner

    def __delitem__(self, name: str) -> None:
        if name not in self._where and name not in self._loaded:
            raise KeyError(name)
        self._where.pop(name, None)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._loaded  # without importing the planner

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._where, *self._loaded]))

    def __len__(self) -> int:
        return len(self._where.keys() | self._loaded.keys())


PLANNERS = Registry(
    {
        "paper": "daedalus_spark.plan.algorithm:PLANNER",
        "cost_aware": "daedalus_spark.plan.cost:PLANNER",
        "horizon": "daedalus_spark.plan.horizon:PLANNER",
        "batch_ratio": "daedalus_spark.plan.batchratio:PLANNER",
    }
)


class UnknownPlannerError(ValueError):
    """A planner name no registry entry has."""


def planner_named(name: str) -> Planner[Any]:
    """The registered planner of that name; UnknownPlannerError naming the known ones otherwise."""
    if name not in PLANNERS:
        raise UnknownPlannerError(f"unknown planner {name!r} (known: {', '.join(PLANNERS)})")
    return PLANNERS[name]
