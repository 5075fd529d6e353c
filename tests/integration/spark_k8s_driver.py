"""A Spark driver on Kubernetes in client mode, for the tests against the real API server: it asks for executor pods
with the given conf, as the ServiceAccount whose token it is given, until the stop file appears; then it stops."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    settings = json.loads(argv[0])
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(f"k8s://{settings['url']}").appName("wordcount")
    for key, value in settings["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    print("session up", flush=True)
    deadline = time.monotonic() + float(settings["timeout_s"])
    while not Path(settings["stop_file"]).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    spark.stop()
    print("session stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
