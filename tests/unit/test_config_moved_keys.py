"""Keys moved under their planner: the new names load silently, the old flat names load with a deprecation warning
naming the old key, the new key and the file, and both names of one key are an error naming both."""

import functools
import logging
import re
from typing import Any

import pytest
import yaml

from daedalus_spark.config import Config, ConfigError, load_config, parse_config
from daedalus_spark.tune.diff import changed_knobs, recommended_yaml
from daedalus_spark.tune.grid import TuneGridError, candidates, load_grid
from tests.conftest import ROOT

LOGGER = "daedalus_spark.config.loading"
OLD_NAMES_FIXTURE = ROOT / "tests" / "data" / "config_old_planner_keys.yaml"


def _at(data: Any, path: str) -> Any:
    return functools.reduce(lambda d, k: getattr(d, k) if not isinstance(d, dict) else d[k], path.split("."), data)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    ("data", "path", "value", "warning"),
    [
        pytest.param(
            {"controller": {"horizon_upper_weight_ratio": 0.25}},
            "controller.horizon.upper_weight_ratio",
            0.25,
            "my.yaml: controller.horizon_upper_weight_ratio is deprecated, write controller.horizon.upper_weight_ratio",
            id="old-horizon-upper-weight",
        ),
        pytest.param(
            {"controller": {"horizon_target_share_ratio": 0.75}},
            "controller.horizon.target_share_ratio",
            0.75,
            "my.yaml: controller.horizon_target_share_ratio is deprecated, write controller.horizon.target_share_ratio",
            id="old-horizon-target-share",
        ),
        pytest.param(
            {"controller": {"scale_in_lookback_s": 300}},
            "controller.cost_aware.scale_in_lookback_s",
            300,
            "my.yaml: controller.scale_in_lookback_s is deprecated, write controller.cost_aware.scale_in_lookback_s",
            id="old-cost-aware-lookback",
        ),
        pytest.param(
            {"controller": {"horizon_upper_weight_ratio": 0.25, "horizon": {"target_share_ratio": 0.75}}},
            "controller.horizon.upper_weight_ratio",
            0.25,
            "my.yaml: controller.horizon_upper_weight_ratio is deprecated, write controller.horizon.upper_weight_ratio",
            id="old-name-beside-a-new-sibling",
        ),
        pytest.param(
            {"controller": {"horizon": {"upper_weight_ratio": 0.25}}},
            "controller.horizon.upper_weight_ratio",
            0.25,
            None,
            id="new-horizon-upper-weight",
        ),
        pytest.param(
            {"controller": {"horizon": {"target_share_ratio": 0.75}}},
            "controller.horizon.target_share_ratio",
            0.75,
            None,
            id="new-horizon-target-share",
        ),
        pytest.param(
            {"controller": {"cost_aware": {"scale_in_lookback_s": 300}}},
            "controller.cost_aware.scale_in_lookback_s",
            300,
            None,
            id="new-cost-aware-lookback",
        ),
    ],
)
def test_old_names_load_with_a_warning_and_new_names_silently(
    data: dict[str, Any], path: str, value: float, warning: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    given = yaml.safe_load(yaml.safe_dump(data))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        config = parse_config(data, "my.yaml")
    assert _at(config, path) == value
    assert _warnings(caplog) == ([f"{warning} (read as it for now)"] if warning else [])
    assert data == given, "the caller's data is left as it was"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            {"controller": {"horizon_upper_weight_ratio": 0.25, "horizon": {"upper_weight_ratio": 0.5}}},
            "controller.horizon_upper_weight_ratio and controller.horizon.upper_weight_ratio: both set",
            id="both-horizon-upper-weight",
        ),
        pytest.param(
            {"controller": {"scale_in_lookback_s": 300, "cost_aware": {"scale_in_lookback_s": 300}}},
            "controller.scale_in_lookback_s and controller.cost_aware.scale_in_lookback_s: both set",
            id="both-cost-aware-lookback-even-when-equal",
        ),
        pytest.param(
            {"controller": {"horizon": {"upper_weight": 0.5}}},
            "controller.horizon.upper_weight: unknown key (allowed here: target_share_ratio, upper_weight_ratio)",
            id="unknown-key-in-a-planner-section",
        ),
        pytest.param(
            {"controller": {"horizon_upper_weight": 0.5}},
            "controller.horizon_upper_weight: unknown key (allowed here: ",
            id="unknown-flat-key",
        ),
        pytest.param(
            {"controller": {"horizon": 0.5}},
            "controller.horizon: Input should be a valid dictionary or instance of HorizonPlannerConfig",
            id="planner-section-not-a-mapping",
        ),
    ],
)
def test_both_names_and_unknown_keys_are_errors(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data, "my.yaml")
    assert expected in str(err.value)
    assert str(err.value).startswith("my.yaml: invalid config")


