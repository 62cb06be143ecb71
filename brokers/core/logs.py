"""The seam between request handlers and storage, and the null sink that stands in for it.

Handlers talk to ``LogStore``/``PartitionLogLike``; the broker passes the real segment-log
``LogManager`` or, for `make perf`, a ``NullLogStore`` that acknowledges every batch without
storing it. Everything else (codec, server, handlers, coordinator) is the same code, so the ratio
broker/null-sink measures exactly what storage costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from brokers.core.errors import CorruptMessage, OffsetOutOfRange
from brokers.core.protocol.records import (
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    OFFSET_AND_LENGTH,
    BatchHeader,
    iter_batches,
)

_unpack_length = OFFSET_AND_LENGTH.unpack_from
_unpack_last_delta = LAST_OFFSET_DELTA.unpack_from


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What ``PartitionLogLike.append`` answers (and a duplicate of an idempotent producer's
    batch is answered with, from its first copy: ``producer_state.py``)."""

    base_offset: int  # offset given to the first record appended
    last_offset: int  # offset of the last record appended
    log_start_offset: int


class PartitionLogLike(Protocol):
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    def append(self, records: bytes | memoryview, leader_epoch: int = -1) -> AppendResult: ...
    def read(self, offset: int, max_bytes: int) -> bytes | memoryview: ...
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None: ...
    def delete_records(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (<= the end; OffsetOutOfRange beyond),
        durably; returns the log start offset."""


class LogStore(Protocol):
    def load_existing(self) -> list[tuple[str, int]]: ...
    def get(self, topic: str, partition: int) -> PartitionLogLike | None: ...
    def get_or_create(self, topic: str, partition: int) -> PartitionLogLike: ...
    def flush_dirty(self) -> int: ...
    def enforce_retention(self, now_ms: int) -> int: ...
    def configure_topics(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """Apply each topic's own configs (retention, segment size) to its partition logs."""
    def on_failure(self, listener: Callable[[str], None]) -> None:
        """``listener(reason)`` once, when a disk error takes the store offline."""
    def delete_topic(self, topic: str) -> int:
        """Remove every partition log of ``topic`` and its files (a deletion event only);
        returns how many were removed."""
    def close(self) -> None: ...


# How much of a log ``stored_batch_headers`` reads at a time.
SCAN_CHUNK_BYTES = 1024 * 1024


def stored_batch_headers(log: PartitionLogLike, start: int | None = None
                         ) -> Iterator[BatchHeader]:
    """The header of every batch in ``log`` (from the one holding ``start`` on), oldest first
    (what rebuilding the idempotence table after a restart reads: header fields only, never a
    record)."""
    offset = log.log_start_offset if start is None else max(start, log.log_start_offset)
    while offset < log.log_end_offset:
        last = None
        for last in iter_batches(log.read(offset, SCAN_CHUNK_BYTES)):
            yield last
        if last is None:
            return  # nothing readable here (the null sink keeps no bytes)
        offset = last.next_offset


class NullPartitionLog:
    """Counts offsets from batch headers and forgets the bytes (per batch, never per record)."""

    def __init__(self) -> None:
        self._end = 0
        self._start = 0

    @property
    def log_start_offset(self) -> int:
        return self._start

    def delete_records(self, offset: int) -> int:
        if not 0 <= offset <= self._end:
            raise OffsetOutOfRange(f"offset {offset} outside [0, {self._end}]")
        self._start = max(self._start, offset)
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._end

    def append(self, records: bytes | memoryview, leader_epoch: int = -1) -> AppendResult:
        pos, total, count = 0, len(records), 0
        while pos < total:
            if total - pos < HEADER_SIZE:
                raise CorruptMessage("truncated record batch")
            length = _unpack_length(records, pos)[1] + LOG_OVERHEAD
            if length < HEADER_SIZE or pos + length > total:
                raise CorruptMessage("record batch length disagrees with the request")
            count += _unpack_last_delta(records, pos + LAST_OFFSET_DELTA_AT)[0] + 1
            pos += length
        base = self._end
        self._end += count
        return AppendResult(base, self._end - 1, 0)

    def read(self, offset: int, max_bytes: int) -> bytes:
        if not self._start <= offset <= self._end:
            raise OffsetOutOfRange(f"offset {offset} outside [{self._start}, {self._end}]")
        return b""

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        return None


class NullLogStore:
    def __init__(self) -> None:
        self._logs: dict[tuple[str, int], NullPartitionLog] = {}

    def load_existing(self) -> list[tuple[str, int]]:
        return []

    def get(self, topic: str, partition: int) -> NullPartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int) -> NullPartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            log = self._logs[(topic, partition)] = NullPartitionLog()
        return log

    def flush_dirty(self) -> int:
        return 0

    def delete_topic(self, topic: str) -> int:
        gone = [k for k in self._logs if k[0] == topic]
        for key in gone:
            del self._logs[key]
        return len(gone)

    def configure_topics(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        pass  # nothing is stored, so nothing is retained or rolled

    def enforce_retention(self, now_ms: int) -> int:
        return 0

    def on_failure(self, listener: Callable[[str], None]) -> None:
        pass  # no disk, no disk errors

    def close(self) -> None:
        self._logs.clear()
