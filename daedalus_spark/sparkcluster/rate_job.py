"""Spark harness: a PySpark streaming job to attach an agent to (rate source, a stateful count per key, 500 ms
micro-batches, until its stop file appears): the JVM plugin through `spark.plugins`, or the Python agent."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's name


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.sparkcluster.rate_job", description=__doc__)
    p.add_argument("--query", default="ratecount")
    p.add_argument("--rows-per-second", type=int, default=200)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--stop-file", type=Path, required=True)
    p.add_argument("--python-agent-port", type=int, default=None, help="start the Python agent on this port")
    p.add_argument("--max-executors", type=int, default=2)
    args = p.parse_args(argv)
    spark = SparkSession.builder.appName("daedalus-rate-count-py").getOrCreate()
    agent = None
    if args.python_agent_port is not None:
        from daedalus_spark.agent import AgentConfig, start_agent

        config = AgentConfig(
            port=args.python_agent_port,
            max_executors=args.max_executors,
            poll_s=0.5,
            token=os.environ.get("DAEDALUS_AGENT_TOKEN"),
        )
        agent = start_agent(spark, config)
    frame = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", str(args.rows_per_second))
        .option("numPartitions", "2")
        .load()
    )
    counts = frame.groupBy((F.col("value") % 16).alias("key")).count()
    query = (
        counts.writeStream.queryName(args.query)
        .outputMode("update")
        .format("noop")
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        while query.isActive and not args.stop_file.exists():
            time.sleep(0.5)
    finally:
        query.stop()
        if agent is not None:
            agent.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
