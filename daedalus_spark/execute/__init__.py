"""Execute: applies an absolute executor count — the agent actuator, the dry run, and Kubernetes."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING

from daedalus_spark.config import Config
from daedalus_spark.execute.port import Actuator
from daedalus_spark.redact import bearer_token

if TYPE_CHECKING:
    from daedalus_spark.execute.agent import AgentActuator


def make_actuator(config: Config, *, dry_run: bool, environ: Mapping[str, str]) -> Actuator:
    """The actuator the config asks for; `--dry-run` overrides it with the advisor."""
    if dry_run or config.actuator.kind == "dry_run":
        from daedalus_spark.execute.dry_run import DryRunActuator

        # Beside an agent, the live count is read from it (a GET changes nothing); otherwise it stays unknown.
        reader = _agent(config, environ) if config.actuator.kind == "agent" else None
        return DryRunActuator(read_live=None if reader is None else reader.current)
    if config.actuator.kind == "kubernetes":
        require_kubernetes_client("actuator.kind kubernetes")
        from daedalus_spark.execute.kubernetes_scale import make_kubernetes_actuator

        return make_kubernetes_actuator(config, environ)
    return _agent(config, environ)


def _agent(config: Config, environ: Mapping[str, str]) -> AgentActuator:
    from daedalus_spark.execute.agent import AgentActuator

    where = f"actuator.token_env ({config.actuator.token_env})"
    token = bearer_token(environ.get(config.actuator.token_env, ""), where)
    return AgentActuator(config.actuator, token or None)


def require_kubernetes_client(why: str) -> None:
    """The Kubernetes client is an extra (the agent and dry-run modes do not need it): say so instead of failing on
    an import deep in a start-up."""
    if importlib.util.find_spec("kubernetes") is None:
        raise ValueError(f"{why} needs the Kubernetes client, not installed: pip install 'daedalus-spark[kubernetes]'")
