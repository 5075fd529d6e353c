"""Contract: every MetricsSource turns the same known job into the same Observation and names the same faults.

One scenario job (counters that are linear pieces of time, with a rate change, a counter reset and a driver row)
is served over HTTP: as a /metrics page for the ScrapeMonitor (scraped at fake-clock times), and as the answers a
Prometheus server gives to the default range queries for the PrometheusMonitor. The oracle is computed by hand
with numpy from the counters, with PromQL's rate(): increase inside (t - window, t] over the sample distance, a
drop counting as a reset to zero. The evaluation of PromQL itself by a real server is tests/integration's job.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from daedalus_spark.clock import FakeClock, SystemClock
from daedalus_spark.config import Config, MonitorConfig
from daedalus_spark.monitor.port import MonitorError
from daedalus_spark.monitor.prometheus import PrometheusMonitor, queries
from daedalus_spark.monitor.scrape import ScrapeMonitor
from daedalus_spark.runtime.wiring import make_monitor

START_S = 1000.0  # the job (re)started here
RATE_WINDOW_S = 5.0


def _ramp(t: float, after_s: float) -> float:
    return max(0.0, t - after_s)


# (metric name, labels) -> counter or gauge value at time t. Executor 1's records reset at 1100.
SCENARIO: dict[tuple[str, tuple[tuple[str, str], ...]], Callable[[float], float]] = {
    ("daedalus_spark_source_latest_offset_total", (("topic", "events"), ("partition", "0"))): lambda t: 150 * t,
    ("daedalus_spark_source_latest_offset_total", (("topic", "events"), ("partition", "1"))): lambda t: (
        250 * t + 100 * _ramp(t, 1090)
    ),
    ("daedalus_spark_executor_records_processed_total", (("executor_id", "1"),)): lambda t: (
        100 * t if t < 1100 else 100 * (t - 1100)
    ),
    ("daedalus_spark_executor_records_processed_total", (("executor_id", "2"),)): lambda t: (
        300 * t + 80 * _ramp(t, 1090)
    ),
    ("daedalus_spark_executor_records_processed_total", (("executor_id", "driver"),)): lambda t: 0.0,
    ("daedalus_spark_executor_busy_seconds_total", (("executor_id", "1"),)): lambda t: 0.4 * t,
    ("daedalus_spark_executor_busy_seconds_total", (("executor_id", "2"),)): lambda t: 1.2 * t + 0.4 * _ramp(t, 1090),
    ("daedalus_spark_executor_busy_seconds_total", (("executor_id", "driver"),)): lambda t: 0.05 * t,
    ("daedalus_spark_executor_cores", (("executor_id", "1"),)): lambda t: 2.0,
    ("daedalus_spark_executor_cores", (("executor_id", "2"),)): lambda t: 2.0,
    ("daedalus_spark_executor_cores", (("executor_id", "driver"),)): lambda t: 1.0,
    ("daedalus_spark_executor_cpu_seconds_total", (("executor_id", "1"),)): lambda t: 0.125 * t,
    ("daedalus_spark_executor_cpu_seconds_total", (("executor_id", "2"),)): lambda t: 0.375 * t + 0.1 * _ramp(t, 1090),
    ("daedalus_spark_executor_cpu_limit_cores", (("executor_id", "1"),)): lambda t: 0.5,
    ("daedalus_spark_executor_cpu_limit_cores", (("executor_id", "2"),)): lambda t: 0.5,
    ("daedalus_spark_lag_records", ()): lambda t: 1234 + (t - START_S),
    ("daedalus_spark_executors", ()): lambda t: 2.0,
    ("daedalus_spark_uptime_seconds", (("application_id", "app-1"),)): lambda t: t - START_S,
    ("daedalus_spark_executors_target", (("application_id", "app-1"),)): lambda t: 2.0,
    # The query's progress: batches speed up from one per 2 s to one per second at 1090, reading what arrives.
    ("daedalus_spark_query_batches_total", (("query", "wordcount"),)): lambda t: 0.5 * t + 0.5 * _ramp(t, 1090),
    ("daedalus_spark_query_input_records_total", (("query", "wordcount"),)): lambda t: 400 * t + 100 * _ramp(t, 1090),
    ("daedalus_spark_query_batch_seconds_total", (("query", "wordcount"),)): lambda t: 0.8 * t,
}
BATCH_COUNTERS = {
    "batches": "daedalus_spark_query_batches_total",
    "batch_records": "daedalus_spark_query_input_records_total",
    "batch_seconds": "daedalus_spark_query_batch_seconds_total",
}
# The batch faults: what the served batch seconds counter becomes (None: not served at all).
BATCH_FAULTS: dict[str, Callable[[float], float] | None] = {
    "batches_missing": None,
    "batches_nan": lambda t: math.nan,
    "batches_negative": lambda t: -0.8 * t,  # a bogus counter: every sample a "reset" to a negative value
}


def counter_at(name: str, t: float, executor: str | None = None) -> float:
    return sum(
        f(t)
        for (n, labels), f in SCENARIO.items()
        if n == name and (executor is None or dict(labels).get("executor_id") == executor)
    )


def oracle_rate(name: str, grid: np.ndarray, executor: str | None = None, partition: str | None = None) -> np.ndarray:
    matching = [
        f
        for (n, labels), f in SCENARIO.items()
        if n == name
        and (executor is None or dict(labels).get("executor_id") == executor)
        and (partition is None or dict(labels).get("partition") == partition)
    ]
    return summed_rates(matching, grid)


def summed_rates(counters: list[Callable[[float], float]], grid: np.ndarray) -> np.ndarray:
    """sum(rate()) of 1-s samples at whole seconds: samples t-4..t lie inside (t - 5, t]."""
    out = []
    for t in grid:
        total = 0.0
        for f in counters:
            c = np.array([f(s) for s in np.arange(t - RATE_WINDOW_S + 1, t + 1)])
            steps = np.diff(c)
            total += float(np.where(steps >= 0, steps, c[1:]).sum()) / (RATE_WINDOW_S - 1)
        out.append(total)
    return np.array(out)


def oracle(signal: str, grid: np.ndarray, only: str | None = None) -> dict[str, np.ndarray]:
    """The true series by "<query>" or "<query>/<executor or partition>"; `only`: those of one query (the
    stand-in server answers one query per request, within the monitor's timeout)."""
    counter, limit = (
        ("daedalus_spark_executor_cpu_seconds_total", "daedalus_spark_executor_cpu_limit_cores")
        if signal == "cpu"
        else ("daedalus_spark_executor_busy_seconds_total", "daedalus_spark_executor_cores")
    )
    offsets, records = "daedalus_spark_source_latest_offset_total", "daedalus_spark_executor_records_processed_total"

    def utilization(e: str) -> np.ndarray:
        return oracle_rate(counter, grid, e) / counter_at(limit, grid[-1], e)

    series: dict[str, Callable[[], np.ndarray]] = {"workload": partial(oracle_rate, offsets, grid)}
    for p in ("0", "1"):
        series[f"partitions/{p}"] = partial(oracle_rate, offsets, grid, partition=p)
    for e in ("1", "2"):
        series[f"throughput/{e}"] = partial(oracle_rate, records, grid, e)
        series[f"utilization/{e}"] = partial(utilization, e)
    return {key: value() for key, value in series.items() if only in (None, key.split("/")[0])}


RESTART_S = 1125.0  # in mode "restarted", the application's series are app-2's from here on


@dataclass
class Job:
    """The served job; `mode` injects a fault: normal, nan, slow, empty, partial, `<query>_rejected` (Prometheus
    refuses that query), one of BATCH_FAULTS, or restarted (a new application id from RESTART_S)."""

    clock: FakeClock
    mode: str = "normal"
    promql: dict[str, str] = field(default_factory=dict)  # PromQL -> query name, for the Prometheus API
    signal: str = "cpu"

    def served(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], Callable[[float], float]]:
        """The scenario with the mode's batch fault applied to the batch seconds counter."""
        scenario = dict(SCENARIO)
        if self.mode in BATCH_FAULTS:
            key = (BATCH_COUNTERS["batch_seconds"], (("query", "wordcount"),))
            fault = BATCH_FAULTS[self.mode]
            if fault is None:
                del scenario[key]
            else:
                scenario[key] = fault
        return scenario

    def application_at(self, t: float) -> str:
        return "app-2" if self.mode == "restarted" and t >= RESTART_S else "app-1"

    def exposition(self) -> str:
        if self.mode == "empty":
            return ""
        lines = []
        for (name, labels), f in self.served().items():
            if self.mode == "partial" and ("executor_id", "2") in labels:
                continue
            value = (
                math.nan
                if self.mode == "nan" and name.endswith(("cpu_seconds_total", "busy_seconds_total"))
                else f(self.clock.now())
            )
            app = self.application_at(self.clock.now())
            rendered = ",".join(f'{k}="{app if k == "application_id" else v}"' for k, v in labels)
            lines.append(f"{name}{{{rendered}}} {value!r}" if rendered else f"{name} {value!r}")
        return "\n".join(lines) + "\n"

    def query_range(self, promql: str, start_s: float, end_s: float, step_s: float) -> list[dict]:
        """What Prometheus answers for the default queries over this job (values from the oracle)."""
        name = self.promql[promql]
        if self.mode == "empty":
            return []
        grid = np.arange(start_s, end_s + step_s / 2, step_s)
        if name in BATCH_COUNTERS:  # from the served counters: a batch fault shows in the rates as Prometheus has them
            counters = [f for (n, _), f in self.served().items() if n == BATCH_COUNTERS[name]]
            return [_matrix({}, grid, summed_rates(counters, grid))] if counters else []
        truth = oracle(self.signal, grid, only=name)
        executors = ("1",) if self.mode == "partial" else ("1", "2")
        if name in ("throughput", "utilization"):
            series = {e: truth[f"{name}/{e}"] for e in executors}
            if self.mode == "nan" and name == "utilization":
                series["1"] = np.full(len(grid), math.nan)
            return [_matrix({"executor_id": e}, grid, v) for e, v in series.items()]
        if name == "workload":
            return [_matrix({}, grid, truth["workload"])]
        if name == "application":  # max by (application_id) (uptime): each application's series while it runs
            apps = [self.application_at(t) for t in grid]
            return [
                _matrix({"application_id": a}, grid[[x == a for x in apps]], grid[[x == a for x in apps]] - START_S)
                for a in sorted(set(apps))
            ]
        if name == "agent_target":
            return [_matrix({}, grid, np.full(len(grid), 2.0))]
        if name == "partitions":
            return [_matrix({"topic": "events", "partition": p}, grid, truth[f"partitions/{p}"]) for p in ("0", "1")]
        metric = {
            "lag": "daedalus_spark_lag_records",
            "executors": "daedalus_spark_executors",
            "uptime": "daedalus_spark_uptime_seconds",
        }[name]
        return [_matrix({}, grid, np.array([counter_at(metric, t) for t in grid]))]


