"""Benchmark: how long the start-up backfill takes against a real Prometheus. Hours of the agent's metrics for a job
(`monitor/synthetic_history.py`: n executors, a 30-min load cycle, batch progress) are backfilled with promtool into
a Prometheus started here; then `warm_start` reads them back into a controller as `daedalus-spark run` does at start
(the ARIMA fit in the sidecar's background process). Prints the time, what was learned and the report's lines.

Needs /usr/bin/prometheus and promtool (Debian's `prometheus`). Everything it starts it stops.
  python benchmarks/backfill_speed.py                              # 24 h at 1-s steps, 8 executors
  python benchmarks/backfill_speed.py --hours 2 --executors 100
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from daedalus_spark.config import parse_config
from daedalus_spark.controller import Controller
from daedalus_spark.monitor.backfill import warm_start
from daedalus_spark.monitor.prometheus import PrometheusMonitor
from daedalus_spark.monitor.promserver import start_prometheus, write_history
from daedalus_spark.monitor.synthetic_history import SyntheticHistory
from daedalus_spark.runtime.refit_scheduler import PoolRefits
from daedalus_spark.runtime.refits import refit_pool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--executors", type=int, default=8)
    parser.add_argument("--step", type=int, default=1, help="scrape interval and monitor.step_s, s")
    args = parser.parse_args()
    history = SyntheticHistory(round(args.hours * 3600), step_s=args.step, executors=args.executors)
    with tempfile.TemporaryDirectory(prefix="backfill-speed-") as tmp:
        workdir = Path(tmp)
        end_s = int(time.time()) // 3600 * 3600 - 3600
        start_s = end_s - history.duration_s
        started = time.perf_counter()
        write_history(history.openmetrics(start_s), workdir)
        (workdir / "history.om").unlink()
        print(
            f"{args.hours:g} h of {args.executors} executors at {args.step}-s steps backfilled into Prometheus in "
            f"{time.perf_counter() - started:.0f} s"
        )
        prometheus = start_prometheus([], workdir=workdir)
        pool = refit_pool()
        try:
            config = parse_config(
                {
                    "controller": {"max_scaleout": max(12, args.executors), "backfill_s": history.duration_s + 600},
                    "agent": {"max_executors": max(16, args.executors)},
                    "monitor": {
                        "prometheus_url": prometheus.url,
                        "step_s": args.step,
                        "scrape_interval_s": args.step,
                        "rate_window_s": 4 * args.step,
                    },
                }
            )
            controller = Controller(config, refits=PoolRefits(pool))
            monitor = PrometheusMonitor(config.monitor, config.controller.utilization_signal)
            try:
                report = warm_start(controller, monitor, config, now_s=end_s)
            finally:
                monitor.close()
            assert report is not None
            regressions = controller.knowledge.capacity.regressions
            print(
                f"backfill: {report.elapsed_s:.1f} s; {report.windows_learned} windows learned, "
                f"{sum(r.n for r in regressions.values()):,} executor samples, forecaster "
                f"{controller.knowledge.forecaster.history_steps} buckets"
            )
            print("\n".join(report.lines()))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            prometheus.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
