"""Idempotent produce: which batches of which producer a partition already holds (sans-IO).

A producer with ``enable.idempotence`` numbers its batches per partition (baseSequence in the
batch header, one number per record) and stamps them with the producer id and epoch that
InitProducerId gave it. When a request times out it sends the same batch again; the partition
must then answer with the offset the first copy got instead of appending it twice. Kafka keeps,
per partition and producer, the sequence ranges of the last ``CACHED_BATCHES`` batches
(ProducerStateManager); this module is that table, fed with header fields only.

The rules, as Kafka 2.8 applies them to a producer outside transactions:

* an older epoch than the partition has seen from the producer: INVALID_PRODUCER_EPOCH;
* the same epoch, and the batch's sequence range equals one of the cached batches: a duplicate,
  answered with that batch's base offset and not appended;
* the same epoch, and the batch does not continue the last cached batch (a gap, or a number
  older than the cache reaches): OUT_OF_ORDER_SEQUENCE_NUMBER;
* a newer epoch must start over at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
* a producer the partition has no entry for is accepted at any sequence: its earlier batches may
  have gone with retention, and Kafka accepts it for the same reason.

``PartitionProducers.check`` decides without changing anything; ``record`` is called once the
batch is in the log. ``ProducerStates.append`` is the whole of it for the Produce handler: the
batch's header fields read, checked against the partition's table, appended (or answered from
its first copy) and recorded. The state is rebuilt after a restart by ``load``, from the headers
of the batches stored in the log (``logs.stored_batch_headers``), so nothing extra is persisted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from brokers.core.errors import InvalidProducerEpoch, InvalidRecord, OutOfOrderSequenceNumber
from brokers.core.logs import AppendResult, PartitionLogLike
from brokers.core.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    OFFSET_AND_LENGTH,
    PRODUCER_AT,
    PRODUCER_FIELDS,
)
from brokers.core.storage.batch_header import check_batch
from brokers.core.transactions.markers import marker_batch
from brokers.core.transactions.states import TxnStates

# Batches remembered per producer and partition: librdkafka and the Java client keep at most 5
# requests in flight with idempotence on, so a retry always finds its batch among the last 5.
CACHED_BATCHES = 5
# Producers remembered per partition; the least recently active is forgotten beyond this, and
# its next batch is treated as a new producer's (accepted at any sequence). Producer ids come
# from client-written headers, so without a bound one client could grow the table forever
# (Kafka expires them after producer.id.expiration.ms instead). An entry is ~0.5 KB, so a
# partition's table stays under 1 MB.
MAX_PRODUCERS = 1_000
# producerId -1 marks a batch of a producer without idempotence.
NO_PRODUCER_ID = -1
_INT32_MAX = 2**31 - 1

# The attributes are an int16 at CRC_START; every flag the broker reads is in its low byte.
ATTRIBUTES_LOW_BYTE = CRC_START + 1
_unpack_producer = PRODUCER_FIELDS.unpack_from
_unpack_last_delta = LAST_OFFSET_DELTA.unpack_from
_unpack_length = OFFSET_AND_LENGTH.unpack_from


class CachedBatch(NamedTuple):
    first_seq: int
    last_seq: int
    base_offset: int


@dataclass(slots=True)
class _Producer:
    epoch: int
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))


def last_sequence(first_seq: int, last_offset_delta: int) -> int:
    """The sequence number of a batch's last record; sequences wrap from 2^31-1 to 0."""
    if first_seq > _INT32_MAX - last_offset_delta:
        return last_offset_delta - (_INT32_MAX - first_seq) - 1
    return first_seq + last_offset_delta


def _follows(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == _INT32_MAX and next_seq == 0)


