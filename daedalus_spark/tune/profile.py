"""Tuning (I/O edge): the simulated job's profile — from what the controller learned (its knowledge store), or an
explicit job-model file."""

from __future__ import annotations

import statistics
from pathlib import Path

from daedalus_spark.config import Config
from daedalus_spark.knowledge.state import IncompatibleKnowledge, Knowledge
from daedalus_spark.sim.jobmodel import JobModel, parse_job_model

# Without a partition count in the config or the knowledge, this many equal partitions per executor of the most
# executors: capacity then grows almost linearly with executors, as the learned per-executor capacity assumes.
PARTITIONS_PER_EXECUTOR = 12


class KnowledgeTooYoung(IncompatibleKnowledge):
    """A store that has not learned what the simulated job needs; says what is missing."""


def job_model_from_knowledge(k: Knowledge, config: Config, source: str) -> JobModel:
    """Capacity per executor from the capacities observed per scale-out, downtimes from the measured recoveries'
    estimates: a continuous job that restarts to rescale, its partitions equal."""
    table = k.history.latest_table
    observed = sorted(n for n in table.observed_scaleouts if n <= len(table.per_scaleout_per_s)) if table else []
    directions = {r.direction for r in k.recoveries}
    missing = []
    if table is None or not observed:
        missing.append("no capacity observed at any scale-out (the controller has not run a tick with executors)")
    for direction, word in (("out", "scale-out"), ("in", "scale-in")):
        if direction not in directions:
            missing.append(f"no {word} recovery measured (its downtime is still the config's initial guess)")
    if missing:
        raise KnowledgeTooYoung(
            f"{source}: the knowledge store is too young for tune: {'; '.join(missing)}; let the controller run "
            "longer, or pass --job-model FILE"
        )
    assert table is not None
    per_executor = statistics.median(table.per_scaleout_per_s[n - 1] / n for n in observed)
    # Settings left to the topic (0) from what the controller saw of it: the partitions it learned shares of, and
    # the table's scale-outs (1..the max_scaleout it planned with).
    topic = len(k.capacity.partition_shares)
    most = config.controller.max_scaleout or topic or len(table.per_scaleout_per_s)
    partitions = config.capacity.partitions or topic or PARTITIONS_PER_EXECUTOR * most
    out_s, in_s = k.recovery.downtime_scale_out_s, k.recovery.downtime_scale_in_s
    return parse_job_model(
        {
            "engine": "continuous",
            "rescale": "restart",
            "executor_capacity_per_s": per_executor,
            "reference_scaleout": most,
            "partitions": partitions,
            "partition_assignment": "any_core",
            "partition_weights": [1.0] * partitions,
            "downtime_scale_out": {"low_s": out_s, "high_s": out_s},
            "downtime_scale_in": {"low_s": in_s, "high_s": in_s},
            "checkpoint_interval_s": config.controller.checkpoint_interval_s,
        },
        source,
    )


def load_profile(knowledge: Path | None, job_model: str | None, config: Config) -> tuple[JobModel, str]:
    """The job model and where it came from: --job-model wins; else the knowledge store; one is required."""
    from daedalus_spark.sim.jobmodel import load_job_model

    if job_model is not None:
        return load_job_model(job_model), f"job model {job_model}"
    if knowledge is None:
        raise IncompatibleKnowledge("no job profile: pass --knowledge STORE (the controller's) or --job-model FILE")
    from daedalus_spark.report.knowledge_report import load_knowledge

    return job_model_from_knowledge(load_knowledge(knowledge, config), config, str(knowledge)), f"knowledge {knowledge}"
