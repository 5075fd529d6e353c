"""Workload: the `daedalus_log` Spark streaming data source over the local log, plus source/sink wiring."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from daedalus_spark.workloads.locallog import LocalLog

SOURCE_NAME = "daedalus_log"
SCHEMA = "value string, partition int, offset long"
KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}"

Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class LogPartition(InputPartition):
    partition: int
    start: int
    end: int


class LocalLogStreamReader(DataSourceStreamReader):
    """Reads each log partition from the last end offset; commits offsets as the consumer group `group`."""

    def __init__(self, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}  # Spark hands options over case-insensitively
        self.path = options["path"]
        self.topic = options["topic"]
        self.group = options.get("group", "spark")
        self.max_per_trigger = int(options.get("maxrecordspertrigger", "0"))
        self._latest: Offsets | None = None

    def _log(self) -> LocalLog:
        return LocalLog(self.path)

    def initialOffset(self) -> Offsets:
        return {self.topic: {str(p): 0 for p in range(self._log().partitions(self.topic))}}

    def latestOffset(self, start: Offsets | None = None, limit: Any = None) -> Offsets:
        latest = {str(p): o for p, o in self._log().latest_offsets(self.topic).items()}
        self._latest = {self.topic: dict(latest)}
        if start is not None and self.max_per_trigger > 0:
            begin = start[self.topic]
            latest = {p: min(o, begin.get(p, 0) + self.max_per_trigger) for p, o in latest.items()}
        return {self.topic: latest}

    def reportLatestOffset(self) -> Offsets | None:
        return self._latest

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[LogPartition]:
        begin, finish = start[self.topic], end[self.topic]
        return [
            LogPartition(int(p), begin.get(p, 0), o)
            for p, o in sorted(finish.items(), key=lambda kv: int(kv[0]))
            if o > begin.get(p, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int]]:
        assert isinstance(partition, LogPartition)
        log = LocalLog(self.path)
        for offset, value in log.read(self.topic, partition.partition, partition.start, partition.end):
            yield value, partition.partition, offset

    def commit(self, end: Offsets) -> None:
        self._log().commit(self.topic, self.group, {int(p): o for p, o in end[self.topic].items()})


class LocalLogDataSource(DataSource):
    """`spark.readStream.format("daedalus_log").option("path", ...).option("topic", ...)`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return LocalLogStreamReader(dict(self.options))


def read_values(
    spark: SparkSession,
    *,
    source: str,
    topic: str,
    path: str = "",
    bootstrap: str = "",
    max_per_trigger: int = 0,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A streaming DataFrame with one string column `value`, from the local log or from Kafka (`options`: more
    `kafka.*` client settings, e.g. TLS or SASL)."""
    if source == "local":
        spark.dataSource.register(LocalLogDataSource)
        reader = spark.readStream.format(SOURCE_NAME).option("path", path).option("topic", topic)
        if max_per_trigger:
            reader = reader.option("maxRecordsPerTrigger", str(max_per_trigger))
        return reader.load().select("value")
    if source == "kafka":
        reader = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .options(**dict(options or {}))
        )
        if max_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
        return reader.load().selectExpr("CAST(value AS STRING) AS value")
    raise ValueError(f"unknown source {source!r} (local or kafka)")


def write_stream(
    frame: DataFrame,
    *,
    sink: str,
    name: str,
    output_mode: str,
    checkpoint: str,
    trigger_s: float,
    bootstrap: str = "",
    topic: str = "",
    path: str = "",
    options: Mapping[str, str] | None = None,
) -> DataStreamWriter:
    """A configured (not started) writer to console, memory, Kafka, or `files`: each micro-batch's output rows as
    Parquet under `path`/batch=<id>, overwritten when a batch runs again (idempotent per batch id: exactly once)."""
    writer = frame.writeStream.queryName(name).outputMode(output_mode).trigger(processingTime=f"{trigger_s} seconds")
    if checkpoint:
        writer = writer.option("checkpointLocation", checkpoint)
    if sink in ("console", "memory", "noop"):
        return writer.format(sink)
    if sink == "files":
        if not path:
            raise ValueError("sink files needs a path")

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            batch.write.mode("overwrite").parquet(f"{path}/batch={batch_id:010d}")

        return writer.foreachBatch(write_batch)
    if sink == "kafka":
        out = frame.selectExpr("to_json(struct(*)) AS value").writeStream.queryName(name).outputMode(output_mode)
        return (
            out.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .options(**dict(options or {}))
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime=f"{trigger_s} seconds")
        )
    raise ValueError(f"unknown sink {sink!r} (console, memory, noop, files or kafka)")