class PartitionProducers:
    """The idempotence table of one partition."""

    __slots__ = ("_max_producers", "_producers")

    def __init__(self, max_producers: int = MAX_PRODUCERS) -> None:
        self._producers: dict[int, _Producer] = {}
        self._max_producers = max_producers

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, producer_id: int, epoch: int, first_seq: int,
              last_offset_delta: int) -> int | None:
        """None when the batch may be appended; the base offset of the stored copy when it is
        a duplicate. Raises InvalidProducerEpoch or OutOfOrderSequenceNumber."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"producer {producer_id} epoch {epoch} is older than its epoch {entry.epoch}")
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceNumber(
                    f"producer {producer_id} opened epoch {epoch} at sequence {first_seq}, "
                    f"not 0")
            return None
        last_seq = last_sequence(first_seq, last_offset_delta)
        for cached in entry.batches:
            if cached.first_seq == first_seq and cached.last_seq == last_seq:
                return cached.base_offset
        if entry.batches and not _follows(entry.batches[-1].last_seq, first_seq):
            raise OutOfOrderSequenceNumber(
                f"producer {producer_id} epoch {epoch}: sequence {first_seq} does not follow "
                f"{entry.batches[-1].last_seq}")
        return None

    def record(self, producer_id: int, epoch: int, first_seq: int, last_offset_delta: int,
               base_offset: int) -> None:
        """Remember a batch that is now in the log (after ``check`` let it through, or while
        loading the log)."""
        producers = self._producers
        entry = producers.pop(producer_id, None)  # re-inserted last: dict order is recency
        if entry is None or entry.epoch != epoch:
            entry = _Producer(epoch)
            if len(producers) >= self._max_producers:
                del producers[next(iter(producers))]
        producers[producer_id] = entry
        entry.batches.append(
            CachedBatch(first_seq, last_sequence(first_seq, last_offset_delta), base_offset))

    def end_transaction(self, producer_id: int, epoch: int) -> None:
        """A transaction marker of ``producer_id`` at ``epoch``: an older epoch than the
        partition has seen is fenced (INVALID_PRODUCER_EPOCH, as Kafka refuses a zombie's
        marker); a newer one (the coordinator bumps the epoch when it aborts on a timeout or
        fences) becomes the producer's epoch, so the old epoch's late batches are refused. The
        same epoch keeps the sequence: a producer numbers on across its transactions."""
        entry = self._producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"marker for producer {producer_id} at epoch {epoch}, older than {entry.epoch}")
        if entry is None or epoch > entry.epoch:
            if entry is None and len(self._producers) >= self._max_producers:
                del self._producers[next(iter(self._producers))]
            self._producers.pop(producer_id, None)
            self._producers[producer_id] = _Producer(epoch)

    def load(self, headers: Iterable[StoredHeader]) -> None:
        """Rebuild from the stored batches' headers, oldest first."""
        for h in headers:
            if h.producer_id < 0:
                continue
            if h.attributes & ATTR_CONTROL:
                if h.producer_epoch >= self.epoch_of(h.producer_id):
                    self.end_transaction(h.producer_id, h.producer_epoch)
                continue
            self.record(h.producer_id, h.producer_epoch, h.base_sequence,
                        h.last_offset_delta, h.base_offset)

    def epoch_of(self, producer_id: int) -> int:
        """The producer's epoch here (-1: none known)."""
        entry = self._producers.get(producer_id)
        return -1 if entry is None else entry.epoch


