"""Execute/Monitor (agent): in-driver agent — Prometheus metrics per executor and query, and executor targets."""

from daedalus_spark.agent.agent import Agent, AgentConfig, start_agent
from daedalus_spark.agent.offset_commit import KafkaCommitter, OffsetCommitListener, OffsetCommits, commit_offsets

__all__ = [
    "Agent",
    "AgentConfig",
    "KafkaCommitter",
    "OffsetCommitListener",
    "OffsetCommits",
    "commit_offsets",
    "start_agent",
]
