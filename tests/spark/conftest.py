"""Spark tests: Spark's Kafka connector (`make kafka-jars`) on the classpath of every driver this test process starts.

The driver's JVM starts once per process, with the first session: `spark.jars` given to a later session reaches its
executors but not the driver, which then finds no `kafka` data source. So the jars go in at the JVM's launch."""

from __future__ import annotations

import os

from daedalus_spark.buildcache import JarsMissing
from daedalus_spark.kafkacluster.jars import connector_jars

try:
    _JARS = ",".join(str(jar) for jar in connector_jars())
except (JarsMissing, LookupError):  # the Kafka tests then fail, naming `make kafka-jars`
    _JARS = ""
if _JARS and "PYSPARK_SUBMIT_ARGS" not in os.environ:
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--jars {_JARS} pyspark-shell"
