"""Benchmark: a soak in compressed time — the sidecar's own loop step over simulated days (SQLite store, every
publisher, the spawned refit process) against the simulated job, with an injected clock; prints store and log size,
tick p50/p95, resident memory (controller and refit process) and refits over time, then checks the goals.

    .venv/bin/python probes/soak.py --days 365      # a year of 60-s ticks (525,600), if time allows
    .venv/bin/python probes/soak.py --days 30       # a month, extrapolated to a year in the summary

The simulated job is rebuilt every simulated hour, carrying its scale-out, backlog and downtime over: its
per-second history would otherwise grow with the run and hide the controller's memory. Refits run in the real
spawned process as fast as it can fit (one at a time); in compressed time that is fewer than the schedule's one per
`forecast.refit_interval_s` of simulated time, so the summary states both.
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from daedalus_spark.clock import FakeClock
from daedalus_spark.config import Config, parse_config
from daedalus_spark.domain import Observation
from daedalus_spark.runtime.refits import child_pids
from daedalus_spark.runtime.sidecar import Sidecar
from daedalus_spark.runtime.wiring import assemble_sidecar
from daedalus_spark.sim.daedalus import SimulatedJobActuator
from daedalus_spark.sim.job import SimulatedJob
from daedalus_spark.sim.jobmodel import JobModel
from daedalus_spark.sim.runner import SimSetup, make_setup, new_job

DAY_S = 86400
CHUNK_S = 3600
PEAK_PER_S = 6000.0


def workload_per_s(t0: int, t1: int, rng: np.random.Generator) -> np.ndarray:
    """A daily cycle (night at a third of the peak), a weekly swell and 3 % noise, per second."""
    t = np.arange(t0, t1, dtype=float)
    daily = 0.65 - 0.35 * np.cos(2 * np.pi * t / DAY_S)
    weekly = 0.93 + 0.07 * np.sin(2 * np.pi * t / (7 * DAY_S))
    return np.maximum(PEAK_PER_S * daily * weekly * (1 + rng.normal(0, 0.03, len(t))), 0.0)


@dataclass
class ShiftedJobMonitor:
    """The simulated job's observation (seconds since its hour began), stamped with the soak's absolute time."""

    job: SimulatedJob
    offset_s: int

    def observe(self, *, start_s: float, end_s: float) -> Observation:
        assert end_s == self.offset_s + self.job.now_s
        return replace(self.job.observation(int(start_s) - self.offset_s), time_s=end_s)

    def close(self) -> None:
        return None


def rss_kb(pid: int | str = "self") -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB, from /proc (0, 0 once it is gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0, 0
    fields = {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in lines) if k in ("VmRSS", "VmHWM")}
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def soak_config(workdir: Path, args: argparse.Namespace) -> Config:
    return parse_config(
        {
            "controller": {"loop_interval_s": 60, "knowledge_path": str(workdir / "knowledge.sqlite")},
            "forecast": {"background_refit": True},
            "runtime": {"decision_log": str(workdir / "decisions.jsonl"), "metrics_port": 0},
            "knowledge": {
                "retention_days": args.retention_days,
                "retention_rows": 0,
                "decision_log_max_bytes": args.log_max_bytes,
                "decision_log_backups": args.log_backups,
            },
        }
    )


def next_job(setup: SimSetup, chunk: int, previous: SimulatedJob | None, seed: int) -> SimulatedJob:
    """The next simulated hour, continuing the previous one (one second more, so a rescale asked at its last tick
    still starts there)."""
    rng = np.random.default_rng([seed, chunk])
    hour = replace(setup, workload_per_s=workload_per_s(chunk * CHUNK_S, (chunk + 1) * CHUNK_S + 1, rng))
    job = new_job(hour, initial_scaleout=previous.scaleout if previous else 6, rng=rng)
    job.restart_end_s = previous.restart_end_s - CHUNK_S if previous else -10 * DAY_S
    job._backlog = previous.lag_records() if previous else 0.0
    return job


def files_bytes(workdir: Path, prefix: str) -> int:
    return sum(p.stat().st_size for p in workdir.iterdir() if p.name.startswith(prefix))


def store_pages_kb(path: Path) -> tuple[float, float]:
    """(pages in use, pages on the free list) of the store in kB: a file that grows while the pages in use stay put
    is a high-water mark, not data kept."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        size, pages, free = (
            conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count", "freelist_count")
        )
    finally:
        conn.close()
    return (pages - free) * size / 1024, free * size / 1024


