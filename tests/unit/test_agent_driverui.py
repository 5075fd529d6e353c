"""The agent's driver-UI reader against a stand-in of Spark's REST API: stages that never answer do not stop it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from daedalus_spark.agent.driverui import RECHECKED_IDS, DriverUiReader

APP = "app-1"


class StandIn:
    """Stages by id: (status, {executor id: input records}); ids not held answer 404."""

    def __init__(self) -> None:
        self.stages: dict[int, tuple[str, dict[str, int]]] = {}

    def answer(self, path: str) -> Any:
        prefix = f"/api/v1/applications/{APP}/stages"
        if path == prefix:
            return [{"stageId": i, "status": s} for i, (s, _) in self.stages.items()]
        stage_id = int(path.removeprefix(prefix + "/"))
        if stage_id not in self.stages:
            return None
        status, records = self.stages[stage_id]
        summary = {e: {"inputRecords": n} for e, n in records.items()}
        return [{"stageId": stage_id, "status": status, "executorSummary": summary}]


@pytest.fixture
def driver() -> Iterator[tuple[StandIn, str]]:
    stand_in = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = stand_in.answer(urlsplit(self.path).path)
            self.send_response(404 if body is None else 200)
            self.end_headers()
            self.wfile.write(json.dumps({"error": "no such stage"} if body is None else body).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield stand_in, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("stages", "expected", "next_stage"),
    [
        pytest.param({0: ("COMPLETE", {"1": 5}), 1: ("COMPLETE", {"2": 7})}, {"1": 5, "2": 7}, 2, id="contiguous"),
        pytest.param({0: ("COMPLETE", {"1": 5}), 2: ("COMPLETE", {"1": 7})}, {"1": 12}, 3, id="one-id-missing"),
        pytest.param({3: ("COMPLETE", {"1": 4}), 7: ("COMPLETE", {"2": 1})}, {"1": 4, "2": 1}, 8, id="old-ids-evicted"),
        pytest.param({1: ("ACTIVE", {"1": 9}), 4: ("COMPLETE", {"1": 2})}, {"1": 2}, 5, id="running-one-waits"),
        pytest.param({}, {}, 0, id="none-yet"),
    ],
)
def test_reader_counts_past_stage_ids_that_answer_404(driver, stages, expected, next_stage) -> None:
    stand_in, url = driver
    stand_in.stages = stages
    reader = DriverUiReader(url, APP)
    reader.poll_stages()
    assert dict(reader.records) == expected
    assert reader.next_stage == next_stage


def test_reader_keeps_counting_after_a_gap_on_later_polls(driver) -> None:
    stand_in, url = driver
    stand_in.stages = {0: ("COMPLETE", {"1": 1}), 1: ("ACTIVE", {"1": 3})}
    reader = DriverUiReader(url, APP)
    reader.poll_stages()
    assert dict(reader.records) == {"1": 1}
    # Stage 2 was skipped (never listed); stage 1 finished, and 3 ran after the gap.
    stand_in.stages |= {1: ("COMPLETE", {"1": 3}), 3: ("COMPLETE", {"2": 10})}
    reader.poll_stages()
    assert dict(reader.records) == {"1": 4, "2": 10}
    # A pending stage the UI dropped is given up, not asked for again forever.
    stand_in.stages = {5: ("ACTIVE", {})}
    reader.next_stage = 5
    reader.poll_stages()
    del stand_in.stages[5]
    reader.poll_stages()
    assert reader._pending == set()


def test_a_stage_listed_after_a_later_id_of_its_job_is_still_counted(driver) -> None:
    """A job's stages are stored one at a time: the result stage (1) can be listed a moment before the map stage
    (0) that read the source. Stage 0 is asked once more on the next poll, and counted."""
    stand_in, url = driver
    stand_in.stages = {1: ("COMPLETE", {"1": 0})}
    reader = DriverUiReader(url, APP)
    reader.poll_stages()
    assert dict(reader.records) == {"1": 0}
    stand_in.stages[0] = ("COMPLETE", {"1": 80})
    reader.poll_stages()
    assert dict(reader.records) == {"1": 80}
    assert reader._pending == set()


def test_ids_passed_over_after_a_long_gap_are_asked_again_only_near_the_next_listed_one(driver) -> None:
    stand_in, url = driver
    stand_in.stages = {1000: ("COMPLETE", {"1": 3})}
    reader = DriverUiReader(url, APP)
    reader.poll_stages()
    assert reader._pending == set(range(1000 - RECHECKED_IDS, 1000))
    reader.poll_stages()
    assert reader._pending == set()
    assert dict(reader.records) == {"1": 3}
