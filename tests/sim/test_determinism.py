"""Simulation tests: same trace and seed give identical results; another seed changes the random draws."""

from __future__ import annotations

import numpy as np

from daedalus_spark.config import Config
from daedalus_spark.sim.evaluate import compress_trace, evaluate
from daedalus_spark.sim.jobmodel import JobModel


def _trace() -> np.ndarray:
    t = np.arange(3 * 3600)
    return 20000 + 15000 * np.sin(2 * np.pi * t / 5400)


def test_same_seed_identical_results() -> None:
    names = ["static:12", "hpa:0.8", "flink", "oracle"]
    a = evaluate("sine", _trace(), names, job_model=JobModel(), config=Config(), seed=3)
    b = evaluate("sine", _trace(), names, job_model=JobModel(), config=Config(), seed=3)
    assert a.metrics == b.metrics
    for name in names:
        np.testing.assert_array_equal(a.runs[name].scaleout, b.runs[name].scaleout)
        np.testing.assert_array_equal(a.runs[name].latency_s, b.runs[name].latency_s)


def test_policy_draws_do_not_depend_on_the_other_policies() -> None:
    a = evaluate("sine", _trace(), ["hpa:0.8"], job_model=JobModel(), config=Config(), seed=3)
    b = evaluate("sine", _trace(), ["static:3", "hpa:0.8"], job_model=JobModel(), config=Config(), seed=3)
    assert a.metrics["hpa:0.8"] == b.metrics["hpa:0.8"]


def test_other_seed_other_downtimes() -> None:
    a = evaluate("sine", _trace(), ["hpa:0.8"], job_model=JobModel(), config=Config(), seed=1)
    b = evaluate("sine", _trace(), ["hpa:0.8"], job_model=JobModel(), config=Config(), seed=2)
    assert [r.downtime_s for r in a.runs["hpa:0.8"].rescales] != [r.downtime_s for r in b.runs["hpa:0.8"].rescales]


def test_speedup_compresses_time_and_keeps_the_mean() -> None:
    trace = np.arange(100, dtype=float)
    short = compress_trace(trace, 10)
    assert len(short) == 10 and short.mean() == trace.mean()
