"""Benchmark: wall time of `simulate` on one bundled 6-hour trace with the default policies (target <= 60 s).

python benchmarks/sim_speed.py [TRACE] [--job-model YAML|PROFILE]   # e.g. --job-model kubernetes
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from daedalus_spark.config import Config
from daedalus_spark.monitor.files import read_trace
from daedalus_spark.sim.cli import TRACES_DIR
from daedalus_spark.sim.command import DEFAULT_POLICIES
from daedalus_spark.sim.evaluate import evaluate
from daedalus_spark.sim.jobmodel import load_job_model


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", nargs="?", default=str(TRACES_DIR / "wordcount_sine_40000_6h.csv"))
    p.add_argument("--job-model", metavar="YAML|PROFILE", help="job model file or profile (default: the defaults)")
    args = p.parse_args(argv[1:])
    trace = Path(args.trace)
    workload = read_trace(trace)
    job_model = load_job_model(args.job_model)
    names = DEFAULT_POLICIES.split(",")
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    evaluate(trace.name, workload, names, job_model=job_model, config=Config(), seed=1)
    total = time.perf_counter() - start
    engine = f"{job_model.engine}/{job_model.rescale}" + (f" ({args.job_model})" if args.job_model else "")
    print(f"{trace.name}: {len(workload) / 3600:.2f} h, {len(names)} policies ({','.join(names)}), job {engine}")
    print(f"simulate wall time: {total:.1f} s (target <= 60 s)")
    return 0  # a figure to report, not an assertion: the machine may be shared


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
