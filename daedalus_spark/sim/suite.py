"""Simulation: a held-out suite of seeded workload shapes (not in the repo) to judge decisions on unseen load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from daedalus_spark.monitor.files import BUNDLED_TRACES_DIR, read_trace

# Peak of every generated shape. With the default job model the per-executor capacity is derived from the trace peak
# (reference_scaleout executors carry peak x headroom), so what matters is each shape's trough/peak ratio: the shapes
# below keep it between ~0.25 and ~0.7, i.e. a scale-out range of roughly 3..12 of the default 12.
DEFAULT_PEAK_PER_S = 40_000.0

Generator = Callable[[np.random.Generator, int], np.ndarray]  # (rng, duration_s) -> unscaled shape, any units


class SuiteError(ValueError):
    """An unknown shape name or a generator that produced an unusable series."""


@dataclass(frozen=True)
class WorkloadShape:
    """One generated workload: records/s per second for `duration_s` seconds, peak at `peak_per_s`."""

    name: str
    description: str
    duration_s: int
    generator: Generator
    peak_per_s: float = DEFAULT_PEAK_PER_S
    # The load the simulated job is sized for, as a share of the peak (1: the peak; below 1: a load above what
    # max_scaleout carries, where the right answer is the maximum).
    sized_for_ratio: float = 1.0
    # Seconds (start, end) whose metrics the monitor cannot read, a Prometheus outage; the load still arrives.
    monitor_gaps_s: tuple[tuple[int, int], ...] = ()

    def monitor_blind(self, speedup: int = 1) -> np.ndarray | None:
        """True for each second of the (compressed) series the monitor cannot read; None without gaps."""
        if not self.monitor_gaps_s:
            return None
        blind = np.zeros(-(-self.duration_s // speedup), dtype=bool)
        for start, end in self.monitor_gaps_s:
            blind[start // speedup : -(-end // speedup)] = True
        return blind

    def generate(self, seed: int = 1) -> np.ndarray:
        """The series for `seed` (same seed, same series), rescaled so its maximum is `peak_per_s`."""
        rng = np.random.default_rng([seed, _stable_hash(self.name)])
        raw = np.asarray(self.generator(rng, self.duration_s), dtype=float)
        if raw.shape != (self.duration_s,):
            raise SuiteError(f"shape {self.name!r}: generator gave {raw.shape}, expected ({self.duration_s},)")
        raw = np.maximum(raw, 0.0)
        top = float(np.max(raw)) if len(raw) else 0.0
        if not np.all(np.isfinite(raw)) or top <= 0:
            raise SuiteError(f"shape {self.name!r}: series is not finite or is all zero")
        return np.asarray(raw * (self.peak_per_s / top), dtype=float)


def _stable_hash(name: str) -> int:
    """A per-shape seed component that does not depend on Python's randomized str hash."""
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % (2**31)


def _ar1(rng: np.random.Generator, n: int, *, phi: float, sigma: float) -> np.ndarray:
    """AR(1) noise x_t = phi x_{t-1} + e_t with stationary stddev `sigma` (via a linear filter, no Python loop)."""
    from scipy.signal import lfilter

    e = rng.normal(0.0, sigma * np.sqrt(1.0 - phi * phi), size=n)
    return np.asarray(lfilter([1.0], [1.0, -phi], e), dtype=float)


def _daily_curve(phase: np.ndarray) -> np.ndarray:
    """A two-peak day (morning and evening peak, night trough ~0.3) at phase in [0, 1) of the day."""
    morning = np.exp(-(((phase - 0.38) / 0.09) ** 2))
    evening = 1.1 * np.exp(-(((phase - 0.78) / 0.10) ** 2))
    return np.asarray(0.3 + 0.7 * np.maximum(morning, evening) / 1.1, dtype=float)


def fast_cycle(rng: np.random.Generator, n: int) -> np.ndarray:
    """A daily curve compressed so that one day lasts 5 minutes, with 3 % AR(1) noise."""
    t = np.arange(n, dtype=float)
    day_s = 300.0
    return _daily_curve((t / day_s) % 1.0) * (1.0 + _ar1(rng, n, phi=0.9, sigma=0.03))


def flash_crowds(rng: np.random.Generator, n: int) -> np.ndarray:
    """A plateau with a gentle drift; six flash crowds at random times: 2-min ramp to +40 %, held 10 min, 2-min
    ramp down."""
    t = np.arange(n, dtype=float)
    base = 0.65 + 0.08 * np.sin(2 * np.pi * t / n)
    bump = np.zeros(n)
    ramp, hold = 120, 600
    width = 2 * ramp + hold
    starts = np.sort(rng.choice(np.arange(600, max(601, n - width), 60), size=6, replace=False))
    for s in starts:
        profile = np.concatenate([np.linspace(0, 1, ramp), np.ones(hold), np.linspace(1, 0, ramp)])
        end = min(n, int(s) + width)
        bump[int(s) : end] = np.maximum(bump[int(s) : end], profile[: end - int(s)])
    return base * (1.0 + 0.4 * bump) * (1.0 + _ar1(rng, n, phi=0.95, sigma=0.02))


