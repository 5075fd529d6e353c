"""Range-query results as Prometheus answers them, for the Monitor's assembly: a complete window of ten 1-s steps."""

from __future__ import annotations

from daedalus_spark.monitor.assemble import Window

WINDOW = Window(100.0, 110.0, 1.0)  # grid 101..110
GRID = list(range(101, 111))


def series(values: dict[int, float | str], **labels: str) -> dict:
    return {"metric": labels, "values": [[float(t), str(v)] for t, v in sorted(values.items())]}


def const(value: float, times: list[int] = GRID) -> dict[int, float | str]:
    return dict.fromkeys(times, value)


def results(**override: list[dict]) -> dict[str, list[dict]]:
    base = {
        "workload": [series({t: 10.0 * t for t in GRID})],
        "throughput": [
            series(const(5.0), executor_id="1"),
            series(const(7.0), executor_id="2"),
            series(const(0.0), executor_id="driver"),
        ],
        "utilization": [series(const(0.5), executor_id="1"), series(const(0.7), executor_id="2")],
        "lag": [series({109: 3.0, 110: 4.0})],
        "executors": [series(const(2.0))],
        "uptime": [series({110: 55.0})],
    }
    return base | override
