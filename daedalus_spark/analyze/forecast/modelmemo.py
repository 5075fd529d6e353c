"""Analyze: ARIMA work shared between simulated forecasters — a model's updates and forecasts kept by its lineage."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from daedalus_spark.analyze.forecast.fitcache import fit_key
from daedalus_spark.analyze.forecast.fitting import FitJob
from daedalus_spark.analyze.forecast.models import ArimaModel
from daedalus_spark.analyze.forecast.refit import FitFailed

# A kept forecast (two arrays of a horizon's steps, 91 at the defaults, and its key) holds about 2 KB, a kept update
# about 0.14 KB (tracemalloc): at most about 100 MB. A day-long window at a 60-s loop makes 1,440 updates, and 1,440
# forecasts per interval level.
DEFAULT_MAX_ENTRIES = 50_000

Fit = Callable[[FitJob], ArimaModel | FitFailed]
Prediction = tuple[np.ndarray, np.ndarray | None]


def fit_lineage(job: FitJob) -> bytes:
    """The lineage of the model `job` fits: a digest of every field of the job (what the fit cache keys on)."""
    return hashlib.blake2b(repr(fit_key(job)).encode(), digest_size=32).digest()


def updated_lineage(lineage: bytes, y_new: np.ndarray) -> bytes:
    """The lineage after an update with `y_new`: the lineage before chained with the values' dtype, shape and bytes."""
    h = hashlib.blake2b(lineage, digest_size=32)
    h.update(repr((y_new.dtype.str, y_new.shape)).encode())
    h.update(y_new.tobytes())
    return h.digest()


class ModelMemo:
    """What ARIMA models did, by lineage (their fit's job, then every update's values, chained): an update that a
    model of the same lineage made without failing, and the forecasts such a model gave (by steps and level).

    The fit, pmdarima's update and its forecasts are deterministic and a forecast does not change the model (a test
    holds it), so a model's state, and every answer it gives, is a function of its lineage: candidates of a tune
    window that forecast the same workload with the same settings and loop interval feed their models the same values,
    whatever they decide, and whenever they forecast, ask those models what another candidate asked. At most
    `max_entries` are kept, least recently used dropped first. Nothing is written anywhere.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self.hits = 0  # updates skipped and forecasts handed out
        self.misses = 0  # updates and forecasts computed
        self.replayed = 0  # skipped updates a model made after all, to compute a forecast the memo did not have
        self._entries: OrderedDict[Hashable, Prediction | None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def _get(self, key: Hashable) -> tuple[bool, Prediction | None]:
        if key not in self._entries:
            self.misses += 1
            return False, None
        self._entries.move_to_end(key)
        self.hits += 1
        return True, self._entries[key]

    def _keep(self, key: Hashable, value: Prediction | None) -> None:
        self._entries[key] = value
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def updated(self, lineage: bytes) -> bool:
        """Whether a model reached `lineage` by an update that did not fail."""
        return self._get(lineage)[0]

    def keep_update(self, lineage: bytes) -> None:
        self._keep(lineage, None)

    def forecast(self, lineage: bytes, n_steps: int, level: float | None) -> Prediction | None:
        """A copy of the forecast a model of `lineage` gave for (`n_steps`, `level`); None when none did."""
        _, kept = self._get((lineage, n_steps, level))
        return None if kept is None else _copied(kept)

    def keep_forecast(self, lineage: bytes, n_steps: int, level: float | None, prediction: Prediction) -> None:
        self._keep((lineage, n_steps, level), _copied(prediction))

    def fitting(self, fit: Fit) -> Fit:
        """`fit`, its models shared through this memo."""

        def shared(job: FitJob) -> ArimaModel | FitFailed:
            done = fit(job)
            return SharedArima(done, self, fit_lineage(job)) if isinstance(done, ArimaModel) else done

        return shared


def _copied(prediction: Prediction) -> Prediction:
    values, upper = prediction
    return values.copy(), None if upper is None else upper.copy()


class SharedArima(ArimaModel):
    """A fitted ARIMA that takes from a `ModelMemo` what a model of its lineage did already: an update made before is
    skipped (kept, to be replayed), a forecast given before is handed out as a copy. When the memo lacks one, it
    first replays the updates it skipped, in order, then computes it as an `ArimaModel` would, and keeps the answer
    for the next model: it is that model from then on, and may skip again. Every answer is the one the plain model
    would have given, bit for bit."""

    def __init__(self, fitted: ArimaModel, memo: ModelMemo, lineage: bytes) -> None:
        # Not ArimaModel.__init__: `fitted` (a private model, handed over) is this model's state from now on.
        self.__dict__.update(fitted.__dict__)
        self._memo = memo
        self._lineage = lineage
        self._skipped: list[np.ndarray] = []

    def _catch_up(self) -> None:
        skipped, self._skipped = self._skipped, []
        for y in skipped:
            super().update(y)
        self._memo.replayed += len(skipped)

    def update(self, y_new: np.ndarray) -> None:
        y = np.array(y_new, dtype=float)  # a private copy, kept until replayed
        after = updated_lineage(self._lineage, y)
        if self._memo.updated(after):
            self._skipped.append(y)
        else:
            self._catch_up()
            super().update(y)  # raises as the plain model would; nothing is kept then
            self._memo.keep_update(after)
        self._lineage = after

    def predict_interval(self, n_steps: int, level: float | None) -> Prediction:
        kept = self._memo.forecast(self._lineage, n_steps, level)
        if kept is not None:
            return kept
        self._catch_up()
        prediction = super().predict_interval(n_steps, level)
        self._memo.keep_forecast(self._lineage, n_steps, level, prediction)
        return prediction

    @property
    def history_len(self) -> int:
        self._catch_up()
        return super().history_len

    def aic(self) -> float:
        self._catch_up()
        return super().aic()

    def to_json(self) -> dict[str, Any] | None:
        self._catch_up()
        return super().to_json()

    def fit(self, y: np.ndarray) -> None:
        raise TypeError("a shared ARIMA is not refitted: its lineage starts at its fit")

    def deseasonalize(self, y: np.ndarray, period_steps: int) -> None:
        raise TypeError("a shared ARIMA is not refitted: its lineage starts at its fit")
