"""Command line: the sidecar (`run`), offline capacity and forecast reports, config validation, simulator, demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

# Only what every command needs loads here (no numpy, pandas, forecasting models, Spark or Kubernetes client):
# each command imports its own modules when it runs, so `--help`, `--version` and `validate-config` start at once.
from daedalus_spark.cliargs import OneLineParser, integer, number
from daedalus_spark.config import ConfigError, load_config, render_yaml
from daedalus_spark.redact import redact
from daedalus_spark.report.command import register as register_report
from daedalus_spark.sim.command import register as register_simulate
from daedalus_spark.tune.command import register as register_tune

# Largest scale-out any command accepts: the config's own bound on controller.max_scaleout.
MAX_SCALEOUT = 10_000


class UsageError(ValueError):
    """Options that are each valid but cannot be used together, or with this input; names the option."""


def _validate_config(args: argparse.Namespace) -> int:
    config = load_config(args.file)
    print(render_yaml(config), end="")
    return 0


def _capacity(args: argparse.Namespace) -> int:
    from daedalus_spark.report.capacity_report import capacity_from_csv, format_text, to_json
    from daedalus_spark.report.jsonout import strict_json

    if args.smooth_throughput is not None and args.utilization_window is not None:
        raise UsageError("--smooth-throughput and --utilization-window both set the throughput window: give one")
    config = load_config(args.config)
    report = capacity_from_csv(
        args.utilization,
        args.throughput,
        config.capacity,
        max_scaleout=args.max_scaleout,
        smooth_samples=args.smooth_throughput,
        utilization_window_s=args.utilization_window,
    )
    if (assumed := report.assumption()) is not None:
        print(assumed, file=sys.stderr)
    print(strict_json(to_json(report)) if args.json else format_text(report))
    return 0


def _forecast_evaluate(args: argparse.Namespace) -> int:
    from daedalus_spark.monitor.files import InputFileError, read_trace
    from daedalus_spark.report.forecast_backtest import evaluate_trace, format_text
    from daedalus_spark.report.jsonout import strict_json

    config = load_config(args.config)
    if args.horizon is not None and args.horizon < config.forecast.resolution_s:
        raise UsageError(
            f"--horizon {args.horizon:g} is shorter than one forecast step (forecast.resolution_s "
            f"{config.forecast.resolution_s:g} s)"
        )
    trace = read_trace(args.trace)
    result = evaluate_trace(
        trace, config.forecast, loop_interval_s=config.controller.loop_interval_s, horizon_s=args.horizon
    )
    if result.scored_forecasts == 0:
        horizon = config.forecast.horizon_s if args.horizon is None else args.horizon
        raise InputFileError(
            args.trace,
            None,
            f"{len(trace)} s of workload is too short to score a forecast (needs more than one loop interval, "
            f"{config.controller.loop_interval_s:g} s, + the horizon, {horizon:g} s)",
        )
    if args.json:
        keys = ("wape_median", "wape_p90", "fallback_share", "fit_seconds", "update_seconds_p95", "ticks")
        print(strict_json({"trace": str(args.trace), **{k: getattr(result, k) for k in keys}}))
    else:
        print(format_text(result, str(args.trace)))
    return 0


def _run(args: argparse.Namespace) -> int:
    """The sidecar: the loop against a live job until SIGTERM/SIGINT."""
    import os

    from daedalus_spark.knowledge.state import IncompatibleKnowledge
    from daedalus_spark.runtime.logsetup import configure_logging
    from daedalus_spark.runtime.wiring import build_sidecar

    config = load_config(args.config)
    configure_logging(config.runtime.log_level, config.runtime.log_format)
    try:
        sidecar = build_sidecar(config, dry_run=args.dry_run, environ=os.environ)
    except IncompatibleKnowledge:
        raise
    except ValueError as exc:  # e.g. no Kubernetes configuration to be found: one line, not a traceback
        raise ConfigError(str(args.config or "config"), [str(exc)]) from None
    try:
        return sidecar.run()
    except OSError as exc:  # the metrics port is taken or not ours to bind
        sidecar.close()
        where = f"{config.runtime.metrics_host}:{config.runtime.metrics_port}"
        raise ConfigError(
            str(args.config or "config"), [f"runtime.metrics_port: cannot listen on {where}: {exc.strerror}"]
        ) from None


def _demo(args: argparse.Namespace) -> int:
    """What `make demo` runs: the live loop on a local Spark cluster (`--simulated`: the simulator side by side)."""
    if args.simulated:
        live_only = {
            "--autoscaler": args.autoscaler,
            "--duration": args.duration,
            "--no-prometheus": args.no_prometheus,
            "--source": args.source,
        }

        given = [name for name, value in live_only.items() if value not in (None, False)]
        if given:
            raise UsageError(
                f"demo --simulated plays the bundled trace with its own settings: {', '.join(given)} "
                "applies to the live demo only"
            )
        from daedalus_spark.sim.cli import demo

        return demo(args.out, args.config)
    from daedalus_spark.demo.live import run_demo
    from daedalus_spark.demo.plan import DEMO_CONFIG, DemoPlan

    sized = load_config(args.config or DEMO_CONFIG).demo
    plan = DemoPlan(
        cpus_per_executor=sized.cpus_per_executor,
        record_cost_rounds=sized.record_cost_rounds,
        scale=sized.trace_scale,
        trace_start_s=sized.trace_start_s,
        duration_s=sized.load_cycle_s if args.duration is None else args.duration,
        history_cycles=sized.history_cycles,
        use_prometheus=not args.no_prometheus,
        autoscaler=args.autoscaler or "daedalus",
        source=args.source or "kafka",
    )
    try:
        return run_demo(args.out, plan, config_path=args.config or DEMO_CONFIG)
    except (RuntimeError, TimeoutError) as exc:  # everything it started is already stopped
        print(f"daedalus-spark demo: failed: {' '.join(redact(str(exc)).split())}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="daedalus-spark", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('daedalus-spark')}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate-config", help="check a YAML config and print the effective one")
    p.add_argument("file", type=Path)
    p.set_defaults(handler=_validate_config)
    _register_capacity(sub)
    _register_forecast(sub)
    _register_run(sub)
    _register_demo(sub)
    register_simulate(sub)
    register_report(sub)
    register_tune(sub)
    return parser


def _register_capacity(sub: Any) -> None:
    p = sub.add_parser("capacity", help="capacity per executor and per scale-out from exported metric CSVs")
    p.add_argument("--utilization", required=True, type=Path, help="CSV: time column, one column per executor")
    p.add_argument("--throughput", required=True, type=Path, help="CSV with the same columns, records/s")
    p.add_argument(
        "--max-scaleout",
        type=integer(1, MAX_SCALEOUT),
        default=None,
        help=f"list capacities up to this scale-out (1..{MAX_SCALEOUT})",
    )
    p.add_argument(
        "--utilization-window",
        type=number(0, 86_400),
        default=None,
        metavar="SECONDS",
        help="the window the utilization is a rate or average over (a 1-minute CPU rate: 60); throughput is averaged "
        "over the same trailing window (rows from the time column's step), as the live monitor aligns them. Default: "
        "the utilization file's '# window: 60s' line above its header, else none (rows taken as aligned, and said "
        "on one line); 0 = no alignment",
    )
    p.add_argument(
        "--smooth-throughput",
        type=integer(1, 1_000_000),
        default=None,
        metavar="SAMPLES",
        help="the trailing window in rows instead (1 = no alignment)",
    )
    p.add_argument("--config", type=Path, default=None)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_capacity)


def _register_forecast(sub: Any) -> None:
    forecast = sub.add_parser("forecast", help="workload forecasting tools").add_subparsers(
        dest="action", required=True
    )
    p = forecast.add_parser("evaluate", help="rolling-origin backtest of the forecaster on a trace")
    p.add_argument("--trace", required=True, type=Path, help="'second|count' file, one row per second")
    p.add_argument(
        "--horizon",
        type=number(0, 86400, lo_open=True),
        default=None,
        help="seconds ahead, up to 86400 (default: forecast.horizon_s)",
    )
    p.add_argument("--config", type=Path, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_forecast_evaluate)


def _register_run(sub: Any) -> None:
    p = sub.add_parser("run", help="the sidecar: run the MAPE-K loop against a live job until SIGTERM")
    p.add_argument("--config", type=Path, default=None, help="the YAML config (default: built-in defaults)")
    p.add_argument("--dry-run", action="store_true", help="advisor mode: decide, log and export, never actuate")
    p.set_defaults(handler=_run)


def _register_demo(sub: Any) -> None:
    p = sub.add_parser("demo", help="what `make demo` runs: the live loop on a local Spark cluster")
    p.add_argument("--config", type=Path, default=None, help="controller config (default: deploy/demo.yaml)")
    p.add_argument("--out", type=Path, default=Path("out/demo"))
    p.add_argument(
        "--duration",
        type=number(10, 86_400),
        default=None,
        metavar="SECONDS",
        help="wall seconds of the load cycle, 10..86400 (default 480)",
    )
    p.add_argument("--no-prometheus", action="store_true", help="use the embedded scraper even if prometheus exists")
    p.add_argument("--simulated", action="store_true", help="the simulator on the bundled trace instead (~25 s)")
    p.add_argument(
        "--autoscaler",
        choices=("daedalus", "spark-da", "batch-ratio", "static"),
        default=None,
        help="ours (the default), or what Spark users run today: dynamic allocation, the DStreams batch-duration "
        "rule, static max",
    )
    p.add_argument(
        "--source",
        choices=("kafka", "local"),
        default=None,
        help="what the job reads: a local Kafka broker the demo starts (default: kafka), or the local partitioned log",
    )
    p.set_defaults(handler=_demo)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except ConfigError as exc:
        return _fail(exc.one_line())
    except _one_line_errors() as exc:
        return _fail(str(exc))
    except OSError as exc:  # an output that cannot be written: say which, without a traceback
        return _fail(f"{exc.filename or 'output'}: {exc.strerror or exc}")


def _one_line_errors() -> tuple[type[Exception], ...]:
    """The errors reported as their own message, imported only once a command has failed: no command loads their
    modules (the forecasting models among them) just to start."""
    from daedalus_spark.knowledge.sqlite_store import KnowledgeStoreError
    from daedalus_spark.knowledge.state import IncompatibleKnowledge
    from daedalus_spark.monitor.files import InputFileError
    from daedalus_spark.sim.policies import PolicyNameError

    return (InputFileError, UsageError, PolicyNameError, IncompatibleKnowledge, KnowledgeStoreError)


def _fail(message: str) -> int:
    """Every CLI error: one line on stderr, exit status 2."""
    print(f"daedalus-spark: error: {' '.join(redact(message).split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
