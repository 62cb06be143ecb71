"""Transaction markers: the one-record control batches that end a transaction in a partition.

Kafka's format (what every client's read_committed filtering parses): a RecordBatch v2 with the
control and transactional attribute bits, the transaction's producer id and epoch, base
sequence -1, one record whose key is (version int16 = 0, type int16: 0 abort, 1 commit) and
whose value is (version int16 = 0, coordinator epoch int32). The batch takes one offset.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from brokers.core.errors import CorruptMessage
from brokers.core.protocol.primitives import Buffer, Reader, Writer
from brokers.core.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER,
    CRC,
    CRC_AT,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
)

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch
MARKER_ATTRIBUTES = ATTR_CONTROL | ATTR_TRANSACTIONAL


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """The control batch ending ``producer_id``'s transaction (base offset 0: the log assigns
    the real one on append, as for a producer's batch)."""
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    body = Writer()
    body.int8(0)  # record attributes
    body.varlong(0)  # timestamp delta
    body.varint(0)  # offset delta
    body.varint(len(key))
    body.raw(key)
    body.varint(len(value))
    body.raw(value)
    body.varint(0)  # headers
    record = Writer()
    record.varint(len(body.cur))
    record.raw(bytes(body.cur))
    payload = bytes(record.cur)
    out = bytearray(BATCH_HEADER.pack(
        0, HEADER_SIZE - LOG_OVERHEAD + len(payload), -1, MAGIC_V2, 0, MARKER_ATTRIBUTES, 0,
        timestamp_ms, timestamp_ms, producer_id, producer_epoch, -1, 1))
    out += payload
    CRC.pack_into(out, CRC_AT, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def marker_is_commit(batch: Buffer) -> bool:
    """Whether the control batch ``batch`` (one whole batch, header first) commits; raises
    CorruptMessage when its record is not a transaction marker."""
    return read_marker(batch)[0]


def read_marker(batch: Buffer) -> tuple[bool, int]:
    """(whether it commits, its coordinator epoch) of the control batch ``batch``; raises
    CorruptMessage when its record is not a transaction marker. The twins' coordinators put
    the transaction's sequence number in the coordinator epoch (``partition.py`` says why);
    a marker without a value counts as epoch 0, which fences nothing."""
    mv = batch if isinstance(batch, memoryview) else memoryview(batch)
    try:
        r = Reader(mv[HEADER_SIZE:])
        r.varint()  # record length
        r.int8()
        r.varlong()
        r.varint()
        if r.varint() != _KEY.size:
            raise CorruptMessage("a control record's key is not a transaction marker's")
        version, kind = _KEY.unpack(bytes(r.raw(_KEY.size)))
        coordinator_epoch = 0
        if r.varint() >= _VALUE.size:
            coordinator_epoch = _VALUE.unpack(bytes(r.raw(_VALUE.size)))[1]
    except CorruptMessage:
        raise
    except Exception as exc:  # the Reader's own errors: a truncated or garbled record
        raise CorruptMessage(f"unreadable control record: {exc}") from exc
    if version < 0 or kind not in (ABORT, COMMIT):
        raise CorruptMessage(f"unknown control record type {kind} (version {version})")
    return kind == COMMIT, coordinator_epoch