def _matrix(labels: dict[str, str], grid: np.ndarray, values: np.ndarray) -> dict:
    # Prometheus sends values as strings ("NaN" included).
    return {
        "metric": labels,
        "values": [
            [float(t), format(float(v), "g") if math.isfinite(v) else "NaN"] for t, v in zip(grid, values, strict=True)
        ],
    }


class _StandIn(ThreadingHTTPServer):
    daemon_threads = True
    # The monitor opens one connection per query at once (ten); the default backlog of 5 drops the rest's SYNs,
    # retried only after a second, past the monitor's budget. Prometheus listens with the system's backlog.
    request_queue_size = 64


def _serve(job: Job) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if job.mode == "slow":
                time.sleep(1.5)  # a server slower than the monitor's 0.5-s timeout
            url = urlparse(self.path)
            if url.path == "/metrics":
                body, kind = job.exposition().encode(), "text/plain; version=0.0.4"
            elif url.path == "/api/v1/query_range":
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                if job.mode == f"{job.promql.get(q['query'])}_rejected":
                    self.send_error(400, "bad_data: unknown label")
                    return
                result = job.query_range(q["query"], float(q["start"]), float(q["end"]), float(q["step"]))
                body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
                kind = "application/json"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the monitor gave up on a slow answer, as it should
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = _StandIn(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server


@dataclass
class Harness:
    """A monitor over the served job; `advance_to` moves the fake clock (the scrape monitor scrapes every second)."""

    monitor: PrometheusMonitor | ScrapeMonitor
    job: Job
    server: ThreadingHTTPServer

    def advance_to(self, t_s: float) -> None:
        while self.job.clock.now() < t_s:
            self.job.clock.advance(1.0)
            if isinstance(self.monitor, ScrapeMonitor):
                self.monitor.scrape_once()

    def stop_server(self) -> None:
        self.server.shutdown()
        self.server.server_close()


KINDS = ["prometheus", "scrape"]


@contextlib.contextmanager
def open_harness(kind: str, signal: str) -> Iterator[Harness]:
    job = Job(FakeClock(1054.0), signal=signal)  # scraping starts in time for the first rate() window
    server = _serve(job)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    if kind == "prometheus":
        config = MonitorConfig(prometheus_url=base, rate_window_s=RATE_WINDOW_S, scrape_interval_s=1, timeout_s=0.5)
        job.promql = {q: name for name, q in queries(config, signal).items()}
        monitor: PrometheusMonitor | ScrapeMonitor = PrometheusMonitor(config, signal)
    else:
        config = MonitorConfig(scrape_urls=[base + "/metrics"], rate_window_s=RATE_WINDOW_S, timeout_s=0.5)
        monitor = ScrapeMonitor(config, signal, job.clock, horizon_s=300)
    h = Harness(monitor, job, server)
    h.advance_to(1120)
    try:
        yield h
    finally:
        monitor.close()
        server.shutdown()
        server.server_close()


@pytest.fixture(params=[(k, s) for k in KINDS for s in ("cpu", "busy_time")], ids=lambda p: f"{p[0]}-{p[1]}")
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with open_harness(*request.param) as h:
        yield h


def test_known_job_gives_the_oracles_numbers(harness: Harness) -> None:
    obs = harness.monitor.observe(start_s=1060, end_s=1120)
    grid = np.arange(1061, 1121, dtype=float)
    truth = oracle(harness.job.signal, grid)
    assert (obs.time_s, obs.step_s, obs.scaleout) == (1120, 1.0, 2)
    assert obs.executor_ids == ("1", "2")  # the driver row is no executor
    np.testing.assert_allclose(obs.workload_per_s, truth["workload"], rtol=1e-9)
    for w in obs.executors:
        np.testing.assert_allclose(w.throughput_per_s, truth[f"throughput/{w.executor_id}"], rtol=1e-9)
        np.testing.assert_allclose(w.utilization_ratio, truth[f"utilization/{w.executor_id}"], rtol=1e-9)
    assert obs.consumer_lag_records == pytest.approx(1234 + 120)
    assert obs.uptime_s == pytest.approx(120)
    assert (obs.application_id, obs.agent_target) == ("app-1", 2)
    assert [(p.topic, p.partition) for p in obs.partitions] == [("events", 0), ("events", 1)]
    for p in obs.partitions:
        assert p.records_per_s == pytest.approx(float(np.mean(truth[f"partitions/{p.partition}"])), rel=1e-9)


def test_batch_progress_is_the_rates_summed_over_the_window(harness: Harness) -> None:
    obs = harness.monitor.observe(start_s=1060, end_s=1120)
    grid = np.arange(1061, 1121, dtype=float)
    assert obs.batches is not None
    sums = {query: float(oracle_rate(metric, grid).sum()) * obs.step_s for query, metric in BATCH_COUNTERS.items()}
    assert obs.batches.batches == pytest.approx(sums["batches"], rel=1e-9)
    assert obs.batches.input_records == pytest.approx(sums["batch_records"], rel=1e-9)
    assert obs.batches.duration_s == pytest.approx(sums["batch_seconds"], rel=1e-9)
    # By hand: 0.5/s up to 1090 (30 samples), the rate() window crossing the change at 1091..1093 (2.5, 3, 3.5
    # batches in 4 s), 1/s after (27 samples); records 400/s plus 100/s for 0.25 + 0.5 + 0.75 + 27 samples; 0.8 s/s.
    assert (obs.batches.batches, obs.batches.input_records, obs.batches.duration_s) == pytest.approx(
        (30 * 0.5 + (2.5 + 3 + 3.5) / 4 + 27, 60 * 400 + 100 * 28.5, 60 * 0.8), rel=1e-9
    )


@pytest.mark.parametrize("fault", list(BATCH_FAULTS))
def test_unusable_batch_progress_leaves_the_window_observed_without_it(harness: Harness, fault: str) -> None:
    harness.job.mode = fault
    harness.advance_to(1130)
    obs = harness.monitor.observe(start_s=1125, end_s=1130)  # every rate() window after the fault began
    assert obs.batches is None and obs.scaleout == 2 and len(obs.workload_per_s) == 5


def test_a_failed_batch_query_leaves_the_window_observed_without_batches() -> None:
    with open_harness("prometheus", "cpu") as h:
        h.job.mode = "batch_records_rejected"
        obs = h.monitor.observe(start_s=1060, end_s=1120)
    assert obs.batches is None and obs.scaleout == 2 and len(obs.partitions) == 2


def test_the_oracle_sees_the_rate_change_and_the_reset(harness: Harness) -> None:
    # Guards the oracle itself: a scenario without variation would pass a monitor that returns constants.
    truth = oracle(harness.job.signal, np.arange(1061, 1121, dtype=float))
    assert truth["workload"][0] == pytest.approx(400) and truth["workload"][-1] == pytest.approx(500)
    assert truth["throughput/1"][1100 - 1061] == pytest.approx(75)  # 3 of 4 intervals before the reset
    assert truth["throughput/1"][-1] == pytest.approx(100)


def test_the_application_at_the_windows_end_is_observed(harness: Harness) -> None:
    harness.job.mode = "restarted"
    harness.advance_to(1135)
    assert harness.monitor.observe(start_s=1115, end_s=1124).application_id == "app-1"
    obs = harness.monitor.observe(start_s=1120, end_s=1135)  # both applications inside, the new one at the end
    assert (obs.application_id, obs.agent_target) == ("app-2", 2)


def test_consecutive_windows_share_no_sample(harness: Harness) -> None:
    first = harness.monitor.observe(start_s=1090, end_s=1100)
    second = harness.monitor.observe(start_s=1100, end_s=1120)
    assert len(first.workload_per_s) == 10 and len(second.workload_per_s) == 20


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("down", "unreachable"),
        ("slow", "timeout"),
        ("empty", "empty"),
        ("nan", "invalid"),
        ("partial", "partial"),
    ],
)
def test_faults_raise_their_kind(harness: Harness, fault: str, kind: str) -> None:
    if fault == "down":
        harness.stop_server()
    else:
        harness.job.mode = fault
    harness.advance_to(1123)
    with pytest.raises(MonitorError) as err:
        harness.monitor.observe(start_s=1120, end_s=1123)
    assert err.value.kind == kind, str(err.value)


