"""Workload: spark-submit entry point — `spark-submit workloads/submit.py wordcount|ysb|traffic …`.

spark-submit needs a file, not a module; the pipelines themselves live in `daedalus_spark.workloads`
(`python -m daedalus_spark.workloads.wordcount --help` runs the same thing without spark-submit).
"""

import importlib
import sys

PIPELINES = ("wordcount", "ysb", "traffic")

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in PIPELINES:
        sys.exit(f"usage: spark-submit workloads/submit.py {{{','.join(PIPELINES)}}} [pipeline options]")
    pipeline = importlib.import_module(f"daedalus_spark.workloads.{sys.argv[1]}")
    sys.exit(pipeline.main(sys.argv[2:]))
