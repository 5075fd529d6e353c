"""Spark harness: a PySpark streaming job on Spark's Kafka source that an autoscaler has work to do for, the twin of
the Java example `daedalus.spark.example.KafkaCount` (jvm/).

Each record holds its task for a set time (waiting, not computing, so a 2-core machine can host several executors),
which makes one executor's capacity known in advance. Every micro-batch writes its record and byte counts to its own
file, named by the batch id: a batch replayed after a failure rewrites its file, so the files add up to each record
once (`read_counts`). Micro-batches every second, until the stop file appears.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path


def read_counts(output: Path) -> tuple[int, int]:
    """Records and bytes over every batch file a KafkaCount job (Java or Python) wrote into `output`."""
    records = size = 0
    for path in output.glob("batch-*.txt"):
        rows, data = path.read_text().split()
        records, size = records + int(rows), size + int(data)
    return records, size


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daedalus_spark.sparkcluster.kafka_count_job", description=__doc__)
    p.add_argument("--query", default="kafkacount")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--stop-file", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--record-ms", type=float, required=True)
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812 - PySpark's name
    from pyspark.sql.types import LongType

    hold_s = args.record_ms / 1000.0

    def hold(value: bytes | None) -> int:
        time.sleep(hold_s)
        return 0 if value is None else len(value)

    def write_counts(batch: object, batch_id: int) -> None:
        row = batch.agg(F.count(F.lit(1)), F.sum(held(F.col("value")))).first()  # type: ignore[attr-defined]
        partial = args.output / f".{batch_id}.partial"
        partial.write_text(f"{row[0]} {row[1] or 0}\n")
        os.replace(partial, args.output / f"batch-{batch_id}.txt")

    args.output.mkdir(parents=True, exist_ok=True)
    spark = SparkSession.builder.appName("daedalus-kafka-count-py").getOrCreate()
    held = F.udf(hold, LongType())
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        records.writeStream.queryName(args.query)
        .foreachBatch(write_counts)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        while query.isActive and not args.stop_file.exists():
            time.sleep(0.5)
    finally:
        query.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
