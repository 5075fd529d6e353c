"""Configuration: the one YAML file that tunes the controller, validated at the boundary (pydantic).

A package split by section; every name is re-exported here, so `from daedalus_spark.config import X` is the one way in.
"""

from daedalus_spark.config.actuation import ActuatorConfig, AgentSettings, KubernetesConfig, RuntimeConfig
from daedalus_spark.config.control import (
    CapacityConfig,
    ControllerConfig,
    CostAwarePlannerConfig,
    ForecastConfig,
    HorizonPlannerConfig,
    RecoveryConfig,
)
from daedalus_spark.config.demo import DemoConfig
from daedalus_spark.config.fields import Section, http_url
from daedalus_spark.config.loading import (
    ConfigError,
    StrictYamlLoader,
    key_paths,
    load_config,
    load_model,
    parse_config,
    parse_model,
    render_yaml,
)
from daedalus_spark.config.model import (
    HISTORY_LIMIT,
    RESCALE_BUDGET_WINDOW_S,
    Config,
    KnowledgeConfig,
    history_windows,
    with_topic_partitions,
)
from daedalus_spark.config.monitor import PLACEHOLDERS, MonitorConfig

__all__ = [
    "HISTORY_LIMIT",
    "PLACEHOLDERS",
    "RESCALE_BUDGET_WINDOW_S",
    "ActuatorConfig",
    "AgentSettings",
    "CapacityConfig",
    "Config",
    "ConfigError",
    "ControllerConfig",
    "CostAwarePlannerConfig",
    "DemoConfig",
    "ForecastConfig",
    "HorizonPlannerConfig",
    "KnowledgeConfig",
    "KubernetesConfig",
    "MonitorConfig",
    "RecoveryConfig",
    "RuntimeConfig",
    "Section",
    "StrictYamlLoader",
    "history_windows",
    "http_url",
    "key_paths",
    "load_config",
    "load_model",
    "parse_config",
    "parse_model",
    "render_yaml",
    "with_topic_partitions",
]
