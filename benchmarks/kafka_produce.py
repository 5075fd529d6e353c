"""Benchmark (Kafka): the rate the generator's Kafka producer reaches on this machine, paced like the demo, against a
local broker. The goal: at least 3 x the demo's peak (DemoPlan: 13,500 lines/s) without falling behind its schedule.

The generator replays a flat trace at the goal rate (and a second, unpaced burst measures the ceiling) into a topic
of the demo's 8 partitions; it counts the ticks on which it was behind. Prints the rates reached and writes
benchmarks/results/kafka_produce.json.

  python benchmarks/kafka_produce.py [--seconds 30] [--factor 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from daedalus_spark.demo.live import DemoPlan
from daedalus_spark.kafkacluster.broker import LocalKafka
from daedalus_spark.kafkacluster.offsets import BrokerOffsets
from daedalus_spark.workloads.generator import Generator, KafkaSink
from daedalus_spark.workloads.pacing import PaceKeeper, Pacer
from daedalus_spark.workloads.records import wordcount_line

OUT = Path(__file__).parent / "results" / "kafka_produce.json"
DEMO_PEAK_PER_S = 40_000 * DemoPlan().scale * DemoPlan().compression  # the bundled trace peaks at 40,000/s


def paced(kafka: LocalKafka, rate: float, seconds: int) -> dict[str, float]:
    kafka.create_topic("paced", DemoPlan().partitions)
    sink = KafkaSink(kafka.bootstrap, "paced", DemoPlan().partitions)
    generator = Generator(PaceKeeper(Pacer(np.full(seconds, rate))), sink, wordcount_line, "paced", tick_s=0.2)
    started = time.monotonic()
    produced = generator.run(report=lambda _: None)
    wall = time.monotonic() - started
    offsets = BrokerOffsets(kafka.bootstrap)
    try:
        on_broker = sum(offsets.latest_offsets("paced").values())
    finally:
        offsets.close()
    return {
        "target_per_s": rate,
        "produced": produced,
        "on_broker": on_broker,
        "rate_per_s": produced / wall,
        "lagging_ticks": generator.lagging_ticks,
    }


def burst(kafka: LocalKafka, records: int) -> float:
    kafka.create_topic("burst", DemoPlan().partitions)
    sink = KafkaSink(kafka.bootstrap, "burst", DemoPlan().partitions)
    generator = Generator(PaceKeeper(Pacer(np.array([float(records)]))), sink, wordcount_line, "burst")
    started = time.monotonic()
    generator.step(10.0)
    sink.flush()
    return records / (time.monotonic() - started)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--factor", type=float, default=3.0)
    args = p.parse_args()
    goal = args.factor * DEMO_PEAK_PER_S
    with LocalKafka() as kafka:
        result = paced(kafka, goal, args.seconds)
        result["ceiling_per_s"] = burst(kafka, 300_000)
    result["demo_peak_per_s"] = DEMO_PEAK_PER_S
    ok = result["lagging_ticks"] == 0 and result["on_broker"] == result["produced"]
    print(
        f"kafka producer: {result['rate_per_s']:,.0f} records/s paced at {goal:,.0f}/s "
        f"({args.factor:g} x the demo's peak {DEMO_PEAK_PER_S:,.0f}/s) for {args.seconds} s, "
        f"{result['lagging_ticks']} ticks behind, {result['on_broker']:,} of {result['produced']:,} on the broker; "
        f"unpaced ceiling {result['ceiling_per_s']:,.0f} records/s"
    )
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