def step_changes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Abrupt level changes between 25 % and 100 % of the peak, each level held 15-50 minutes."""
    levels: list[np.ndarray] = []
    while sum(len(x) for x in levels) < n:
        hold = int(rng.integers(900, 3001))
        levels.append(np.full(hold, rng.uniform(0.25, 1.0)))
    series = np.concatenate(levels)[:n]
    return series * (1.0 + rng.normal(0.0, 0.02, size=n))


def slow_growth(rng: np.random.Generator, n: int) -> np.ndarray:
    """YSB-like: load rising slowly from 25 % to 100 % over the trace, with 10-min ripples and noise."""
    t = np.arange(n, dtype=float)
    trend = 0.25 + 0.75 * (t / max(n - 1, 1)) ** 1.3
    ripple = 1.0 + 0.05 * np.sin(2 * np.pi * t / 600.0 + rng.uniform(0, 2 * np.pi))
    return trend * ripple * (1.0 + _ar1(rng, n, phi=0.98, sigma=0.03))


def noisy_plateau(rng: np.random.Generator, n: int) -> np.ndarray:
    """A flat load at 70 % of the peak with heavy noise: 8 % slow AR(1) wander plus 5 % white noise."""
    slow = _ar1(rng, n, phi=0.995, sigma=0.08)
    return 0.7 * (1.0 + slow + rng.normal(0.0, 0.05, size=n))


def taylor_series(*, seconds_per_sample: float = 30.0, samples: int = 672) -> np.ndarray:
    """pmdarima's `load_taylor` (half-hourly electricity demand in England and Wales, June-August 2000): the
    first `samples` half-hours, each stretched to `seconds_per_sample` s and linearly interpolated to 1 s."""
    from pmdarima.datasets import load_taylor

    y = np.asarray(load_taylor(as_series=False), dtype=float)[:samples]
    n = round(len(y) * seconds_per_sample)
    x = np.arange(n, dtype=float) / seconds_per_sample
    return np.asarray(np.interp(x, np.arange(len(y), dtype=float), y), dtype=float)


def taylor_demand(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real demand: two weeks of pmdarima's Taylor series, a half-hour per 30 s (one day = 24 min); the seed adds
    1 % noise only. Its trough/peak (~0.48) is widened to ~0.25 so the series needs a range of scale-outs."""
    y = taylor_series()[:n]
    if len(y) < n:
        raise SuiteError(f"taylor_demand: the dataset gives {len(y)} s, shape needs {n}")
    low, high = float(y.min()), float(y.max())
    widened = 0.25 + 0.75 * (y - low) / (high - low)
    return widened * (1.0 + rng.normal(0.0, 0.01, size=n))


def _stretched(y: np.ndarray, seconds_per_sample: float) -> np.ndarray:
    """A series with one value per sample, each stretched to `seconds_per_sample` s, linearly interpolated to 1 s."""
    n = round(len(y) * seconds_per_sample)
    x = np.arange(n, dtype=float) / seconds_per_sample
    return np.asarray(np.interp(x, np.arange(len(y), dtype=float), y), dtype=float)


