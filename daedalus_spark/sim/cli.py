"""Simulation shell: the `simulate` subcommand — read traces and settings, run the policies, print and write reports."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from daedalus_spark.cliargs import OneLineParser
from daedalus_spark.config import Config, ConfigError, load_config
from daedalus_spark.monitor.files import BUNDLED_TRACES_DIR, InputFileError, read_trace
from daedalus_spark.progress import Progress
from daedalus_spark.report.jsonout import strict_json
from daedalus_spark.report.outfile import replace_file
from daedalus_spark.sim.command import DEFAULT_TRACE, default_policies, register
from daedalus_spark.sim.evaluate import TraceEvaluation, compress_trace, controller_config, evaluate
from daedalus_spark.sim.jobmodel import JobModel, load_job_model
from daedalus_spark.sim.policies import PolicyNameError, is_offline, needs_microbatch, parse_policy_list

TRACES_DIR = BUNDLED_TRACES_DIR
TABLE_COLUMNS = (
    ("avg_executors", "executors", "{:.2f}"),
    ("executor_hours", "executor-h", "{:.1f}"),
    ("vs_static", "vs static", "{:.2f}"),
    ("vs_optimum", "vs optimum", "{:.2f}"),
    ("vs_oracle", "vs oracle", "{:.2f}"),
    ("rescales", "rescales", "{}"),
    ("downtime_s", "down s", "{}"),
    ("lag_growth_s", "lag-grow s", "{}"),
    ("lag_record_s", "lag rec*s", "{:.3g}"),
    ("latency_p50_s", "p50 s", "{:.1f}"),
    ("latency_p95_s", "p95 s", "{:.1f}"),
    ("latency_max_s", "max s", "{:.1f}"),
    ("recovery_violations", "rec. viol.", "{}"),
    ("latency_violation_s", "late s", "{}"),
    ("passes", "rule", "{}"),
)


class ProgressBar:
    """The policies' runs on one trace (`evaluate`'s progress callback), as one Progress."""

    def __init__(self, stream: TextIO, label: str, total_steps: int) -> None:
        self._progress = Progress(stream, label, total_steps, "runs")
        self._finished = 0

    def update(self, policy: str, done: int, total: int) -> None:
        self._progress.advance_to(self._finished + done / max(total, 1), policy)
        if done >= total:
            self._finished += 1

    def close(self) -> None:
        self._progress.close()


def run(args: argparse.Namespace) -> int:
    """The `simulate` handler: the parsed arguments, as typed values, to `simulate`."""
    return simulate(
        traces=args.trace,
        policies=args.policies,
        config_path=args.config,
        job_model_path=args.job_model,
        seed=args.seed,
        speedup=args.speedup,
        json_path=args.json,
        out_dir=args.out,
        progress=not args.no_progress,
    )


def simulate(
    *,
    traces: list[str] | None = None,
    policies: str | None = None,
    config_path: str | None = None,
    job_model_path: str | None = None,
    seed: int = 1,
    speedup: float = 1.0,
    json_path: str | None = None,
    out_dir: str | None = None,
    progress: bool = True,
) -> int:
    """Run the policies on each trace, print a table per trace, write JSON / the report; the exit code."""
    try:
        config = load_config(config_path)
        job_model = load_job_model(job_model_path)
        # the settings the config leaves to the job (the topic's partition count: max_scaleout 0) from the job model
        config = controller_config(config, job_model)
        names = parse_policy_list(policies or default_policies(config.controller.max_scaleout), config)
        _check_job_model(job_model, config, job_model_path, names)
        paths = [Path(t) for t in (traces or [str(DEFAULT_TRACE)])]
        workloads = [_long_enough(t, compress_trace(read_trace(t), speedup), speedup, config) for t in paths]
    except ConfigError as exc:
        return _fail(exc.one_line())
    except (PolicyNameError, InputFileError, ValueError) as exc:
        return _fail(str(exc))
    evaluations = []
    online = len([n for n in names if not is_offline(n)])
    for path, workload in zip(paths, workloads, strict=False):
        bar = ProgressBar(sys.stderr, path.name, online) if progress else None
        ev = evaluate(
            path.name,
            workload,
            names,
            job_model=job_model,
            config=config,
            seed=seed,
            progress=bar.update if bar else None,
        )
        if bar:
            bar.close()
        evaluations.append(ev)
        # with JSON on stdout the table goes to stderr, so stdout stays parseable
        print(format_table(ev), file=sys.stderr if json_path == "-" else sys.stdout)
    return _write_outputs(json_path, out_dir, evaluations)


def _fail(message: str) -> int:
    print(f"daedalus-spark simulate: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _check_job_model(job_model: JobModel, config: Config, source: str | None, names: list[str]) -> None:
    """Settings that are valid alone but not with this config: refused rather than silently ignored."""
    where = source or "job model"
    tasks = [n for n in names if needs_microbatch(n)]
    if tasks and job_model.engine != "microbatch":
        raise ValueError(
            f"{where}: {', '.join(tasks)} read tasks and batches, which the {job_model.engine} engine does not "
            "simulate; use a micro-batch job model (--job-model local or kubernetes)"
        )
    max_scaleout = max(config.controller.max_scaleout, job_model.reference_scaleout)
    outside = [s for s in job_model.slow_executors if not 0 <= s < max_scaleout]
    if outside:
        raise ValueError(f"{where}: slow_executors {outside} outside the executors 0..{max_scaleout - 1}")
    if len(set(job_model.slow_executors)) != len(job_model.slow_executors):
        raise ValueError(f"{where}: slow_executors lists an executor twice")
    initial = job_model.initial_scaleout
    if initial is not None and initial > config.controller.max_scaleout:
        raise ValueError(
            f"{where}: initial_scaleout {initial} exceeds controller.max_scaleout {config.controller.max_scaleout}"
        )


def _long_enough(path: Path, workload: np.ndarray, speedup: float, config: Config) -> np.ndarray:
    """A trace shorter than two loop intervals gives no decision to compare: refused, naming the file."""
    seconds = len(workload)
    needed = 2 * config.controller.loop_interval_s
    if seconds < needed:
        after = f" after --speedup {speedup:g}" if speedup > 1 else ""
        raise InputFileError(path, None, f"{seconds} s of workload{after}; the simulation needs at least {needed:g} s")
    return workload


def _write_outputs(json_path: str | None, out_dir: str | None, evaluations: list[TraceEvaluation]) -> int:
    try:
        if json_path:
            text = strict_json(json_payload(evaluations))
            if json_path == "-":
                print(text)
            else:
                Path(json_path).parent.mkdir(parents=True, exist_ok=True)
                replace_file(Path(json_path), (text + "\n").encode())
        if out_dir:
            from daedalus_spark.sim.report import write_report

            report = write_report(evaluations, Path(out_dir), command=" ".join(sys.argv))
            print(f"report: {report}", file=sys.stderr)
    except OSError as exc:  # e.g. a full disk: name the file (OSError.filename can be None)
        return _fail(f"{exc.filename or json_path or out_dir}: cannot write ({exc.strerror or exc})")
    return 0


def json_payload(evaluations: list[TraceEvaluation]) -> object:
    """One trace: {"trace", "policies"}; several traces: {"traces": [one object per trace]}."""
    objects = [ev.to_json() for ev in evaluations]
    return objects[0] if len(objects) == 1 else {"traces": objects}


def format_table(ev: TraceEvaluation) -> str:
    """The terminal table: one row per policy."""
    header = ["policy"] + [title for _, title, _ in TABLE_COLUMNS]
    fields = {name: m.fields() for name, m in ev.metrics.items()}
    rows = [[name] + [_cell(fmt, m[key]) for key, _, fmt in TABLE_COLUMNS] for name, m in fields.items()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        cells_widths = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in cells_widths)

    hours = len(next(iter(ev.runs.values())).scaleout) / 3600 if ev.runs else 0.0
    note = [f"  ({ev.optimum_note})"] if ev.optimum_note else []
    return "\n".join([f"trace {ev.trace} ({hours:.2f} h)", line(header), *(line(r) for r in rows), *note])


def _cell(fmt: str, value: float | int) -> str:
    """A table cell; a ratio to an optimum that does not exist (NaN) is a dash."""
    return "-" if isinstance(value, float) and math.isnan(value) else fmt.format(value)


def demo(out: Path, config: Path | None = None) -> int:
    """`daedalus-spark demo --simulated`: the default policies on the bundled WordCount trace, report under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    return simulate(
        config_path=str(config) if config else None, json_path=str(out / "simulation.json"), out_dir=str(out)
    )


def main(argv: list[str] | None = None) -> int:
    """Run `simulate` alone (python -m daedalus_spark.sim.cli ...)."""
    parser = OneLineParser(prog="daedalus-spark")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
