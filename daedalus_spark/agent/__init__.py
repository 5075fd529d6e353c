"""Execute/Monitor (agent): in-driver agent — Prometheus metrics per executor and query, and executor targets."""

from daedalus_spark.agent.agent import Agent, AgentConfig, start_agent

__all__ = ["Agent", "AgentConfig", "start_agent"]