def _widened(name: str, y: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """A real series' first `n` seconds, its range mapped onto 25-100 % so that it needs a range of scale-outs, with
    1 % noise from the seed (the series' own noise is the point)."""
    y = y[:n]
    if len(y) < n or not np.all(np.isfinite(y)) or float(y.max()) <= float(y.min()):
        raise SuiteError(f"{name}: the dataset gives {len(y)} usable s, shape needs {n}")
    low, high = float(y.min()), float(y.max())
    return (0.25 + 0.75 * (y - low) / (high - low)) * (1.0 + rng.normal(0.0, 0.01, size=n))


def wine_sales(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real, seasonal and noisy: pmdarima's `wineind` (monthly Australian wine sales, 1980-1994), a month per 60 s."""
    from pmdarima.datasets import load_wineind

    return _widened("wine_sales", _stretched(np.asarray(load_wineind(as_series=False), dtype=float), 60.0), rng, n)


def heart_rate(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real and noisy: pmdarima's `heartrate` (a subject's heart rate at half-second intervals), a sample per 60 s."""
    from pmdarima.datasets import load_heartrate

    return _widened("heart_rate", _stretched(np.asarray(load_heartrate(as_series=False), dtype=float), 60.0), rng, n)


def sunspot_cycles(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real, bursty: the last 360 months of pmdarima's `sunspots` (monthly counts), a month per 40 s."""
    from pmdarima.datasets import load_sunspots

    y = np.asarray(load_sunspots(as_series=False), dtype=float)[-360:]
    return _widened("sunspot_cycles", _stretched(y, 40.0), rng, n)


def co2_weekly(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real, trend and season: the last 520 weeks of statsmodels' `co2` (Mauna Loa, weekly; missing weeks
    interpolated), a week per 30 s."""
    import statsmodels.api as sm

    weekly = sm.datasets.co2.load_pandas().data["co2"].interpolate(limit_direction="both")
    y = np.asarray(weekly.to_numpy(dtype=float)[-520:], dtype=float)
    return _widened("co2_weekly", _stretched(y, 30.0), rng, n)


def weekly_compressed(rng: np.random.Generator, n: int) -> np.ndarray:
    """A week compressed so that one day lasts 30 minutes: five weekdays of the two-peak curve, then a weekend at
    60 % with a single late peak; 2 % AR(1) noise."""
    t = np.arange(n, dtype=float)
    day_s = 1800.0
    day, phase = np.floor(t / day_s) % 7, (t / day_s) % 1.0
    weekend = 0.6 * (0.35 + 0.65 * np.exp(-(((phase - 0.6) / 0.15) ** 2)))
    curve = np.where(day < 5, _daily_curve(phase), weekend)
    return curve * (1.0 + _ar1(rng, n, phi=0.95, sigma=0.02))


def step_above_max(rng: np.random.Generator, n: int) -> np.ndarray:
    """40 % of the peak for an hour, then a step to the peak, which is 1.3 x what the job is sized for (its
    `sized_for_ratio`), held 40 minutes, then back to 40 %; 2 % noise. Right answer: the maximum through the step."""
    t = np.arange(n, dtype=float)
    level = np.where((t >= 3600) & (t < 3600 + 2400), 1.0, 0.4)
    return level * (1.0 + rng.normal(0.0, 0.02, size=n))


SHAPES: tuple[WorkloadShape, ...] = (
    WorkloadShape("fast_cycle", "daily two-peak curve, one day every 5 min, 3 % noise", 3 * 3600, fast_cycle),
    WorkloadShape("flash_crowds", "plateau with six 2-min ramps to +40 % held 10 min", 4 * 3600, flash_crowds),
    WorkloadShape("step_changes", "abrupt levels 25-100 % held 15-50 min", 4 * 3600, step_changes),
    WorkloadShape("slow_growth", "YSB-like rise from 25 % to 100 % over 6 h, ripples", 6 * 3600, slow_growth),
    WorkloadShape("noisy_plateau", "70 % plateau, 8 % slow wander + 5 % white noise", 3 * 3600, noisy_plateau),
    WorkloadShape("taylor_demand", "pmdarima load_taylor, 2 weeks, 1 day = 24 min", 672 * 30, taylor_demand),
    WorkloadShape("wine_sales", "pmdarima wineind, 176 months, 1 month = 1 min", 176 * 60, wine_sales),
    WorkloadShape("heart_rate", "pmdarima heartrate, 150 samples, 1 sample = 1 min", 150 * 60, heart_rate),
    WorkloadShape("sunspot_cycles", "pmdarima sunspots, last 360 months, 1 month = 40 s", 360 * 40, sunspot_cycles),
    WorkloadShape("co2_weekly", "statsmodels co2, last 520 weeks, 1 week = 30 s", 520 * 30, co2_weekly),
    WorkloadShape("weekly_compressed", "5 weekdays + weekend at 60 %, 1 day = 30 min", 7 * 1800, weekly_compressed),
    WorkloadShape(
        "gaps_in_data",
        "fast_cycle's 5-min day with 4 monitor outages of 2-15 min",
        3 * 3600,
        fast_cycle,
        monitor_gaps_s=((1800, 1920), (3600, 4200), (6000, 6900), (8400, 8700)),
    ),
    WorkloadShape(
        "step_above_max",
        "40 %, a 40-min step to 1.3 x what max_scaleout carries, 40 %",
        3 * 3600,
        step_above_max,
        sized_for_ratio=1 / 1.3,
    ),
)


def shape_names() -> list[str]:
    return [s.name for s in SHAPES]


def get_shape(name: str) -> WorkloadShape:
    for shape in SHAPES:
        if shape.name == name:
            return shape
    raise SuiteError(f"unknown workload shape {name!r} (known: {', '.join(shape_names())})")


def suite_workload(name: str, seed: int = 1) -> np.ndarray:
    """A trace of the suite by name: a bundled trace by its file's stem (`simulate`'s reader), else the shape of
    that name generated with `seed`."""
    path = BUNDLED_TRACES_DIR / f"{name}.csv"
    return read_trace(path) if path.exists() else get_shape(name).generate(seed)


def write_trace(path: str, workload_per_s: np.ndarray) -> None:
    """Write a series as a `second|count` trace that monitor.files.read_trace reads back (for `simulate --trace`)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("second|count\n")
        f.writelines(f"{i}|{v:.3f}\n" for i, v in enumerate(workload_per_s))
