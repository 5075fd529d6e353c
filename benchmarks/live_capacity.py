"""Benchmark: the capacity a live demo's controller learned, judged against the calibrated capacity at the latency
objective of each scale-out on the same cluster (deploy/demo.yaml `demo.capacity_lines_per_s`: the saturated
throughput at two batch sizes, `benchmarks/results/spark_local.json` section `kafka_0.25cpu_objective`, read at the
objective).

Reads a finished demo's folder (`make demo` leaves `out/demo/`) and prints:
- per tick, the capacity of the current scale-out beside the calibrated one at that scale-out;
- the knowledge report's capacity table at the end of the run, row by row, against the same figures;
- how many ticks decided `no_valid_scaleout_use_max` after the first capacity was known.

The capacity is the rate a scale-out carries within the latency target (larger batches under a backlog amortize
the per-batch cost), as the calibration's is; the report also gives it at the trigger interval.
Usage: python benchmarks/live_capacity.py [--demo-dir out/demo] [--config deploy/demo.yaml] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

DEMO_CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "demo.yaml"
WITHIN = 0.2  # a capacity within 20 % of the calibrated one counts as close


def calibrated(config: Path = DEMO_CONFIG) -> dict[int, float]:
    """Lines/s at each scale-out within the latency objective, as the demo's calibration measured them, times the
    share the job keeps in the demo."""
    from daedalus_spark.config import load_config

    rates = load_config(config).demo.capacity_in_demo_per_s
    if not rates:
        raise SystemExit(f"{config}: no demo.capacity_lines_per_s (the demo's calibration)")
    return {n: float(rate) for n, rate in enumerate(rates, start=1)}


def read_ticks(path: Path) -> list[dict[str, Any]]:
    ticks = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            ticks.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{number}: not a JSON decision ({exc.msg})") from None
    return ticks


def judge(ticks: list[dict[str, Any]], report: dict[str, Any], truth: dict[int, float]) -> dict[str, Any]:
    """Per tick and per row of the final table: learned, measured and their ratio; the use_max count after the
    first capacity."""
    start = ticks[0]["time_s"] if ticks else 0.0
    per_tick, first = [], None
    for tick in ticks:
        learned, n = tick.get("evidence", {}).get("capacity_current_per_s"), int(tick["current"])
        if learned is None or n not in truth:
            continue
        first = tick["time_s"] if first is None else first
        per_tick.append(
            {
                "t_s": round(tick["time_s"] - start),
                "scaleout": n,
                "learned_per_s": round(learned),
                "calibrated_per_s": round(truth[n]),
                "ratio": round(learned / truth[n], 2),
            }
        )
    use_max = sum(
        1 for t in ticks if t.get("reason") == "no_valid_scaleout_use_max" and first is not None and t["time_s"] > first
    )
    rows = [
        {
            "scaleout": row["scaleout"],
            "observed": row["observed"],
            "learned_per_s": round(row["capacity_per_s"]),
            "calibrated_per_s": round(truth[row["scaleout"]]),
            "ratio": round(row["capacity_per_s"] / truth[row["scaleout"]], 2),
        }
        for row in report["capacity"]["per_scaleout"]
        if row["scaleout"] in truth
    ]
    capacity = report["capacity"]
    at_trigger = capacity.get("current_at_trigger_per_s")
    n = int(capacity["current_scaleout"])
    ratios = [t["ratio"] for t in per_tick]
    return {
        "ticks_with_capacity": len(per_tick),
        "ticks_within_20_percent": sum(abs(r - 1) <= WITHIN for r in ratios),
        "median_ratio": round(statistics.median(ratios), 2) if ratios else None,
        "range_ratio": [min(ratios), max(ratios)] if ratios else None,
        "use_max_after_first_capacity": use_max,
        "final_table": rows,
        "final_at_trigger_ratio": None if at_trigger is None or n not in truth else round(at_trigger / truth[n], 2),
        "per_tick": per_tick,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demo-dir", type=Path, default=Path("out/demo"))
    p.add_argument("--config", type=Path, default=DEMO_CONFIG, help="the demo's config, with its calibration")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    missing = [f for f in ("decisions.jsonl", "report.json") if not (args.demo_dir / f).is_file()]
    if missing:
        raise SystemExit(f"{args.demo_dir}: no {', '.join(missing)} (run `make demo` first, or pass --demo-dir)")
    truth = calibrated(args.config)
    figures = judge(
        read_ticks(args.demo_dir / "decisions.jsonl"), json.loads((args.demo_dir / "report.json").read_text()), truth
    )
    print(f"live capacity against the calibration's capacity at the objective ({args.demo_dir})")
    print(f"{'t s':>6} {'n':>2} {'learned/s':>10} {'calibrated/s':>12} {'ratio':>6}")
    for t in figures["per_tick"]:
        print(
            f"{t['t_s']:>6} {t['scaleout']:>2} {t['learned_per_s']:>10,} {t['calibrated_per_s']:>12,} {t['ratio']:>6}"
        )
    print(
        f"{figures['ticks_within_20_percent']} of {figures['ticks_with_capacity']} ticks within 20 %; median ratio "
        f"{figures['median_ratio']}, range {figures['range_ratio']}; no_valid_scaleout_use_max after the first "
        f"capacity: {figures['use_max_after_first_capacity']}"
    )
    print("final capacity table (knowledge report):")
    for row in figures["final_table"]:
        seen = "observed" if row["observed"] else "extrapolated"
        print(
            f"  {row['scaleout']}: {row['learned_per_s']:,}/s ({seen}) vs {row['calibrated_per_s']:,}/s: {row['ratio']}"
        )
    if figures["final_at_trigger_ratio"] is not None:
        print(f"  the current scale-out's capacity at the trigger interval: {figures['final_at_trigger_ratio']} of it")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
