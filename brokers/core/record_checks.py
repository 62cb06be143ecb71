"""Checks of single records in produced batches, for the topics whose configs call for them.

The produce path never reads records (brokers/core/handlers/produce.py): every topic's batches
are validated by their headers alone. A topic whose ``cleanup.policy`` holds ``compact`` is the
exception, as in Kafka: compaction keeps the newest record of each key, so a record without a
key is refused. Kafka (KIP-467, Produce v8+) then fails the whole batch with INVALID_RECORD and
names each keyless record by its index in the batch (``record_errors``), so that a client can
tell the records at fault from the ones refused only for their company (librdkafka reports the
latter as _INVALID_DIFFERENT_RECORD). Only these topics pay for reading records: a compressed
batch is decompressed for it (``brokers.core.protocol.records.decompress``), and each record is
read only as far as its key's length.

Followers never call this: they copy what their leader accepted (brokers/core/replication/
fetcher.py appends to the log directly).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.errors import CorruptMessage, InvalidRecord, ProtocolViolation
from brokers.core.protocol.primitives import Buffer, Reader
from brokers.core.protocol.records import (
    ATTR_CONTROL,
    COMPRESSION_NONE,
    HEADER_SIZE,
    decompress,
    iter_batches,
)


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record: its index among the partition's records in the request."""

    batch_index: int
    message: str


class RecordsRejected(InvalidRecord):
    """INVALID_RECORD for a partition's batch, naming the records at fault (KIP-467)."""

    def __init__(self, message: str, record_errors: tuple[RecordError, ...]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


def keyless_records(records: Buffer) -> list[int]:
    """The indexes (counted over every record of every batch in ``records``, in order) of the
    records without a key. Raises CorruptMessage for a batch whose records cannot be read."""
    mv = records if isinstance(records, memoryview) else memoryview(records)
    found: list[int] = []
    index = 0
    for h in iter_batches(mv, allow_partial_tail=False):
        if h.attributes & ATTR_CONTROL:  # markers of the broker's own, never keyed by clients
            index += h.records_count
            continue
        body: Buffer = mv[h.position + HEADER_SIZE : h.position + h.size]
        if h.compression != COMPRESSION_NONE:
            body = decompress(h.compression, body)
        r = Reader(body)
        try:
            for _ in range(h.records_count):
                length = r.varint()
                end = r.pos + length
                if length < 0 or end > r.end:
                    raise ProtocolViolation(f"record length {length} overruns the batch")
                r.int8()  # attributes
                r.varlong()  # timestamp delta
                r.varint()  # offset delta
                if r.varint() < 0:  # key length: -1 is a null key
                    found.append(index)
                r.pos = end
                index += 1
        except ProtocolViolation as exc:
            raise CorruptMessage(f"malformed record in batch at {h.position}: {exc}") from exc
    return found


def check_keys(records: Buffer, topic: str, partition: int) -> None:
    """Raise RecordsRejected when a record of ``records`` has no key (a compacted topic)."""
    missing = keyless_records(records)
    if not missing:
        return
    # The per-record message is Kafka's own (LogValidator), so tools matching it keep working.
    message = (f"Compacted topic cannot accept message without key in topic partition "
               f"{topic}-{partition}.")
    raise RecordsRejected(
        f"{len(missing)} record(s) without a key refused by {topic}-{partition}, whose "
        f"cleanup.policy holds compact; the whole batch was rejected (record_errors name them)",
        tuple(RecordError(i, message) for i in missing))