def test_a_failed_partition_query_leaves_the_window_observed_without_partitions() -> None:
    """The per-partition query is optional: Prometheus refusing it costs the partitions, not the tick."""
    with open_harness("prometheus", "cpu") as h:
        h.job.mode = "partitions_rejected"
        obs = h.monitor.observe(start_s=1060, end_s=1120)
    assert obs.partitions == () and obs.scaleout == 2 and len(obs.workload_per_s) == 60


def test_a_window_without_a_step_is_empty(harness: Harness) -> None:
    with pytest.raises(MonitorError) as err:
        harness.monitor.observe(start_s=1119.2, end_s=1119.9)
    assert err.value.kind == "empty"


def test_scrape_monitor_before_its_first_scrape_has_nothing() -> None:
    monitor = ScrapeMonitor(MonitorConfig(scrape_urls=["http://127.0.0.1:9/metrics"]), "cpu", FakeClock(10))
    with pytest.raises(MonitorError) as err:
        monitor.observe(start_s=0, end_s=10)
    assert err.value.kind == "empty"


def test_scrape_monitor_forgets_old_samples() -> None:
    job = Job(FakeClock(START_S))
    server = _serve(job)
    try:
        config = MonitorConfig(scrape_urls=[f"http://127.0.0.1:{server.server_address[1]}/metrics"])
        monitor = ScrapeMonitor(config, "cpu", job.clock, horizon_s=30)
        h = Harness(monitor, job, server)
        h.advance_to(1200)
        assert max(len(s.times_s) for s in monitor._series.values()) <= 30 / config.step_s + 10
        with pytest.raises(MonitorError) as err:
            monitor.observe(start_s=1100, end_s=1130)  # scraped, but beyond the buffer
        assert err.value.kind == "empty"
    finally:
        server.shutdown()
        server.server_close()


