"""The refit process: spawned without the parent's __main__, matplotlib and the config's models, and a fit still runs
in it."""

from __future__ import annotations

import functools
import sys
import types

import numpy as np

from daedalus_spark.analyze.forecast import fit_arima, fitted_arima_state
from daedalus_spark.runtime.refits import child_pids, refit_pool


def what_the_child_imported() -> tuple[bool, bool]:
    return "daedalus_spark.cli" in sys.modules, sys.modules.get("matplotlib", "absent") is None


def the_child_imported_the_config() -> bool:
    # pydantic itself comes with the stored-state checks (untrusted.py, about 7 MB resident); the config's models and
    # their YAML loading do not.
    return "daedalus_spark.config" in sys.modules or "yaml" in sys.modules


def test_refit_process_skips_the_parents_main_and_matplotlib_and_still_fits(tmp_path, monkeypatch):
    script = tmp_path / "console_script.py"
    script.write_text("import daedalus_spark.cli  # what `daedalus-spark run` runs as __main__\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)  # spawn would run this again in the child as __mp_main__
    monkeypatch.setitem(sys.modules, "__main__", main)
    pool = refit_pool()
    monkeypatch.undo()
    try:
        assert len(child_pids(pool)) == 1  # started at once
        assert pool.submit(what_the_child_imported).result() == (False, True)
        y = 1000 + 100 * np.sin(np.arange(240) / 20) + np.random.default_rng(0).normal(0, 10, 240)
        fit = functools.partial(fit_arima, y, window_steps=240, seasonal_period_steps=0)
        state = pool.submit(fitted_arima_state, fit).result()
        assert state is not None and state == fitted_arima_state(fit)
        assert not pool.submit(the_child_imported_the_config).result()  # a fit needs no config
    finally:
        pool.shutdown()