def run(args: argparse.Namespace, workdir: Path) -> list[dict[str, float]]:
    config = soak_config(workdir, args)
    rng = np.random.default_rng(args.seed)
    setup = make_setup(workload_per_s(0, DAY_S, rng), JobModel(), config, args.seed)
    clock = FakeClock(0.0)
    job = next_job(setup, 0, None, args.seed)
    monitor, actuator = ShiftedJobMonitor(job, 0), SimulatedJobActuator(job)
    sidecar = assemble_sidecar(config, monitor, actuator, clock=clock)
    ticks_per_chunk, chunks = CHUNK_S // 60, int(args.days * DAY_S) // CHUNK_S
    rows: list[dict[str, float]] = []
    tick_s: list[float] = []
    tick_cpu_s: list[float] = []  # the step's own thread's CPU time: what other runs on the machine do not inflate
    started = time.perf_counter()
    try:
        for chunk in range(chunks):
            if chunk:
                job = monitor.job = actuator.job = next_job(setup, chunk, job, args.seed)
                monitor.offset_s = chunk * CHUNK_S
            for k in range(1, ticks_per_chunk + 1):
                job.advance(k * 60)
                clock.set(chunk * CHUNK_S + k * 60)
                actuator.requested = None
                t0, c0 = time.perf_counter(), time.thread_time()
                sidecar.step()
                tick_s.append(time.perf_counter() - t0)
                tick_cpu_s.append(time.thread_time() - c0)
                if actuator.requested is not None:
                    job.request_scaleout(actuator.requested)
            if (chunk + 1) % round(args.sample_hours) == 0 or chunk + 1 == chunks:
                rows.append(sample(sidecar, workdir, clock.now(), (tick_s, tick_cpu_s), time.perf_counter() - started))
                print_row(rows[-1], first=len(rows) == 1)
    except KeyboardInterrupt:  # SIGINT or SIGTERM end the soak early; the summary covers the rows so far
        print(f"interrupted at simulated day {clock.now() / DAY_S:.2f}", flush=True)
        done = int(rows[-1]["ticks"]) if rows else len(tick_s)
        tick_s[:], tick_cpu_s[:] = tick_s[:done], tick_cpu_s[:done]
    finally:
        sidecar.close()
    rows.append({"tick_s": tick_s, "tick_cpu_s": tick_cpu_s})  # type: ignore[dict-item]  # raw times travel along
    return rows


def sample(
    sidecar: Sidecar, workdir: Path, now_s: float, ticks: tuple[list[float], list[float]], wall_s: float
) -> dict[str, float]:
    tick_s = ticks[0]
    pids = child_pids(sidecar.refits) if sidecar.refits is not None else []
    recent, recent_cpu = (np.asarray(x[-600:]) * 1e3 for x in ticks)
    own, own_peak = rss_kb()
    child, child_peak = (sum(x) for x in zip(*(rss_kb(p) for p in pids), strict=True)) if pids else (0, 0)
    k = sidecar.loop.controller.knowledge
    used_kb, free_kb = store_pages_kb(workdir / "knowledge.sqlite")
    return {
        "day": now_s / DAY_S,
        "ticks": len(tick_s),
        "store_kb": files_bytes(workdir, "knowledge.sqlite") / 1024,
        "used_kb": used_kb,
        "free_kb": free_kb,
        "log_kb": files_bytes(workdir, "decisions.jsonl") / 1024,
        "rss_mb": own / 1024,
        "child_rss_mb": child / 1024,
        "peak_mb": own_peak / 1024,
        "child_peak_mb": child_peak / 1024,
        "refits": k.forecaster.refits,
        "p50_ms": float(np.percentile(recent, 50)),
        "p95_ms": float(np.percentile(recent, 95)),
        "cpu_p50_ms": float(np.percentile(recent_cpu, 50)),
        "cpu_p95_ms": float(np.percentile(recent_cpu, 95)),
        "wall_s": wall_s,
    }


def print_row(r: dict[str, float], *, first: bool) -> None:
    if first:
        print(
            "   day    ticks  store kB (used/free)   log kB  RSS MB  refit-proc RSS MB  refits  "
            "tick p50/p95 ms (last 600)  CPU p50/p95 ms   wall s"
        )
    print(
        f"{r['day']:6.2f} {r['ticks']:8.0f} {r['store_kb']:9.0f} ({r['used_kb']:5.0f}/{r['free_kb']:4.0f}) "
        f"{r['log_kb']:8.0f} {r['rss_mb']:7.1f} "
        f"{r['child_rss_mb']:18.1f} {r['refits']:7.0f}  {r['p50_ms']:10.1f} / {r['p95_ms']:6.1f}{'':12} "
        f"{r['cpu_p50_ms']:6.1f} / {r['cpu_p95_ms']:6.1f}  {r['wall_s']:6.0f}",
        flush=True,
    )