def test_factory_picks_by_prometheus_url() -> None:
    nowhere = MonitorConfig(scrape_urls=["http://127.0.0.1:9/metrics"])  # port 9: refused at once
    scrape = make_monitor(Config(monitor=nowhere), SystemClock())
    try:
        assert isinstance(scrape, ScrapeMonitor)
        deadline = time.monotonic() + 10
        while not scrape._errors:  # the started thread's first scrape (of a refused port)
            assert time.monotonic() < deadline, "the scrape thread never scraped"
            time.sleep(0.05)
        with pytest.raises(MonitorError) as err:
            scrape.observe(start_s=time.time() - 10, end_s=time.time())
        assert err.value.kind == "unreachable"
    finally:
        scrape.close()
    assert scrape._thread is None
    remote = make_monitor(
        Config(monitor=MonitorConfig(prometheus_url="http://127.0.0.1:9", scrape_interval_s=1)), FakeClock(0)
    )
    assert isinstance(remote, PrometheusMonitor)
    remote.close()


def _simulated_monitor() -> tuple[object, float]:
    from daedalus_spark.sim.daedalus import SimulatedJobMonitor
    from daedalus_spark.sim.job import SimulatedJob
    from daedalus_spark.sim.jobmodel import JobModel
    from daedalus_spark.sim.skew import build_simulated_capacity

    model = JobModel(
        executor_capacity_per_s=100.0,
        partitions=4,
        zipf_exponent=0.0,
        keys=4000,
        utilization_noise_ratio=0.0,
        checkpoint_interval_s=0,
    )
    workload = np.full(200, 150.0)
    job = SimulatedJob(
        workload,
        model,
        build_simulated_capacity(model, max_scaleout=4, peak_per_s=150.0),
        initial_scaleout=2,
        cpu_signal=True,
        rng=np.random.default_rng(0),
    )
    job.advance(120)
    return SimulatedJobMonitor(job), 120.0


