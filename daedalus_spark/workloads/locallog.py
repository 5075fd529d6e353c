"""Workload: a partitioned append-only log on local disk with per-partition offsets, Kafka-like."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

_SEGMENT_SUFFIX = ".seg"


class LocalLog:
    """Topics of N partitions; each append is an immutable segment file named by its offset range.

    Offsets count records from 0 per partition, as in Kafka. Segments appear atomically (write, then rename),
    so a reader never sees a partial append. Committed offsets are stored per consumer group.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def create_topic(self, topic: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        meta = self._topic_dir(topic) / "_meta.json"
        if meta.exists():
            existing = self.partitions(topic)
            if existing != partitions:
                raise ValueError(f"topic {topic!r} exists with {existing} partitions, not {partitions}")
            return
        for p in range(partitions):
            self._partition_dir(topic, p).mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"partitions": partitions}))

    def partitions(self, topic: str) -> int:
        meta = self._topic_dir(topic) / "_meta.json"
        if not meta.exists():
            raise FileNotFoundError(f"no topic {topic!r} under {self.root}")
        return int(json.loads(meta.read_text())["partitions"])

    def append(self, topic: str, partition: int, records: Sequence[str]) -> int:
        """Append records (single lines) to one partition; returns the partition's new end offset."""
        directory = self._partition_dir(topic, partition)
        if not directory.is_dir():
            raise FileNotFoundError(f"no partition {partition} of topic {topic!r}")
        if any("\n" in r for r in records):
            raise ValueError("records must not contain newlines")
        with open(directory / "_lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one writer at a time keeps offsets contiguous
            start = self._end_offset(directory)
            if not records:
                return start
            end = start + len(records)
            tmp = directory / f"_tmp-{os.getpid()}"
            tmp.write_text("".join(r + "\n" for r in records), encoding="utf-8")
            os.rename(tmp, directory / f"{start:020d}-{end:020d}{_SEGMENT_SUFFIX}")
            return end

    def latest_offsets(self, topic: str) -> dict[int, int]:
        """End offset (next offset to be written) of every partition."""
        return {p: self._end_offset(self._partition_dir(topic, p)) for p in range(self.partitions(topic))}

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[tuple[int, str]]:
        """(offset, record) for offsets in [start, end) of one partition."""
        for seg_start, seg_end, path in self._segments(self._partition_dir(topic, partition)):
            if seg_end <= start or seg_start >= end:
                continue
            lines = path.read_text(encoding="utf-8").split("\n")
            for offset in range(max(start, seg_start), min(end, seg_end)):
                yield offset, lines[offset - seg_start]

    def commit(self, topic: str, group: str, offsets: dict[int, int]) -> None:
        """Record a consumer group's committed offsets (the next offset it will read, per partition)."""
        directory = self._topic_dir(topic) / "_committed"
        directory.mkdir(exist_ok=True)
        tmp = directory / f"_tmp-{group}-{os.getpid()}"
        tmp.write_text(json.dumps({str(p): o for p, o in offsets.items()}))
        os.replace(tmp, directory / f"{group}.json")

    def committed(self, topic: str, group: str) -> dict[int, int]:
        path = self._topic_dir(topic) / "_committed" / f"{group}.json"
        if not path.exists():
            return dict.fromkeys(range(self.partitions(topic)), 0)
        return {int(p): int(o) for p, o in json.loads(path.read_text()).items()}

    def lag(self, topic: str, group: str) -> dict[int, int]:
        """Records appended but not yet committed by the group, per partition."""
        committed = self.committed(topic, group)
        return {p: end - committed.get(p, 0) for p, end in self.latest_offsets(topic).items()}

    def _topic_dir(self, topic: str) -> Path:
        if not topic or "/" in topic or topic.startswith((".", "_")):
            raise ValueError(f"invalid topic name {topic!r}")
        return self.root / topic

    def _partition_dir(self, topic: str, partition: int) -> Path:
        return self._topic_dir(topic) / f"partition-{partition}"

    @staticmethod
    def _segments(directory: Path) -> list[tuple[int, int, Path]]:
        found = []
        for name in os.listdir(directory):
            if name.endswith(_SEGMENT_SUFFIX):
                start, end = name[: -len(_SEGMENT_SUFFIX)].split("-")
                found.append((int(start), int(end), directory / name))
        return sorted(found)

    @classmethod
    def _end_offset(cls, directory: Path) -> int:
        segments = cls._segments(directory)
        return segments[-1][1] if segments else 0
