"""Workload: Traffic Monitoring — mean speed per vehicle near a point in 10-s windows, enriched."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from daedalus_spark.workloads.pipeline import Pipeline
from daedalus_spark.workloads.pipeline import main as run
from daedalus_spark.workloads.records import CENTER_LAT, CENTER_LON, vehicle_table

EVENT_SCHEMA = "vehicle_id string, lat double, lon double, speed double, event_time long"
RADIUS_KM = 3.0
EARTH_RADIUS_KM = 6371.0
WINDOW = "10 seconds"
WATERMARK = "5 seconds"


def distance_km(lat: Column, lon: Column, lat0: float = CENTER_LAT, lon0: float = CENTER_LON) -> Column:
    """Haversine distance to (lat0, lon0)."""
    dlat, dlon = F.radians(lat - F.lit(lat0)), F.radians(lon - F.lit(lon0))
    h = F.sin(dlat / 2) ** 2 + F.cos(F.radians(F.lit(lat0))) * F.cos(F.radians(lat)) * F.sin(dlon / 2) ** 2
    return F.lit(2 * EARTH_RADIUS_KM) * F.asin(F.sqrt(h))


def vehicles(spark: SparkSession) -> DataFrame:
    schema = "vehicle_id string, vehicle_type string, seats int"
    return F.broadcast(spark.createDataFrame(vehicle_table(), schema).cache())


def build(spark: SparkSession, values: DataFrame) -> DataFrame:
    events = values.select(F.from_json("value", EVENT_SCHEMA).alias("e")).select("e.*")
    near = (
        events.where(distance_km(F.col("lat"), F.col("lon")) <= RADIUS_KM)
        .withColumn("event_ts", F.timestamp_millis("event_time"))
        .withWatermark("event_ts", WATERMARK)
    )
    speeds = near.groupBy(F.window("event_ts", WINDOW).alias("window"), "vehicle_id").agg(
        F.avg("speed").alias("avg_speed"), F.count("*").alias("events")
    )
    flat = speeds.select(F.col("window.start").alias("window_start"), "vehicle_id", "avg_speed", "events")
    return flat.join(vehicles(spark), "vehicle_id", "left")


PIPELINE = Pipeline(
    "traffic", "Traffic Monitoring: mean speed per vehicle within a radius, 10-s windows.", build, "append"
)


def main(argv: Sequence[str] | None = None) -> int:
    return run(PIPELINE, argv)


if __name__ == "__main__":
    sys.exit(main())
