"""Benchmark (Spark): records/s per pipeline at 1..N executors (one per local standalone worker), the agent's
overhead, and WordCount in the demo's setting: saturated throughput with even and skewed partitions, and
how throughput and CPU per record depend on the batch size.

Experiments (--experiment):
- `pipelines` (default, the original): each pipeline drains a preloaded backlog in capped micro-batches at
  1..N executors (one application each, `spark.cores.max`); throughput = rows / batch time after the first batch.
- `saturation`: the demo's cluster (4 workers x 0.25 CPU, 8 partitions, agent on), one application scaled in place
  to 1, 2, 3, 4 executors. At each: a preloaded backlog drained back-to-back in batches of a fixed composition
  (a reader that caps each partition at its own count, so skew survives the cap): `small` (8 x 1,000 lines: the
  per-batch fixed cost), `even` (B lines in 8 equal partitions) and `zipf` (B lines with Zipf weights; --zipf-order
  puts the largest partition first or last). Prints the measured throughput beside predictions for the skewed
  layout: tasks placed longest-first over cores (analyze/partitions.py, any_core, busiest_share), in partition-index
  order to the next free core (Spark's TaskSetManager without locality preferences) and an even share 1/n; and the
  busiest executor's share of the records observed in the tasks (driver REST API).
- `batch-size`: per executor count, (c) capped backlogs at --caps (records per partition and batch, the source's
  maxRecordsPerTrigger), (a) a stepped ramp of the generator's rate at the 1-s trigger, uncapped (steady states;
  the highest step whose lag stays bounded is the steady-state maximum), (b) a backlog appended at once and worked
  off uncapped while the generator keeps feeding. For every batch: rows, triggerExecution; per phase: records/s
  and executor CPU seconds per record (worker cgroups via the CPU exporter). Fits batch duration = fixed +
  rows x seconds-per-record (least squares) per executor count, and task duration = overhead + records x s.
- `kafka`: per --kafka-runs entry (pipeline:rounds:records per executor and batch), a topic preloaded on a local
  broker, read at 1..N executors in batches capped at N x the records; where one pipeline ran at two batch sizes or
  more, its batch line per executor count and the rate that keeps a record within --target-latency-s.

Noisy: 2 cores shared by the driver, the executors, the generator and other work; every figure is printed with the
load average. Results (saturation, batch-size) are merged into benchmarks/results/spark_local.json.
Each experiment is a module of capacity_experiments/; this script parses the options and writes the results.

  python benchmarks/spark_capacity.py [--quick]                                  # pipelines
  nice -n -10 python benchmarks/spark_capacity.py --experiment saturation
  nice -n -10 python benchmarks/spark_capacity.py --experiment batch-size --executor-counts 2   # ~7 min per count
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import sparkbench as sb  # the benchmarks' shared helpers, next to this file
from capacity_experiments.batch_size import run_batch_size
from capacity_experiments.on_kafka import run_kafka
from capacity_experiments.pipelines import PIPELINES, run_pipelines
from capacity_experiments.saturation import run_saturation

from daedalus_spark.sparkcluster import cpu_quota_support


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", choices=("pipelines", "saturation", "batch-size", "kafka"), default="pipelines")
    parser.add_argument("--quick", action="store_true", help="pipelines: wordcount only, fewer records")
    parser.add_argument("--records", type=int, default=120_000, help="pipelines: records preloaded")
    parser.add_argument("--executors", type=int, default=3, help="pipelines: most executors; one worker each")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="pipelines: comma-separated subset")
    parser.add_argument("--no-overhead", action="store_true", help="pipelines: skip the run without the agent")
    parser.add_argument(
        "--cpus-per-executor",
        type=float,
        default=1.0,
        help="pipelines, kafka: cgroup CPU quota of each executor's worker",
    )
    demo = parser.add_argument_group("saturation and batch-size (the demo's cluster: 4 workers x 0.25 CPU)")
    demo.add_argument("--executor-counts", default=None, help="comma-separated (saturation 1,2,3,4; batch-size 2)")
    demo.add_argument("--partitions", type=int, default=8)
    demo.add_argument("--batch-records", type=int, default=1_200_000, help="saturation: rows per batch (even, zipf)")
    demo.add_argument("--small-per-partition", type=int, default=1000, help="saturation: rows/partition of `small`")
    demo.add_argument("--zipf-exponent", type=float, default=1.0)
    demo.add_argument(
        "--zipf-order",
        choices=("descending", "ascending"),
        default="descending",
        help="descending: partition 0 the largest (Spark's index order is then longest first)",
    )
    demo.add_argument("--warmup", type=int, default=1, help="batches of each query not measured")
    demo.add_argument("--batches", type=int, default=3, help="measured batches of each capped query")
    demo.add_argument("--caps", default="500,8000,64000", help="batch-size: records per partition and batch")
    demo.add_argument(
        "--rates", default="3000,10000,30000,80000,160000,240000", help="batch-size: ramp steps, records/s"
    )
    demo.add_argument(
        "--generator-max",
        type=float,
        default=40_000,
        help="batch-size: ramp steps above this rate are fed from a line pool (sparkbench.py feed), not the generator",
    )
    demo.add_argument("--step-s", type=float, default=30.0, help="batch-size: seconds per ramp step")
    demo.add_argument("--warm-s", type=float, default=15.0, help="batch-size: generator warm-up before the ramp")
    demo.add_argument("--backlog", type=int, default=1_000_000, help="batch-size: records appended at once")
    demo.add_argument("--backlog-s", type=float, default=30.0, help="batch-size: seconds to work the backlog off")
    demo.add_argument("--drain-s", type=float, default=20.0, help="batch-size: drain after an unbounded step")
    demo.add_argument("--idle-s", type=float, default=15.0, help="batch-size: idle CPU floor measured this long")
    demo.add_argument("--trigger-s", type=float, default=1.0, help="batch-size, kafka: trigger interval")
    demo.add_argument(
        "--target-latency-s",
        type=float,
        default=30.0,
        help="kafka: latency objective the capacity is read at, for runs of one pipeline at two batch sizes or more",
    )
    demo.add_argument("--query-timeout-s", type=float, default=240.0)
    demo.add_argument(
        "--kafka-runs",
        default="wordcount:0:100000,ysb:0:100000,traffic:0:100000,wordcount:300:10000",
        help="kafka: pipeline:record-cost-rounds:records per executor and batch, comma-separated",
    )
    demo.add_argument("--json-out", default=str(sb.RESULTS), help="results file (sections merged)")
    return parser


def run_experiment(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The result of a saturation, batch-size or kafka experiment and its section of the results file."""
    if args.experiment == "kafka":
        return run_kafka(args), f"kafka_{args.cpus_per_executor:g}cpu"
    if args.experiment == "saturation":
        args.executor_counts = args.executor_counts or "1,2,3,4"
        return run_saturation(args), "saturation"
    args.executor_counts = args.executor_counts or "2"
    return run_batch_size(args), "batch_size"


def main() -> int:
    args = build_parser().parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on `timeout`/kill
    if args.experiment == "pipelines":
        return run_pipelines(args)
    started = time.monotonic()
    sb.say(f"cpu quota: {cpu_quota_support()}; cores: {os.cpu_count()}; {sb.command_line()}")
    result, section = run_experiment(args)
    result["wall_s"] = round(time.monotonic() - started, 1)
    key = section if section != "saturation" or args.zipf_order == "descending" else "saturation_ascending"
    if section == "batch_size":
        key = f"batch_size_{args.executor_counts.replace(',', '_')}"
    path = sb.write_results(key, sb.strict(result), Path(args.json_out))
    print(json.dumps(sb.strict({k: v for k, v in result.items() if k not in ("runs", "per_executors")}), indent=1))
    print(f"written to {path} (section {key}); wall {result['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
