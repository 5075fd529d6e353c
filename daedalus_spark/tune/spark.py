"""Tuning (I/O edge): the (candidate x window) simulations as one PySpark job; its rows land in a DataFrame."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from daedalus_spark.tune.partition import PARTITIONS_PER_CORE, partitions
from daedalus_spark.tune.task import (
    ROW_FIELDS,
    Setting,
    WindowRow,
    WindowTask,
    process_counts,
    simulate_window,
)

JOB_GROUP = "daedalus-spark-tune"
Progress = Callable[[int, int], None]  # (simulations done, simulations in all)
# Python worker's process id -> in this job: fit cache hits, misses; model memo hits, misses, updates replayed
WorkerCounts = dict[int, tuple[int, ...]]


class _Concat:
    """An accumulator's param (duck-typed, so that this module imports without Spark): lists, concatenated."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(self, a: list[Any], b: list[Any]) -> list[Any]:  # noqa: N802 - Spark's name
        a.extend(b)
        return a


def simulate_counted(task: WindowTask, workload_per_s: np.ndarray, setting: Setting, counts: Any) -> WindowRow:
    """`simulate_window`, adding (process id, the task's `WorkerCounts`) to the accumulator `counts`."""
    before = process_counts()
    row = simulate_window(task, workload_per_s, setting)
    counts.add([(os.getpid(), tuple(a - b for a, b in zip(process_counts(), before, strict=True)))])
    return row


def simulate_partition(
    part: list[WindowTask], workload_per_s: np.ndarray, setting: Setting, counts: Any
) -> Iterator[WindowRow]:
    """A partition's tasks one after the other in this process, so its first candidate leads the others."""
    for task in part:
        yield simulate_counted(task, workload_per_s, setting, counts)


def row_schema() -> Any:
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

    kinds = {"part": StringType(), "start_s": LongType(), "end_s": LongType()}
    floats = {"hours", "executor_hours", "avg_executors", "latency_p95_s"}
    return StructType(
        [StructField(n, kinds.get(n, DoubleType() if n in floats else IntegerType()), False) for n in ROW_FIELDS]
    )


def package_zip(directory: Path) -> Path:
    """daedalus_spark as a zip for --py-files (what a cluster's executors import; its dependencies they need
    installed, e.g. `pip install daedalus-spark` in the image)."""
    root = Path(__file__).resolve().parent.parent
    target = directory / "daedalus_spark.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                z.write(path, Path("daedalus_spark") / path.relative_to(root))
    return target


@contextmanager
def session(master: str, scratch: Path) -> Iterator[Any]:
    """A SparkSession on `master` (local: the Python workers run this interpreter); stopped on the way out."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName("daedalus-spark-tune")
        .master(master)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.task.maxFailures", "1")  # a task that fails is a bug or bad input, not a flaky node
    )
    if master.startswith("local"):  # PySpark reads the workers' interpreter from the driver's environment
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    try:
        spark.sparkContext.setLogLevel("ERROR")
        yield spark
    finally:
        spark.stop()


class _Watcher:
    """Reports finished simulations while the job runs: `done` (polled) counts them as each Spark task's accumulator
    updates reach the driver, i.e. a partition's simulations at once, when it ends."""

    def __init__(self, done: Callable[[], int], total: int, report: Progress, interval_s: float = 0.5) -> None:
        self.done, self.total, self.report, self.interval_s = done, total, report, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tune-progress", daemon=True)

    def _run(self) -> None:
        last = -1
        while not self._stop.wait(self.interval_s):
            done = min(self.done(), self.total)
            if done != last:
                self.report(done, self.total)
                last = done

    def __enter__(self) -> _Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_tasks(
    tasks: list[WindowTask],
    workload_per_s: np.ndarray,
    setting: Setting,
    *,
    master: str = "local[*]",
    progress: Progress | None = None,
    timing: dict[str, float] | None = None,
    worker_counts: WorkerCounts | None = None,
) -> list[WindowRow]:
    """Every task on Spark, in `partitions`: a window's candidates alike one after the other in one Spark task, so
    each leads once per window whatever the number of workers; at least two partitions per core where the tasks
    allow. The rows, by candidate and window. `timing` gets the job's wall seconds (`job_s`, Spark's start-up aside),
    the cores Spark ran it on (`cores`) and the partitions (`partitions`); `worker_counts` the fit cache's and the
    model memo's counts per Python worker."""
    scratch = Path(tempfile.mkdtemp(prefix="daedalus-tune-"))
    try:
        with session(master, scratch) as spark:
            sc = spark.sparkContext
            if not master.startswith("local"):
                sc.addPyFile(str(package_zip(scratch)))
            parts = partitions(tasks, PARTITIONS_PER_CORE * sc.defaultParallelism)
            shared = sc.broadcast(np.asarray(workload_per_s, dtype=float))
            counts = sc.accumulator([], _Concat())
            rdd = sc.parallelize(parts, len(parts)).flatMap(
                lambda part: simulate_partition(part, shared.value, setting, counts)
            )
            frame = spark.createDataFrame(rdd.map(dataclasses.astuple), row_schema())
            sc.setJobGroup(JOB_GROUP, "daedalus-spark tune: simulations", interruptOnCancel=True)
            started = time.perf_counter()
            if progress is None:
                collected = frame.collect()
            else:
                with _Watcher(lambda: len(counts.value), len(tasks), progress):
                    collected = frame.collect()
                progress(len(tasks), len(tasks))
            if timing is not None:
                timing.update(
                    job_s=time.perf_counter() - started,
                    cores=float(sc.defaultParallelism),
                    partitions=float(len(parts)),
                )
            shared.destroy()
            if worker_counts is not None:
                for pid, added in counts.value:
                    had = worker_counts.get(pid, (0,) * len(added))
                    worker_counts[pid] = tuple(a + b for a, b in zip(had, added, strict=True))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = [WindowRow(**r.asDict()) for r in collected]
    return sorted(rows, key=lambda r: (r.candidate, r.window))