@pytest.mark.parametrize("kind", ["prometheus", "scrape", "simulated"])
def test_every_monitor_keeps_the_observation_invariants(kind: str) -> None:
    """What the loop relies on from any source: one sample per step in (start, end], all series on one grid."""
    with contextlib.ExitStack() as stack:
        if kind == "simulated":
            monitor, end_s = _simulated_monitor()
        else:
            monitor, end_s = stack.enter_context(open_harness(kind, "cpu")).monitor, 1120.0
        obs = monitor.observe(start_s=end_s - 60, end_s=end_s)  # type: ignore[attr-defined]
    assert obs.time_s == end_s and obs.step_s == 1.0 and len(obs.workload_per_s) == 60
    assert obs.scaleout == len(obs.executors) >= 1
    for w in obs.executors:
        assert len(w.throughput_per_s) == len(w.utilization_ratio) == 60
        assert all(math.isfinite(x) and x >= 0 for x in (*w.throughput_per_s, *w.utilization_ratio))
    assert math.isfinite(obs.consumer_lag_records) and obs.consumer_lag_records >= 0 and obs.uptime_s >= 0
    # Who runs the job: named where the source can tell, else left at the unknown defaults (the simulator).
    expected = ("", None) if kind == "simulated" else ("app-1", 2)
    assert (obs.application_id, obs.agent_target) == expected
