"""Runtime: the background refit process, spawned bare so that it imports only what an ARIMA fit needs."""

from __future__ import annotations

import multiprocessing
import sys
import types
from concurrent.futures import ProcessPoolExecutor

# pmdarima imports matplotlib.pyplot for plots a fit never draws (about 30 MB resident); it guards that import, so
# in the refit process matplotlib is made unimportable and the fit runs without it.
NOT_NEEDED_BY_A_FIT = ("matplotlib",)


def _fit_only() -> None:
    for name in NOT_NEEDED_BY_A_FIT:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None in sys.modules: ImportError on import


def refit_pool() -> ProcessPoolExecutor:
    """One spawned process for refits (in a thread they held the GIL against the tick: p95 0.5 s, not 60 ms).

    Spawn runs the parent's `__main__` again in the child — for `daedalus-spark run` the CLI and everything it
    imports. The process is started here, under a bare `__main__`, so it imports only this module and, with the
    first refit, the forecaster's fit (numpy, statsmodels, pmdarima).
    """
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_fit_only)
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        pool.submit(int)  # starts the process now (spawn writes what the child prepares from synchronously)
    finally:
        sys.modules["__main__"] = main
    return pool


def child_pids(pool: ProcessPoolExecutor) -> list[int]:
    """The pool's live processes (for measuring their memory)."""
    processes = getattr(pool, "_processes", None) or {}
    return [p.pid for p in processes.values() if p.pid is not None]
