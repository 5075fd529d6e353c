"""Tuning shell: the `tune` subcommand's options, light to import; the tuner loads when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from daedalus_spark.cliargs import number

DEFAULT_GRID = Path("deploy/tune.yaml")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `tune` to the CLI."""
    p = subparsers.add_parser(
        "tune",
        help="what-if tuning of the config on your own workload history (simulator, run as a Spark job)",
        description="Replays your workload history through the simulator for every candidate of a grid of config "
        "values, chooses on the older part of the history and reports on the newest, held out.",
    )
    p.add_argument("--config", type=Path, default=None, help="your YAML config (default: the built-in defaults)")
    p.add_argument("--grid", type=Path, default=DEFAULT_GRID, help="knobs and values to try (default %(default)s)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--trace", type=Path, help="the history as a 'second|count' trace instead of Prometheus")
    source.add_argument("--prometheus-url", help="Prometheus to read the history from (default: the config's)")
    p.add_argument("--since", default=None, help="how much history to read from Prometheus (default 7d)")
    p.add_argument("--knowledge", type=Path, help="the controller's knowledge store: the job's learned profile")
    p.add_argument("--job-model", metavar="YAML|PROFILE", help="the simulated job instead (sim/jobmodel.py)")
    p.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    p.add_argument("--out", type=Path, default=Path("out/tune"), help="results go here (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (summary on stderr)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--now", type=number(0, 1e11), default=None, help=argparse.SUPPRESS
    )  # the end of --since (tests: a Prometheus fed with old samples)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from daedalus_spark.tune.cli import run

    return run(args)
