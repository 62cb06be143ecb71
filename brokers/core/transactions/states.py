"""The transaction tables of the partitions led here, each built from its log on first need.

Most partitions never see a transaction, and every librdkafka consumer fetches read_committed,
so the common case must cost nothing: a partition's log directory holds a ``transactional``
flag file from just before its first transactional batch is appended (on the leader by the
produce path, on a follower by the replica fetcher, ``mark_transactional``). Without the flag the
partition has no table: its last stable offset is its high watermark and it has no aborted
transactions. With it, the first use after a start or a leadership change scans the log once
(batch headers, and the one record of each marker) to rebuild the table; after that the
produce path and the marker writes keep it current.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from brokers.core.atomic_file import replace_file
from brokers.core.errors import KafkaStorageError
from brokers.core.logs import SCAN_CHUNK_BYTES, PartitionLogLike
from brokers.core.protocol.records import iter_batches
from brokers.core.transactions.markers import read_marker
from brokers.core.transactions.partition import PartitionTxns

log = logging.getLogger(__name__)

FLAG_NAME = "transactional"


def _flag(plog: PartitionLogLike) -> Path | None:
    directory = getattr(plog, "directory", None)  # the null sink keeps no files
    return None if directory is None else Path(directory) / FLAG_NAME


def is_transactional(plog: PartitionLogLike) -> bool:
    flag = _flag(plog)
    return flag is not None and flag.exists()


def mark_transactional(plog: PartitionLogLike) -> None:
    """Make the flag durable before the first transactional batch is appended: a restart
    must find it whenever it finds the batch."""
    flag = _flag(plog)
    if flag is None or flag.exists():
        return
    try:
        replace_file(flag, b"")  # durable, file and directory, fsyncs counted
    except OSError as exc:
        raise KafkaStorageError(f"cannot mark {flag.parent} transactional: {exc}") from exc


def scan(plog: PartitionLogLike) -> Iterator[tuple[int, int, bool, bool | None, int]]:
    """(base offset, producer id, transactional, commit or None, the marker's transaction
    number) of every batch with a producer id, oldest first: what ``PartitionTxns.load``
    reads."""
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        chunk = plog.read(offset, SCAN_CHUNK_BYTES)
        mv = chunk if isinstance(chunk, memoryview) else memoryview(chunk)
        last = None
        for last in iter_batches(mv):
            if last.producer_id < 0 or not last.is_transactional:
                continue
            if last.is_control:
                commit, txn_seq = read_marker(mv[last.position : last.position + last.size])
                yield last.base_offset, last.producer_id, True, commit, txn_seq
            else:
                yield last.base_offset, last.producer_id, True, None, 0
        if last is None:
            return
        offset = last.next_offset


class TxnStates:
    """Every led partition's ``PartitionTxns``, keyed by (topic, partition)."""

    __slots__ = ("_tables",)

    def __init__(self) -> None:
        # None: the log was looked at and holds no transactional batch. Every fetch asks, so
        # the answer is one dict lookup after the first (no file check per fetch).
        self._tables: dict[tuple[str, int], PartitionTxns | None] = {}

    def get(self, topic: str, partition: int, plog: PartitionLogLike | None
            ) -> PartitionTxns | None:
        """The partition's table, or None when it never held a transactional batch."""
        key = (topic, partition)
        try:
            return self._tables[key]
        except KeyError:
            pass
        if plog is None:
            return None
        if not is_transactional(plog):
            self._tables[key] = None
            return None
        return self._load(topic, partition, plog)

    def for_append(self, topic: str, partition: int, plog: PartitionLogLike) -> PartitionTxns:
        """The table, created (and the log flagged) for a transactional append."""
        table = self.get(topic, partition, plog)
        if table is None:
            mark_transactional(plog)
            table = self._load(topic, partition, plog)
        return table

    def _load(self, topic: str, partition: int, plog: PartitionLogLike) -> PartitionTxns:
        table = PartitionTxns()
        table.load(list(scan(plog)))
        self._tables[(topic, partition)] = table
        log.info("%s-%d: transactions rebuilt from the log (%d open, %d aborted)", topic,
                 partition, len(table.open_transactions), len(table.aborted))
        return table

    def forget(self, topic: str, partition: int) -> None:
        """The log changed under the table (a leadership change, a truncation)."""
        self._tables.pop((topic, partition), None)

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._tables if k[0] == topic]:
            del self._tables[key]
