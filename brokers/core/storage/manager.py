"""LogManager: every partition log under one data directory, Kafka layout ``<topic>-<partition>/``.

The directory must be used by one process only: two brokers (or a broker and a leftover test
process) appending to the same segment files would corrupt them in ways recovery cannot undo.
A broker passes its ``DataDir``, locked before anything in it was touched; a LogManager built
without one locks ``<data_dir>/.storage.lock`` itself for its lifetime, so the second one is
refused up front.

Every log shares one ``OpenSegments`` budget (``StorageConfig.max_open_segments`` descriptors)
and the ``DataDir``'s failure state: the first disk error takes every log offline.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from brokers.core.config import StorageConfig
from brokers.core.coordinator import validate_topic_name
from brokers.core.datadir import DataDir
from brokers.core.errors import InvalidTopic, UnknownTopicOrPartition
from brokers.core.storage.log import PartitionLog
from brokers.core.storage.open_files import OpenSegments
from brokers.core.topic_config import storage_config_for

log = logging.getLogger("twinbench.storage")

_LOCK_NAME = ".storage.lock"
# A deleted partition's directory is renamed to "<topic>-<p>.<id>-delete" (Kafka's suffix)
# before its files go: the rename is atomic, so a crash midway leaves a directory that no
# longer parses as a partition and is removed at the next start, never a half-deleted log.
DELETE_SUFFIX = "-delete"


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

    def __init__(
        self, data_dir: Path, config: StorageConfig, datadir: DataDir | None = None
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        # Topics with their own settings (topic configs): their logs' StorageConfig.
        self._topic_configs: dict[str, StorageConfig] = {}
        self.files = OpenSegments(config.max_open_segments)
        # Our own lock only when nobody locked the directory for us.
        self._own_lock = datadir is None
        self.datadir = datadir if datadir is not None else DataDir(self.data_dir, _LOCK_NAME)
        if self._own_lock:
            self.datadir.lock()
        self.datadir.on_failure(self._offline)
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.close()
            raise self.datadir.fail(f"cannot create {self.data_dir}", exc) from exc

    def _offline(self, reason: str) -> None:
        for plog in self._logs.values():
            plog.take_offline()

    def on_failure(self, listener: Callable[[str], None]) -> None:
        """``listener(reason)`` once, when the first disk error takes the directory offline."""
        self.datadir.on_failure(listener)

    def load_existing(self) -> list[tuple[str, int]]:
        """Open (and recover) every partition directory found; returns their (topic, partition)."""
        found: list[tuple[str, int]] = []
        for entry in sorted(os.scandir(self.data_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            if entry.name.endswith(DELETE_SUFFIX):
                self._remove_tree(Path(entry.path))
                continue
            key = parse_partition_dir(entry.name)
            if key is None:
                log.debug("ignoring %s: not a <topic>-<partition> directory", entry.path)
                continue
            if key not in self._logs:
                self._logs[key] = self._open(Path(entry.path))
            found.append(key)
        return found

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        plog = self._logs.get(key)
        if plog is None:
            directory = self.data_dir / partition_dir_name(topic, partition)
            plog = self._open(directory, self._topic_configs.get(topic, self.config))
            self._logs[key] = plog
        return plog

    def _open(self, directory: Path, config: StorageConfig | None = None) -> PartitionLog:
        return PartitionLog.open(directory, config or self.config, files=self.files,
                                 datadir=self.datadir)

    def configure_topics(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """Apply each topic's own configs (``brokers.core.topic_config``) to its open logs
        and to the ones opened later; a topic absent from ``configs`` gets the broker's."""
        wanted = {t: storage_config_for(self.config, c) for t, c in configs.items() if c}
        wanted = {t: c for t, c in wanted.items() if c != self.config}
        if wanted == self._topic_configs:
            return
        self._topic_configs = wanted
        for (topic, _), plog in self._logs.items():
            config = wanted.get(topic, self.config)
            if plog.config != config:
                plog.reconfigure(config)

    def delete_topic(self, topic: str) -> int:
        """Close and remove every partition log of ``topic`` (open or only on disk): called on
        a deletion event, the one reason storage ever deletes a partition's files."""
        keys = {k for k in self._logs if k[0] == topic}
        try:
            keys |= {k for e in os.scandir(self.data_dir) if e.is_dir()
                     and (k := parse_partition_dir(e.name)) is not None and k[0] == topic}
        except OSError as exc:
            raise self.datadir.fail(f"cannot list {self.data_dir}", exc) from exc
        for key in sorted(keys):
            plog = self._logs.pop(key, None)
            if plog is not None:
                plog.close()
            directory = self.data_dir / partition_dir_name(*key)
            doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
            try:
                directory.rename(doomed)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise self.datadir.fail(f"cannot rename {directory}", exc) from exc
            self._remove_tree(doomed)
        self._topic_configs.pop(topic, None)
        if keys:
            log.info("deleted %d partition log(s) of topic %r", len(keys), topic)
        return len(keys)

    @staticmethod
    def _remove_tree(directory: Path) -> None:
        # Already renamed out of the way: a failure leaves garbage for the next start, no harm.
        try:
            shutil.rmtree(directory)
        except OSError as exc:
            log.warning("could not remove %s (%s); retried at the next start", directory, exc)

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
        if self._own_lock:
            self.datadir.unlock()
        if errors:
            raise errors[0]
