"""Tuning (pure core): the grid YAML — knobs and their candidate values — and every candidate as a whole config."""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass
from typing import Any

from pydantic import Field, field_validator

from daedalus_spark.config import Config, ConfigError, Section, key_paths, load_model, parse_config

MAX_CANDIDATES = 10_000
log = logging.getLogger(__name__)


class TuneGridError(ConfigError):
    """A grid that cannot be used; every line names the grid entry or its YAML path."""

    kind = "tune grid"


# The default lead-in: a simulated controller starts fresh at the maximum scale-out with its rescale budget's bucket
# empty, and the bucket (at most an hour's tokens, refilled at that rate) is full only after an hour, whatever the
# budget. Judged sooner, every candidate sits at the start's scale-out waiting for tokens (docs/tune.md, Measured).
LEAD_IN_S = 3600


class SplitSettings(Section):
    holdout_s: float = Field(
        default=86400, gt=0, le=365 * 86400, description="The newest this-many seconds are held out."
    )
    holdout_max_ratio: float = Field(
        default=0.25, gt=0, lt=1, description="At most this share of the usable history is held out (short histories)."
    )
    window_s: float = Field(
        default=86400, ge=300, le=365 * 86400, description="Each part is simulated in windows of at most this long."
    )
    lead_in_s: float = Field(
        default=LEAD_IN_S,
        ge=0,
        le=86400,
        description="A window's simulation starts this much earlier, unscored: the controller "
        "learns capacity and forecast, and earns its rescale budget, before it is judged.",
    )
    min_window_s: float = Field(
        default=600,
        ge=60,
        le=86400,
        description="Shorter stretches between gaps are dropped (reported), not simulated.",
    )


class HistorySettings(Section):
    step_s: int = Field(default=10, ge=1, le=600, description="Step of the Prometheus range query (whole s).")
    max_gap_ratio: float = Field(
        default=0.1, ge=0, lt=1, description="More of the history missing than this share is refused, not tuned on."
    )


class Constraints(Section):
    max_violations: int = Field(default=0, ge=0, le=1_000_000, description="Violations a recommendation may have.")
    max_rescales_per_hour: float | None = Field(
        default=None, ge=0, le=3600, description="Rescale budget of a recommendation (None: the config's own)."
    )


class TuneGrid(Section):
    seed: int = Field(
        default=1, ge=0, le=2**32 - 1, description="Seed of every simulated window (reruns are identical)."
    )
    split: SplitSettings = SplitSettings()
    history: HistorySettings = HistorySettings()
    constraints: Constraints = Constraints()
    knobs: dict[str, list[Any]] = Field(
        default_factory=dict, description="YAML path of a config key -> candidate values (a list)."
    )

    @field_validator("knobs", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for path, values in value.items():
                if not isinstance(values, list) or not values:
                    raise ValueError(f"{path}: expected a non-empty list of candidate values")
        return value


@dataclass(frozen=True)
class Candidate:
    """One point of the grid: its knob values (YAML path -> value) and the whole config they give."""

    index: int
    knobs: tuple[tuple[str, Any], ...]
    config: Config

    @property
    def label(self) -> str:
        return ", ".join(f"{path}={value}" for path, value in self.knobs) or "your config"


def load_grid(path: str | None) -> TuneGrid:
    """The grid YAML (None: an empty grid, only the config itself); a knob named by a config key's old name is read
    as its new one, with the config's deprecation warning."""
    grid = load_model(TuneGrid, path, TuneGridError)
    knobs: dict[str, list[Any]] = {}
    errors = []
    for knob, values in grid.knobs.items():
        new = Config.MOVED_KEYS.get(knob, knob)
        if new != knob and new in grid.knobs:
            errors.append(f"knobs.{knob} and knobs.{new}: both set (the old and the new name of one key): keep {new}")
        elif new != knob:
            log.warning("%s: knobs.%s is deprecated, write knobs.%s (read as it for now)", path, knob, new)
        knobs[new] = values
    if errors:
        raise TuneGridError(str(path), errors)
    return grid.model_copy(update={"knobs": knobs})


KEY_PATHS = frozenset(key_paths(Config))


def with_values(config: Config, values: dict[str, Any]) -> dict[str, Any]:
    """The config as plain data with `values` (YAML path -> value) set; KeyError names an unknown path."""
    data = config.model_dump(mode="python")
    for path, value in values.items():
        if path not in KEY_PATHS:
            raise KeyError(path)
        *sections, key = path.split(".")
        holder = data
        for section in sections:
            holder = holder[section]
        holder[key] = value
    return data


def _unknown(path: str) -> str:
    section = path.rpartition(".")[0]
    keys = [p.removeprefix(f"{section}.") for p in sorted(KEY_PATHS) if p.startswith(f"{section}.")]
    if not section or not keys:
        sections = ", ".join(Config.model_fields)
        return f"knobs.{path}: unknown config key (expected section.key; sections: {sections})"
    return f"knobs.{path}: unknown config key (allowed in {section}: {', '.join(keys)})"


def _problems(exc: ConfigError) -> str:
    return "; ".join(e.removeprefix("(top level): ") for e in exc.errors)


def _check_knobs(grid: TuneGrid, base: Config, source: str) -> None:
    """Each knob names a config key, and each of its values is valid there on its own (errors by grid path);
    what depends on other keys is checked per grid entry."""
    errors = []
    for path, values in grid.knobs.items():
        for i, value in enumerate(values):
            try:
                parse_config(with_values(base, {path: value}), "config")
            except KeyError:
                errors.append(_unknown(path))
                break
            except ConfigError as exc:
                own = [e for e in exc.errors if e.startswith(f"{path}:")]
                if own:
                    errors.append(f"knobs.{path}[{i}] = {value!r}: " + "; ".join(own))
    if errors:
        raise TuneGridError(source, errors)


def candidates(grid: TuneGrid, base: Config, source: str = "grid") -> list[Candidate]:
    """Candidate 0 is `base` unchanged; then every combination of the knobs' values, each validated as a whole
    config (an error names the grid entry and the config's YAML path)."""
    _check_knobs(grid, base, source)
    paths = list(grid.knobs)
    count = math.prod(len(v) for v in grid.knobs.values())
    if count > MAX_CANDIDATES:
        raise TuneGridError(source, [f"knobs: {count} combinations, more than {MAX_CANDIDATES}"])
    out = [Candidate(0, (), base)]
    errors: list[str] = []
    for combo in itertools.product(*(grid.knobs[p] for p in paths)) if paths else ():
        knobs = tuple(zip(paths, combo, strict=True))
        index = len(out) + len(errors)
        try:
            config = parse_config(with_values(base, dict(knobs)), "config")
        except ConfigError as exc:
            entry = ", ".join(f"{p}={v!r}" for p, v in knobs)
            errors.append(f"grid entry {index} ({entry}): {_problems(exc)}")
            continue
        out.append(Candidate(index, knobs, config))
    if errors:
        raise TuneGridError(source, errors[:5] + ([f"... and {len(errors) - 5} more"] if len(errors) > 5 else []))
    return out
