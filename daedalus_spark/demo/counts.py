"""Demo: whether WordCount counted every word exactly once — the words in the source (the Kafka topic, read back from
the broker, or the local log) against the final counts its `files` sink wrote (Parquet per micro-batch; a word's
count is the one of the last batch that updated it)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from daedalus_spark.workloads.locallog import LocalLog


@dataclass(frozen=True)
class WordCounts:
    lines_in: int
    words_in: int
    words_out: int

    @property
    def exact(self) -> bool:
        return self.words_in == self.words_out


def words_in_log(log: LocalLog, topic: str) -> tuple[int, int]:
    """Lines and words appended to the topic (words as WordCount splits them: on whitespace, none empty)."""
    lines = words = 0
    for partition, end in log.latest_offsets(topic).items():
        for _, line in log.read(topic, partition, 0, end):
            lines += 1
            words += len(line.split())
    return lines, words


def words_in_kafka(bootstrap: str, topic: str, *, timeout_s: float = 120.0) -> tuple[int, int]:
    """Lines and words in the topic, each partition read from its log start to its log-end offset."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "daedalus-demo-count", "enable.auto.commit": False}
    )
    lines = words = 0
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s) for p in metadata.partitions
        }
        left = {p: high for p, (low, high) in ends.items() if high > low}
        consumer.assign([TopicPartition(topic, p, ends[p][0]) for p in left])
        last_read = time.monotonic()
        while left:
            # consume() waits its whole timeout for the 10,000 unless they come: short waits, so that the last records
            # are counted when they arrive rather than a timeout later
            messages = consumer.consume(10_000, timeout=1.0)
            if not messages:
                if time.monotonic() - last_read > timeout_s:
                    raise TimeoutError(
                        f"reading topic {topic!r} back: nothing for {timeout_s:g} s, {left} offsets left"
                    )
                continue
            last_read = time.monotonic()
            for message in messages:
                if message.error() is not None:
                    raise RuntimeError(f"reading topic {topic!r} back: {message.error()}")
                partition, offset = message.partition(), message.offset()
                if partition is not None and offset is not None and partition in left and offset < left[partition]:
                    lines += 1
                    words += len((message.value() or b"").decode().split())
                    if offset + 1 >= left[partition]:
                        del left[partition]
    finally:
        consumer.close()
    return lines, words


def final_counts(batches: Iterable[tuple[int, Iterable[tuple[str, int]]]]) -> dict[str, int]:
    """Each word's count after the last batch: batches in id order, each with its updated (word, count) rows."""
    counts: dict[str, int] = {}
    for _, rows in sorted(batches, key=lambda b: b[0]):
        counts.update(rows)
    return counts


def read_sink(sink_dir: Path) -> list[tuple[int, list[tuple[str, int]]]]:
    import pyarrow.parquet as pq

    batches = []
    for directory in sink_dir.glob("batch=*"):
        table = pq.read_table(directory)
        rows = zip(table.column("word").to_pylist(), table.column("count").to_pylist(), strict=True)
        batches.append((int(directory.name.removeprefix("batch=")), [(str(w), int(c)) for w, c in rows]))
    return batches


def kafka_word_counts(bootstrap: str, topic: str, sink_dir: Path) -> WordCounts:
    lines, words = words_in_kafka(bootstrap, topic)
    return WordCounts(lines, words, sum(final_counts(read_sink(sink_dir)).values()))


def word_counts(log_root: Path, topic: str, sink_dir: Path) -> WordCounts:
    lines, words = words_in_log(LocalLog(log_root), topic)
    return WordCounts(lines, words, sum(final_counts(read_sink(sink_dir)).values()))
