"""Spark harness: a local Spark standalone cluster started from the pip-installed PySpark."""

from daedalus_spark.sparkcluster.cluster import LocalCluster, cpu_quota_support

__all__ = ["LocalCluster", "cpu_quota_support"]
