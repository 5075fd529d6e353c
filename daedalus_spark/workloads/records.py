"""Workload: deterministic record makers for the three pipelines (pure; no I/O)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

WORDS = ("stream", "spark", "kafka", "scale", "worker", "record", "window", "state", "lag", "daedalus")
CAMPAIGNS = 100
ADS_PER_CAMPAIGN = 10
EVENT_TYPES = ("view", "click", "purchase")
CENTER_LAT, CENTER_LON = 50.94, 6.96  # Cologne, as in the TAPASCologne trace
VEHICLES = 1000

RecordMaker = Callable[[random.Random, float], str]


def ad_campaign_table() -> list[tuple[str, str]]:
    """(ad_id, campaign_id) lookup table of the Yahoo Streaming Benchmark."""
    return [
        (f"ad-{c * ADS_PER_CAMPAIGN + a}", f"campaign-{c}") for c in range(CAMPAIGNS) for a in range(ADS_PER_CAMPAIGN)
    ]


def vehicle_table() -> list[tuple[str, str, int]]:
    """(vehicle_id, vehicle_type, seats) static vehicle information of Traffic Monitoring."""
    kinds = (("car", 5), ("truck", 2), ("bus", 40))
    return [(f"v-{i}", kinds[i % 3][0], kinds[i % 3][1]) for i in range(VEHICLES)]


def wordcount_line(rng: random.Random, now_s: float) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8))


def ysb_event(rng: random.Random, now_s: float) -> str:
    ad = rng.randrange(CAMPAIGNS * ADS_PER_CAMPAIGN)
    return ysb_json(f"ad-{ad}", rng.choice(EVENT_TYPES), int(now_s * 1000))


def ysb_json(ad_id: str, event_type: str, event_time_ms: int) -> str:
    return json.dumps({"ad_id": ad_id, "event_type": event_type, "event_time": event_time_ms})


def traffic_event(rng: random.Random, now_s: float) -> str:
    lat = CENTER_LAT + rng.uniform(-0.05, 0.05)
    lon = CENTER_LON + rng.uniform(-0.08, 0.08)
    return traffic_json(f"v-{rng.randrange(VEHICLES)}", lat, lon, round(rng.uniform(0, 120), 1), int(now_s * 1000))


def traffic_json(vehicle_id: str, lat: float, lon: float, speed_kmh: float, event_time_ms: int) -> str:
    return json.dumps(
        {"vehicle_id": vehicle_id, "lat": lat, "lon": lon, "speed": speed_kmh, "event_time": event_time_ms}
    )


MAKERS: dict[str, RecordMaker] = {"wordcount": wordcount_line, "ysb": ysb_event, "traffic": traffic_event}
