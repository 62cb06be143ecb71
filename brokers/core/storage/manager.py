"""LogManager: every partition log under one data directory, Kafka layout ``<topic>-<partition>/``.

It also holds an exclusive ``flock`` on ``<data_dir>/.storage.lock`` for its lifetime: two
brokers (or a broker and a leftover test process) appending to the same segment files would
corrupt them in ways recovery cannot undo, so the second one is refused up front.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from brokers.core.config import StorageConfig
from brokers.core.coordinator import validate_topic_name
from brokers.core.errors import InvalidTopic, KafkaStorageError, UnknownTopicOrPartition, UserError
from brokers.core.storage.log import PartitionLog

log = logging.getLogger("twinbench.storage")

# Kafka's legal topic characters and length. Checked again here because the name becomes a path.
_LOCK_NAME = ".storage.lock"


def validate_topic(topic: str) -> None:
    """Raise InvalidTopic unless ``topic`` is safe to use as a directory name component (the
    Kafka topic-name rule guarantees it)."""
    validate_topic_name(topic)


def partition_dir_name(topic: str, partition: int) -> str:
    validate_topic(topic)
    if partition < 0:
        raise UnknownTopicOrPartition(f"partition {partition} of {topic!r} is negative")
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``orders-3`` -> ("orders", 3); None for anything that is not a partition directory."""
    topic, sep, part = name.rpartition("-")
    if not sep or not part.isdigit() or not part.isascii():
        return None
    try:
        validate_topic(topic)
    except InvalidTopic:
        return None
    return topic, int(part)


class LogManager:
    """Owns every PartitionLog under ``data_dir``. Synchronous, single event loop."""

    def __init__(self, data_dir: Path, config: StorageConfig) -> None:
        self.data_dir = Path(data_dir)
        self.config = config
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.data_dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot use data directory {self.data_dir}: {exc}") from exc
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise UserError(
                f"data directory {self.data_dir} is in use by another process (or another "
                f"LogManager in this one); give each broker its own data_dir"
            ) from None

    def load_existing(self) -> list[tuple[str, int]]:
        """Open (and recover) every partition directory found; returns their (topic, partition)."""
        found: list[tuple[str, int]] = []
        for entry in sorted(os.scandir(self.data_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            key = parse_partition_dir(entry.name)
            if key is None:
                log.debug("ignoring %s: not a <topic>-<partition> directory", entry.path)
                continue
            if key not in self._logs:
                self._logs[key] = PartitionLog.open(Path(entry.path), self.config)
            found.append(key)
        return found

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        plog = self._logs.get(key)
        if plog is None:
            directory = self.data_dir / partition_dir_name(topic, partition)
            plog = PartitionLog.open(directory, self.config)
            self._logs[key] = plog
        return plog

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self._logs)

    def flush_dirty(self) -> int:
        """fsync every log with unflushed appends; returns how many were flushed."""
        n = 0
        for plog in self._logs.values():
            if plog.dirty:
                plog.flush()
                n += 1
        return n

    def enforce_retention(self, now_ms: int) -> int:
        return sum(plog.enforce_retention(now_ms) for plog in self._logs.values())

    def close(self) -> None:
        """Flush and close every log, then release the directory lock. Idempotent."""
        errors: list[BaseException] = []
        for plog in self._logs.values():
            try:
                plog.close()
            except Exception as exc:  # close the rest before reporting
                errors.append(exc)
        self._logs.clear()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the fd drops the flock
            self._lock_fd = -1
        if errors:
            raise errors[0]
