"""Workload: shared command line, session and query wiring of the three benchmark pipelines."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from daedalus_spark.cliargs import key_value
from daedalus_spark.kafkacluster import security
from daedalus_spark.workloads.locallog import LocalLog
from daedalus_spark.workloads.source import KAFKA_PACKAGE, read_values, write_stream

if TYPE_CHECKING:
    from daedalus_spark.agent import AgentConfig

Build = Callable[[SparkSession, DataFrame], DataFrame]


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    build: Build
    output_mode: str


def _rounds(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= 0")
    return int(text)


def parser(pipeline: Pipeline) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"python -m daedalus_spark.workloads.{pipeline.name}",
        description=pipeline.description,
        epilog=(
            "Kafka source/sink: Spark's Kafka connector on the classpath (locally `make kafka-jars`, found in the "
            f"cache; with spark-submit --packages {KAFKA_PACKAGE} or --jars)"
        ),
    )
    p.add_argument("--source", choices=("local", "kafka"), default="local")
    p.add_argument("--log-dir", default="/tmp/daedalus-log", help="local log root (source local)")
    p.add_argument("--partitions", type=int, default=4, help="partitions of a new local topic")
    p.add_argument("--bootstrap-servers", default="localhost:9092", help="Kafka bootstrap servers (source kafka)")
    p.add_argument(
        "--group",
        default="",
        help="consumer group the batches' end offsets are committed for (source kafka; default daedalus-<pipeline>)",
    )
    p.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more Kafka (Java) client settings for Spark's source and sink, without the kafka. prefix "
        "(e.g. ssl.keystore.location=...); they override the --kafka-* security options for Spark",
    )
    security.add_arguments(p)
    p.add_argument("--topic", default=pipeline.name)
    p.add_argument("--sink", choices=("console", "memory", "noop", "files", "kafka"), default="console")
    p.add_argument("--sink-path", default="", help="directory of the files sink (Parquet per micro-batch)")
    p.add_argument("--sink-topic", default=f"{pipeline.name}-out")
    p.add_argument("--checkpoint", default="", help="checkpoint directory (required for kafka sink)")
    p.add_argument("--trigger-s", type=float, default=1.0, help="micro-batch trigger interval, seconds")
    p.add_argument("--master", default="", help="Spark master URL (default: from spark-submit or local[2])")
    p.add_argument("--max-per-trigger", type=int, default=0, help="records per partition per batch, 0 = all")
    p.add_argument(
        "--record-cost-rounds",
        type=_rounds,
        default=0,
        help="extra CPU per record: this many chained SHA-256 rounds over its value, results unchanged (0 = none)",
    )
    p.add_argument("--agent-port", type=int, default=0, help="start the daedalus agent on this port (0 = off)")
    p.add_argument("--agent-host", default="", help="default: agent.host of --config (127.0.0.1)")
    p.add_argument("--max-executors", type=int, default=None, help="default: agent.max_executors of --config")
    p.add_argument("--initial-executors", type=int, default=None, help="executor target the agent sets at start")
    p.add_argument("--config", default=None, help="daedalus-spark YAML whose agent: section configures the agent")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting (repeatable)")
    return p


def agent_config(args: argparse.Namespace, environ: Mapping[str, str]) -> AgentConfig:
    """The agent's settings: the YAML's `agent:` section, with explicit command-line options taking precedence."""
    from daedalus_spark.agent import AgentConfig
    from daedalus_spark.config import load_config

    settings = load_config(args.config).agent
    return AgentConfig(
        port=args.agent_port or settings.port,
        host=args.agent_host or settings.host,
        token=environ.get(settings.token_env) or None,
        min_executors=settings.min_executors,
        max_executors=args.max_executors or settings.max_executors,
        poll_s=settings.poll_s,
        initial_target=args.initial_executors,
    )


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def kafka_jars_conf(conf: Sequence[str]) -> list[str]:
    """`spark.jars=<the connector from make kafka-jars>` unless the caller set spark.jars or the jars are not
    cached here (a job image has them in Spark's own jars folder)."""
    if any(setting.partition("=")[0].strip() == "spark.jars" for setting in conf):
        return []
    from daedalus_spark.buildcache import JarsMissing
    from daedalus_spark.kafkacluster.jars import spark_jars_conf

    try:
        return [f"spark.jars={spark_jars_conf()['spark.jars']}"]
    except (JarsMissing, ImportError, LookupError) as exc:
        print(f"note: {exc}; Spark's Kafka source must then be on Spark's classpath", file=sys.stderr)
        return []


def kafka_options(settings: Sequence[str], secured: security.KafkaSecurity | None = None) -> dict[str, str]:
    """The security settings and then `--kafka-option KEY=VALUE` as Spark's `kafka.KEY` options."""
    options = secured.spark_options() if secured is not None else {}
    for key, value in _settings(settings, "--kafka-option"):
        options[f"kafka.{key.removeprefix('kafka.')}"] = value
    return options


def _settings(settings: Sequence[str], option: str) -> list[tuple[str, str]]:
    try:
        return [key_value(setting, option) for setting in settings]
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def session(name: str, master: str = "", conf: Sequence[str] = ()) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"daedalus-{name}")
    for key, value in _settings(conf, "--conf"):
        builder = builder.config(key, value)
    if master:  # otherwise spark-submit's --master, or PySpark's default local[*]
        builder = builder.master(master)
    spark = builder.getOrCreate()
    # A small default for the demo jobs only where nobody chose one: a builder setting would override what
    # spark-submit --conf or the SparkApplication's sparkConf set (both land in the SparkContext's conf).
    if not spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        spark.conf.set(SHUFFLE_PARTITIONS, "4")
    return spark


