"""The local-log source with a cap per partition, for spark_capacity.py's capped backlogs.

Spark pickles a Python data source to its workers, which do not have benchmarks/ on their path: this module is
registered with cloudpickle to be pickled by value, as it would be if it were defined in the script run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType

from daedalus_spark.workloads.source import LocalLogDataSource, LocalLogStreamReader

cloudpickle.register_pickle_by_value(sys.modules[__name__])

CAPPED_SOURCE = "daedalus_log_capped"


class PartitionCapReader(LocalLogStreamReader):
    """The local log reader with its own cap per partition (option `caps`, comma-separated): a skewed preload
    drained in capped batches keeps its skew, which one maxRecordsPerTrigger for all partitions would flatten."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        raw = {k.lower(): v for k, v in options.items()}.get("caps", "")
        self.caps = [int(c) for c in raw.split(",")] if raw else []

    def latestOffset(self, start: Any = None, limit: Any = None) -> Any:  # noqa: N802 - Spark's name
        offsets = super().latestOffset(None, limit)  # uncapped; remembers the live latest for reportLatestOffset
        if start is None or not self.caps:
            return offsets
        begin = start[self.topic]
        return {self.topic: {p: min(o, begin.get(p, 0) + self.caps[int(p)]) for p, o in offsets[self.topic].items()}}


class CappedLogSource(LocalLogDataSource):
    @classmethod
    def name(cls) -> str:
        return CAPPED_SOURCE

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        return PartitionCapReader(dict(self.options))


def capped_values(spark: SparkSession, path: Path, topic: str, caps: Sequence[int] | None) -> DataFrame:
    spark.dataSource.register(CappedLogSource)
    reader = spark.readStream.format(CAPPED_SOURCE).option("path", str(path)).option("topic", topic)
    if caps:
        reader = reader.option("caps", ",".join(str(c) for c in caps))
    return reader.load().select("value")
