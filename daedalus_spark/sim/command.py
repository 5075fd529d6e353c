"""Simulation shell: the `simulate` subcommand's options, light to import; the simulator loads when it runs."""

from __future__ import annotations

import argparse

from daedalus_spark.cliargs import integer, number
from daedalus_spark.monitor.files import BUNDLED_TRACES
from daedalus_spark.sim.policies import KNOWN

DEFAULT_TRACE = BUNDLED_TRACES["wordcount"]
DEFAULT_POLICIES = "daedalus,static:12,hpa:0.8,hpa:0.85,flink,oracle,optimum"


def default_policies(max_scaleout: int) -> str:
    """The default list for a config: static at 12 executors, or at its `max_scaleout` where that allows fewer (the
    demo's config allows 3)."""
    return DEFAULT_POLICIES.replace("static:12", f"static:{min(12, max_scaleout)}")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `simulate` to the CLI."""
    p = subparsers.add_parser(
        "simulate",
        help="Run Daedalus and baselines side by side on workload traces (simulated job).",
        description="Drives the real controller tick and baseline autoscalers over a simulated Spark job.",
    )
    p.add_argument(
        "--trace", action="append", metavar="FILE", help=f"workload trace (repeatable; default {DEFAULT_TRACE.name})"
    )
    p.add_argument(
        "--policies",
        help=f"comma-separated, of: {KNOWN} (default {DEFAULT_POLICIES}, static at most controller.max_scaleout)",
    )
    p.add_argument("--config", metavar="YAML", help="controller settings (daedalus-spark config)")
    p.add_argument(
        "--job-model",
        metavar="YAML|PROFILE",
        help="simulated job: a YAML file (capacity, skew, engine, rescales, partitions) or a packaged profile: "
        "local, demo, kubernetes (Spark micro-batches, in-place rescales)",
    )
    p.add_argument("--seed", type=integer(0, 2**32 - 1), default=1, help="random seed, 0..2^32-1 (default 1)")
    p.add_argument(
        "--speedup",
        type=number(1, 3600, whole=True),
        default=1.0,
        help="shorten each trace by this whole factor, 1..3600 (default 1)",
    )
    p.add_argument("--json", metavar="FILE", help="write metrics as JSON ('-' for stdout)")
    p.add_argument("--out", metavar="DIR", help="write per-second CSVs, plots and an HTML report here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from daedalus_spark.sim.cli import run

    return run(args)