def test_a_file_with_the_old_names_loads_as_its_new_names_with_a_warning_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        config = load_config(OLD_NAMES_FIXTURE)
    new = parse_config(
        {
            "controller": {
                "planner": "cost_aware",
                "horizon": {"upper_weight_ratio": 0.25, "target_share_ratio": 0.75},
                "cost_aware": {"scale_in_lookback_s": 300},
            }
        }
    )
    assert config == new
    logged = _warnings(caplog)
    assert len(logged) == 3 and all(line.startswith(f"{OLD_NAMES_FIXTURE}: controller.") for line in logged)
    assert [line.split()[1] for line in logged] == list(Config.MOVED_KEYS)


def test_the_shipped_configs_use_the_new_names(caplog: pytest.LogCaptureFixture) -> None:
    shipped = [ROOT / "deploy" / "daedalus.yaml", ROOT / "deploy" / "demo.yaml"]
    shipped += sorted((ROOT / "deploy" / "kubernetes").rglob("daedalus.yaml"))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for path in shipped:
            load_config(path)
    assert _warnings(caplog) == []


# --- tune: knobs and the recommended YAML at the nested paths ----------------------------------------------------


def test_a_grid_knob_at_an_old_name_is_read_as_the_new_one(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    grid_file = tmp_path / "tune.yaml"
    grid_file.write_text("knobs:\n  controller.horizon_target_share_ratio: [0.5, 0.75]\n")
    with caplog.at_level(logging.WARNING, logger="daedalus_spark.tune.grid"):
        grid = load_grid(str(grid_file))
    assert list(grid.knobs) == ["controller.horizon.target_share_ratio"]
    assert [c.config.controller.horizon.target_share_ratio for c in candidates(grid, Config())[1:]] == [0.5, 0.75]
    assert any("knobs.controller.horizon_target_share_ratio is deprecated" in r.getMessage() for r in caplog.records)
    both = tmp_path / "both.yaml"
    both.write_text(
        "knobs:\n  controller.scale_in_lookback_s: [60]\n  controller.cost_aware.scale_in_lookback_s: [60]\n"
    )
    with pytest.raises(
        TuneGridError, match=r"knobs\.controller\.scale_in_lookback_s and knobs\.controller\.cost_aware"
    ):
        load_grid(str(both))


def test_a_grid_knob_names_a_nested_key_or_is_unknown() -> None:
    from daedalus_spark.tune.grid import TuneGrid

    grid = TuneGrid.model_validate({"knobs": {"controller.cost_aware.scale_in_lookback_s": [0, 300]}})
    assert [c.config.controller.cost_aware.scale_in_lookback_s for c in candidates(grid, Config())] == [600, 0, 300]
    for knob in ("controller.horizon", "controller.horizon.upper"):
        with pytest.raises(TuneGridError, match=re.escape(f"knobs.{knob}: unknown config key")):
            candidates(TuneGrid.model_validate({"knobs": {knob: [1]}}), Config())


NESTED_USER = """\
controller:
  horizon:
    upper_weight_ratio: 0.5   # the default
  max_scaleout: 8
"""
FLAT_USER = """\
controller:
  horizon_upper_weight_ratio: 0.5   # written before the key moved
  max_scaleout: 8
"""


@pytest.mark.parametrize(
    ("user", "changes", "expected_lines"),
    [
        pytest.param(
            NESTED_USER,
            {"controller.horizon.upper_weight_ratio": 0.25},
            ["  horizon:", "    upper_weight_ratio: 0.25   # the default", "  max_scaleout: 8"],
            id="nested-in-place",
        ),
        pytest.param(
            NESTED_USER,
            {"controller.horizon.target_share_ratio": 0.75},
            ["  horizon:", "    target_share_ratio: 0.75", "    upper_weight_ratio: 0.5   # the default"],
            id="nested-key-added",
        ),
        pytest.param(
            NESTED_USER,
            {"controller.cost_aware.scale_in_lookback_s": 300},
            ["controller:", "  cost_aware:", "    scale_in_lookback_s: 300", "  horizon:"],
            id="nested-section-added",
        ),
        pytest.param(
            "",
            {"controller.horizon.upper_weight_ratio": 0.25},
            ["controller:", "  horizon:", "    upper_weight_ratio: 0.25"],
            id="from-no-file",
        ),
        pytest.param(
            FLAT_USER,
            {"controller.horizon.upper_weight_ratio": 0.25},
            ["  horizon_upper_weight_ratio: 0.25   # written before the key moved", "  max_scaleout: 8"],
            id="old-name-edited-where-the-user-wrote-it",
        ),
    ],
)
def test_recommended_yaml_at_nested_paths(user: str, changes: dict[str, Any], expected_lines: list[str]) -> None:
    text = recommended_yaml(user, changes)
    lines = text.splitlines()
    start = lines.index(expected_lines[0])
    assert lines[start : start + len(expected_lines)] == expected_lines
    config = parse_config(yaml.safe_load(text))
    for path, value in changes.items():
        assert _at(config, path) == value


def test_changed_knobs_at_nested_paths() -> None:
    current = Config().model_dump(mode="python")
    knobs = {"controller.horizon.upper_weight_ratio": 0.5, "controller.horizon.target_share_ratio": 0.75}
    assert changed_knobs(knobs, current) == {"controller.horizon.target_share_ratio": 0.75}
