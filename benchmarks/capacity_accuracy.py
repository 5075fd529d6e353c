"""Benchmark: capacity error of the regression trained only at low utilization, on the paper's measurements."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from daedalus_spark.analyze.capacity import CapacityModel
from daedalus_spark.config import CapacityConfig
from daedalus_spark.domain import Observation
from daedalus_spark.monitor.files import read_metric_csv
from daedalus_spark.report.capacity_report import capacity_from_csv

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "measurements"


def train(cpu: np.ndarray, thr: np.ndarray) -> CapacityModel:
    model = CapacityModel(CapacityConfig())
    model.learn(Observation.of(time_s=len(cpu), workload_per_s=0.0, executors={"w": (thr, cpu)}))
    return model


def single_executor(smooth: int) -> None:
    cpu = next(iter(read_metric_csv(DATA / "assumptions_cpu_1.csv").columns.values()))
    thr = next(iter(read_metric_csv(DATA / "assumptions_throughput_1.csv").columns.values()))
    # CPU is a 1-minute average (4 samples of 15 s); smoothing throughput the same way aligns the two windows.
    thr = pd.Series(thr).rolling(smooth, min_periods=1).mean().to_numpy()
    print(f"-- throughput as a trailing mean of {smooth} sample(s)")
    low = cpu <= 0.7
    model = train(cpu[low], thr[low])
    for threshold in (0.85, 0.9):
        high = cpu >= threshold
        pred = np.array([model.regressions["w"].predict(x) for x in cpu[high]])
        err = np.abs(pred - thr[high]).sum() / thr[high].sum()
        print(
            f"single executor, trained on {low.sum()} samples at u<=0.7, tested on {high.sum()} at u>={threshold}: "
            f"WAPE {err:.2%}"
        )
    full = train(cpu, thr)
    print(
        f"capacity at u=1.0: {model.own_capacity('w')[0]:,.0f}/s (trained <=0.7), "
        f"{full.own_capacity('w')[0]:,.0f}/s (all data); highest observed {thr.max():,.0f}/s at u={cpu.max():.2f}"
    )


def saturated_job() -> None:
    report = capacity_from_csv(DATA / "data_skew_cpu_12.csv", DATA / "data_skew_throughput_12.csv", CapacityConfig())
    total = read_metric_csv(DATA / "data_skew_total_throughput.csv").columns["Value"]
    measured = float(np.mean(total[-4:]))
    est = report.table.current_per_s
    print(
        f"12 executors at saturation: estimated {est:,.0f}/s vs measured {measured:,.0f}/s "
        f"(last minute): error {abs(est - measured) / measured:.2%}"
    )


def two_executors_sine() -> None:
    cpu = read_metric_csv(DATA / "sine_cpu_p2.csv").columns
    thr = read_metric_csv(DATA / "sine_throughput_p2.csv").columns
    for w in cpu:
        c, t = cpu[w], thr[w]
        low = c <= 0.7
        if low.sum() < 5 or (c >= 0.9).sum() == 0:
            print(f"sine executor {w[-5:]}: no saturated samples (max u={np.nanmax(c):.2f})")
            continue
        model = train(c[low], t[low])
        high = c >= 0.9
        pred = np.array([model.regressions["w"].predict(x) for x in c[high]])
        print(f"sine executor {w[-5:]}: WAPE at u>=0.9 {np.abs(pred - t[high]).sum() / t[high].sum():.2%}")


if __name__ == "__main__":
    single_executor(1)
    single_executor(4)
    saturated_job()
    two_executors_sine()
