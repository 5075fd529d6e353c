"""Workload: Yahoo Streaming Benchmark — views per campaign in 10-s event-time windows."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from daedalus_spark.workloads.pipeline import Pipeline
from daedalus_spark.workloads.pipeline import main as run
from daedalus_spark.workloads.records import ad_campaign_table

EVENT_SCHEMA = "ad_id string, event_type string, event_time long"
WINDOW = "10 seconds"
WATERMARK = "5 seconds"


def campaigns(spark: SparkSession) -> DataFrame:
    """The ad → campaign lookup table, cached in the job (YSB keeps it in Redis; here it lives in memory)."""
    return F.broadcast(spark.createDataFrame(ad_campaign_table(), "ad_id string, campaign_id string").cache())


def build(spark: SparkSession, values: DataFrame) -> DataFrame:
    events = values.select(F.from_json("value", EVENT_SCHEMA).alias("e")).select("e.*")
    views = (
        events.where(F.col("event_type") == "view")
        .withColumn("event_ts", F.timestamp_millis("event_time"))
        .withWatermark("event_ts", WATERMARK)
    )
    joined = views.join(campaigns(spark), "ad_id")
    counts = joined.groupBy(F.window("event_ts", WINDOW).alias("window"), "campaign_id").count()
    return counts.select(F.col("window.start").alias("window_start"), "campaign_id", "count")


PIPELINE = Pipeline(
    "ysb", "Yahoo Streaming Benchmark: ad views per campaign in 10-s tumbling windows.", build, "append"
)


def main(argv: Sequence[str] | None = None) -> int:
    return run(PIPELINE, argv)


if __name__ == "__main__":
    sys.exit(main())
