"""Workload: WordCount — lines of text to words to a running count per word (stateful)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from daedalus_spark.workloads.pipeline import Pipeline
from daedalus_spark.workloads.pipeline import main as run


def build(spark: SparkSession, values: DataFrame) -> DataFrame:
    words = values.select(F.explode(F.split(F.col("value"), r"\s+")).alias("word")).where(F.col("word") != "")
    return words.groupBy("word").count()


PIPELINE = Pipeline("wordcount", "WordCount: running count per word of streamed text lines.", build, "update")


def main(argv: Sequence[str] | None = None) -> int:
    return run(PIPELINE, argv)


if __name__ == "__main__":
    sys.exit(main())