def first_and_last_tenth(ms: np.ndarray) -> tuple[float, float, float, float]:
    """p50 and p95 of the first tenth of the ticks, then of the last tenth."""
    tenth = max(1, len(ms) // 10)
    first, last = ms[:tenth], ms[-tenth:]
    return tuple(float(np.percentile(x, q)) for x in (first, last) for q in (50, 95))  # type: ignore[return-value]


def summarize(rows: list[dict[str, float]], args: argparse.Namespace) -> bool:
    raw = rows.pop()
    wall = first_and_last_tenth(np.asarray(raw["tick_s"]) * 1e3)
    cpu = first_and_last_tenth(np.asarray(raw["tick_cpu_s"]) * 1e3)
    after = [r for r in rows if r["day"] >= args.retention_days + 1] or rows[-1:]
    store_growth = (after[-1]["store_kb"] - after[0]["store_kb"]) / after[0]["store_kb"]
    log_bound_kb = args.log_max_bytes * (args.log_backups + 1) / 1024
    half = [r for r in rows if r["day"] >= rows[-1]["day"] / 2]
    days = np.asarray([r["day"] for r in half])
    total = np.asarray([r["rss_mb"] + r["child_rss_mb"] for r in half])
    slope = float(np.polyfit(days, total, 1)[0]) if len(half) > 2 else 0.0
    spread = float(total.max() - total.min())
    peak = max(r["peak_mb"] for r in rows) + max(r["child_peak_mb"] for r in rows)
    end = rows[-1]
    print(f"\nsoak: {end['ticks']:.0f} ticks of 60 s = {end['day']:.1f} simulated days in {end['wall_s']:.0f} s wall")
    # The same once the retention window is full: the ticks of the first day(s) read and prune a store still filling.
    full = int(args.retention_days * DAY_S / 60)
    cpu_full = first_and_last_tenth(np.asarray(raw["tick_cpu_s"][full:] or raw["tick_cpu_s"]) * 1e3)
    for what, (f50, f95, l50, l95) in (
        ("wall time", wall),
        ("CPU time of its thread", cpu),
        ("CPU time, ticks after the retention window filled", cpu_full),
    ):
        print(
            f"tick (whole Loop step), {what}, p50/p95 ms: first 10 % {f50:.1f} / {f95:.1f}, last 10 % {l50:.1f} / "
            f"{l95:.1f} (p95 ratio {l95 / f95:.2f})"
        )
    print(
        f"store after the {args.retention_days:g}-day retention: {after[0]['store_kb']:.0f} -> {end['store_kb']:.0f}"
        f" kB ({store_growth:+.1%}; pages in use {after[0]['used_kb']:.0f} -> {end['used_kb']:.0f} kB, "
        f"highest {max(r['used_kb'] for r in after):.0f} kB); decision log + backups {end['log_kb']:.0f} kB "
        f"(bound {log_bound_kb:.0f} kB)"
    )
    print(
        f"RSS controller + refit process over the last half: {total.min():.0f}-{total.max():.0f} MB, slope "
        f"{slope:+.2f} MB/day; peak (VmHWM) controller {max(r['peak_mb'] for r in rows):.0f} MB + refit process "
        f"{max(r['child_peak_mb'] for r in rows):.0f} MB = {peak:.0f} MB"
    )
    scheduled = end["day"] * DAY_S / 900
    print(
        f"background refits swapped in: {end['refits']:.0f} (the schedule asks one per 900 s simulated: "
        f"{scheduled:.0f}; compressed time leaves each fit less wall time than that)"
    )
    if end["day"] < 365:
        year_mb = float(total.max()) + max(slope, 0.0) * (365 - end["day"])
        print(
            f"a year extrapolated from {end['day']:.1f} days: store and log stay at their bounds (pruned and "
            f"rotated); RSS at most {year_mb:.0f} MB (the last half's highest, plus its slope if rising)"
        )
    goals = {  # goal: (met, its figures)
        "store flat after the retention window (< 5 % growth)": (store_growth < 0.05, f"{store_growth:+.1%}"),
        "log within its bound": (end["log_kb"] <= log_bound_kb, f"{end['log_kb']:.0f} kB of {log_bound_kb:.0f} kB"),
        "tick p95 (CPU time) of the last 10 % within 10 % of the first": (
            cpu[3] <= 1.10 * cpu[1],
            f"{cpu[3]:.1f} ms against {cpu[1]:.1f} ms",
        ),
        "tick p95 (wall time, as loaded as the machine) of the last 10 % within 10 % of the first": (
            wall[3] <= 1.10 * wall[1],
            f"{wall[3]:.1f} ms against {wall[1]:.1f} ms",
        ),
        "RSS flat over the last half (spread < 5 % of the mean)": (
            spread < 0.05 * float(total.mean()),
            f"spread {spread:.1f} MB, mean {float(total.mean()):.1f} MB",
        ),
    }
    for goal, (met, figures) in goals.items():
        print(f"  {'met' if met else 'NOT MET'}: {goal}: {figures}")
    for goal, (met, figures) in goals.items():
        if not met:
            print(f"soak check failed: {goal}: {figures}", file=sys.stderr)
    return all(met for met, _ in goals.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--days", type=float, default=365.0, help="simulated days of 60-s ticks")
    parser.add_argument("--retention-days", type=float, default=1.0, help="knowledge.retention_days")
    parser.add_argument("--log-max-bytes", type=int, default=1 << 20, help="knowledge.decision_log_max_bytes")
    parser.add_argument("--log-backups", type=int, default=2, help="knowledge.decision_log_backups")
    parser.add_argument("--sample-hours", type=float, default=24.0, help="print a row every this many sim hours")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` ends the soak early, as Ctrl-C does
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        rows = run(args, Path(tmp))
    return 0 if summarize(rows, args) else 1


if __name__ == "__main__":
    sys.exit(main())
