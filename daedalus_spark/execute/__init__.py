"""Execute: applies an absolute executor count — the agent actuator, the dry run, and Kubernetes."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from daedalus_spark.config import Config
from daedalus_spark.execute.port import Actuator
from daedalus_spark.redact import bearer_token


def make_actuator(config: Config, *, dry_run: bool, environ: Mapping[str, str]) -> Actuator:
    """The actuator the config asks for; `--dry-run` overrides it with the advisor."""
    kind = "dry_run" if dry_run else config.actuator.kind
    if kind == "dry_run":
        from daedalus_spark.execute.dry_run import DryRunActuator

        return DryRunActuator()
    if kind == "kubernetes":
        require_kubernetes_client("actuator.kind kubernetes")
        from daedalus_spark.execute.kubernetes import make_kubernetes_actuator

        return make_kubernetes_actuator(config, environ)
    from daedalus_spark.execute.agent import AgentActuator

    token = bearer_token(
        environ.get(config.actuator.token_env, ""), f"actuator.token_env ({config.actuator.token_env})"
    )
    return AgentActuator(config.actuator, token or None)


def require_kubernetes_client(why: str) -> None:
    """The Kubernetes client is an extra (the agent and dry-run modes do not need it): say so instead of failing on
    an import deep in a start-up."""
    if importlib.util.find_spec("kubernetes") is None:
        raise ValueError(f"{why} needs the Kubernetes client, not installed: pip install 'daedalus-spark[kubernetes]'")