class StoredHeader(Protocol):
    """The header fields ``load`` reads (``records.BatchHeader`` has them all)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def attributes(self) -> int: ...


class ProducerStates:
    """The idempotence tables of every partition this broker appends to, each built from its
    log the first time an idempotent batch arrives for it (``scan`` reads the stored headers),
    so a broker whose producers are all non-idempotent never scans a log."""

    __slots__ = ("_partitions", "_scan", "txns")

    def __init__(self, scan: Callable[[PartitionLogLike], Iterable[StoredHeader]],
                 txns: TxnStates | None = None) -> None:
        self._scan = scan
        self._partitions: dict[tuple[str, int], PartitionProducers] = {}
        # The partitions' transaction tables, kept current by the transactional batches
        # appended here (brokers/core/transactions).
        self.txns = txns if txns is not None else TxnStates()

    def get(self, topic: str, partition: int, log: PartitionLogLike) -> PartitionProducers:
        table = self._partitions.get((topic, partition))
        if table is None:
            table = PartitionProducers()
            table.load(self._scan(log))
            self._partitions[(topic, partition)] = table
        return table

    def append(
        self, topic: str, partition: int, log: PartitionLogLike, records: bytes | memoryview,
        leader_epoch: int, max_batch_bytes: int,
    ) -> AppendResult:
        """Append a batch of an idempotent producer to ``log``, or answer a retried one with its
        first copy's offsets (not appended again)."""
        view = records if type(records) is memoryview else memoryview(records)
        if view.itemsize != 1 or view.ndim != 1:
            view = view.cast("B")
        # Produce v3+ carries one batch per partition (Kafka refuses more): the sequence check
        # below is about that one batch.
        if len(view) < HEADER_SIZE or _unpack_length(view, 0)[1] + LOG_OVERHEAD != len(view):
            check_batch(view, 0, max_batch_bytes)  # the precise error if bad
            raise InvalidRecord("an idempotent produce carries exactly one batch per partition")
        producer_id, epoch, first_seq = _unpack_producer(view, PRODUCER_AT)
        if epoch < 0 or first_seq < 0:
            raise InvalidRecord(
                f"producer {producer_id} sent epoch {epoch} and base sequence {first_seq}")
        attributes = view[ATTRIBUTES_LOW_BYTE]
        if attributes & ATTR_CONTROL:
            # Only a transaction coordinator writes markers (WriteTxnMarkers): a client's
            # control batch would end transactions behind the coordinator's back.
            raise InvalidRecord("a producer may not write control batches")
        last_delta = _unpack_last_delta(view, LAST_OFFSET_DELTA_AT)[0]
        table = self.get(topic, partition, log)
        duplicate_of = table.check(producer_id, epoch, first_seq, last_delta)
        if duplicate_of is not None:
            # Validated like any batch, so a corrupt copy is refused rather than acknowledged.
            check_batch(view, 0, max_batch_bytes)
            return AppendResult(duplicate_of, duplicate_of + last_delta, log.log_start_offset)
        if attributes & ATTR_TRANSACTIONAL:
            txns = self.txns.for_append(topic, partition, log)  # flags the log first
            result = log.append(view, leader_epoch)
            txns.on_data(producer_id, result.base_offset)
        else:
            result = log.append(view, leader_epoch)
        table.record(producer_id, epoch, first_seq, last_delta, result.base_offset)
        return result

    def append_marker(
        self, topic: str, partition: int, log: PartitionLogLike, producer_id: int, epoch: int,
        commit: bool, coordinator_epoch: int, leader_epoch: int, now_ms: int,
    ) -> AppendResult:
        """Write ``producer_id``'s transaction marker (WriteTxnMarkers): fenced by epoch as
        Kafka fences it, appended as a control batch, and the transaction closed here. A
        repeat (``coordinator_epoch`` carries the transaction's number: ``PartitionTxns``) is
        answered with the marker already written, so a late one cannot end the producer's
        next transaction."""
        table = self.get(topic, partition, log)
        table.end_transaction(producer_id, epoch)
        txns = self.txns.for_append(topic, partition, log)
        written = txns.repeated_marker(producer_id, coordinator_epoch)
        if written is not None:
            return AppendResult(written, written, log.log_start_offset)
        result = log.append(
            marker_batch(producer_id, epoch, commit, coordinator_epoch, now_ms), leader_epoch)
        txns.on_marker(producer_id, result.base_offset, commit, coordinator_epoch)
        return result

    def forget(self, topic: str, partition: int) -> None:
        """Drop a partition's tables: the log changed under them (this broker became the leader
        of a replicated partition whose log it filled as a follower, or cut), so the next
        use rebuilds them from the stored log."""
        self._partitions.pop((topic, partition), None)
        self.txns.forget(topic, partition)

    def forget_topic(self, topic: str) -> None:
        """A deleted topic's tables: a new topic of the name starts with none."""
        for key in [k for k in self._partitions if k[0] == topic]:
            del self._partitions[key]
        self.txns.forget_topic(topic)
