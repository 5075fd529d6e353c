"""Execute: applies an absolute worker count — the agent actuator, the dry run, and (issue 8) Kubernetes."""

from __future__ import annotations

from collections.abc import Mapping

from daedalus_spark.config import Config
from daedalus_spark.execute.port import Actuator


def make_actuator(config: Config, *, dry_run: bool, environ: Mapping[str, str]) -> Actuator:
    """The actuator the config asks for; `--dry-run` overrides it with the advisor."""
    kind = "dry_run" if dry_run else config.actuator.kind
    if kind == "dry_run":
        from daedalus_spark.execute.dry_run import DryRunActuator

        return DryRunActuator()
    if kind == "kubernetes":
        from daedalus_spark.execute.kubernetes import make_kubernetes_actuator

        return make_kubernetes_actuator(config, environ)
    from daedalus_spark.execute.agent import AgentActuator

    return AgentActuator(config.actuator, environ.get(config.actuator.token_env) or None)