def with_record_cost(values: DataFrame, rounds: int) -> DataFrame:
    """`values` with `rounds` chained SHA-256 digests computed for every record and kept only if the last one is
    64 hex digits, which it always is: a per-record CPU cost in the executors' JVM that leaves every result as it
    was. A job whose per-record cost dominates its per-batch cost, for a demo that needs more than one executor."""
    if rounds < 0:
        raise ValueError(f"record cost rounds {rounds}: expected >= 0")
    if rounds == 0:
        return values
    digest = F.aggregate(F.sequence(F.lit(1), F.lit(rounds)), F.col("value"), lambda acc, _: F.sha2(acc, 256))
    return values.where(F.length(digest) == 64)


def start(
    spark: SparkSession, pipeline: Pipeline, args: argparse.Namespace, secured: security.KafkaSecurity | None = None
) -> StreamingQuery:
    if args.source == "local":
        LocalLog(args.log_dir).create_topic(args.topic, args.partitions)
    values = read_values(
        spark,
        source=args.source,
        topic=args.topic,
        path=args.log_dir,
        bootstrap=args.bootstrap_servers,
        max_per_trigger=args.max_per_trigger,
        options=kafka_options(args.kafka_option, secured),
    )
    result = pipeline.build(spark, with_record_cost(values, args.record_cost_rounds))
    writer = write_stream(
        result,
        sink=args.sink,
        name=pipeline.name,
        output_mode=pipeline.output_mode,
        checkpoint=args.checkpoint,
        trigger_s=args.trigger_s,
        bootstrap=args.bootstrap_servers,
        topic=args.sink_topic,
        path=args.sink_path,
        options=kafka_options(args.kafka_option, secured),
    )
    return writer.start()


def main(pipeline: Pipeline, argv: Sequence[str] | None = None) -> int:
    args = parser(pipeline).parse_args(argv)
    from daedalus_spark.config import ConfigError

    try:
        config = agent_config(args, os.environ) if args.agent_port or args.config else None
        secured = security.from_arguments(args)
    except (ConfigError, security.KafkaSecurityError) as exc:
        raise SystemExit(f"{pipeline.name}: {exc}") from None
    kafka = args.source == "kafka" or args.sink == "kafka"
    spark = session(pipeline.name, args.master, [*args.conf, *(kafka_jars_conf(args.conf) if kafka else [])])
    agent = commits = broker = None
    if args.source == "kafka":
        from daedalus_spark.agent.offset_commit import commit_offsets
        from daedalus_spark.kafkacluster.offsets import BrokerOffsets

        broker = BrokerOffsets(args.bootstrap_servers, secured.kafka_python())
        commits = commit_offsets(
            spark,
            args.group or f"daedalus-{pipeline.name}",
            args.bootstrap_servers,
            query_name=pipeline.name,
            client_config=secured.kafka_python(),
        )
    if config is not None:
        from daedalus_spark.agent import start_agent

        log, topic = LocalLog(args.log_dir), args.topic
        live = {topic: lambda: log.latest_offsets(topic)} if args.source == "local" else None
        if broker is not None:  # the broker's log-end offsets: lag and workload move between batches
            live = {topic: lambda: broker.latest_offsets(topic)}
        agent = start_agent(spark, config, latest_offsets=live)
    query = start(spark, pipeline, args, secured)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    finally:
        if agent is not None:
            agent.stop()
        if commits is not None:
            commits.stop()
        if broker is not None:
            broker.close()
        spark.stop()
    return 0
