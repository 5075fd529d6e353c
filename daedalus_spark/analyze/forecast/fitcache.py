"""Analyze: fits shared between simulated forecasters — an LRU of fitted models keyed by everything a fit reads."""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from daedalus_spark.analyze.forecast.fitting import FitJob
from daedalus_spark.analyze.forecast.models import ArimaModel
from daedalus_spark.analyze.forecast.refit import FitFailed, run_fit

# A fitted model with its state space results held about 0.2-0.4 MB here (auto-ARIMA on 60-360 steps of 10 s).
DEFAULT_MAX_ENTRIES = 256


def fit_key(job: FitJob) -> tuple[Hashable, ...]:
    """Every field of the job, an array as its dtype, shape and bytes: equal keys mean the same fit, exactly."""
    parts: list[Hashable] = []
    for f in dataclasses.fields(job):
        value = getattr(job, f.name)
        if isinstance(value, np.ndarray):
            parts.append((f.name, value.dtype.str, value.shape, value.tobytes()))
        else:
            parts.append((f.name, value))
    return tuple(parts)


class FitCache:
    """Fits once per distinct `FitJob`; later requests of the same job get a copy of that model (or its failure).

    The search is deterministic, so a copy is the model a fit would have returned, bit for bit; the copy matters
    because a forecaster updates its model in place. At most `max_entries` fits are kept, least recently used
    dropped first. For the simulator: candidates that forecast the same workload ask for the same fits.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[Hashable, ...], ArimaModel | FitFailed] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def fit(self, job: FitJob) -> ArimaModel | FitFailed:
        """What `run_fit(job)` returns, from the cache when this job was fitted before."""
        key = fit_key(job)
        kept = self._entries.get(key)
        if kept is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return copy.deepcopy(kept)
        self.misses += 1
        done = run_fit(job)
        self._entries[key] = copy.deepcopy(done)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return done
