"""RecordBatch v2 (magic 2): the one definition of the batch header layout, batch iteration and
a generic record decoder.

The header layout (``HEADER_FIELDS`` and the offsets and structs derived from it) is shared by
every reader and writer of batches: the broker's storage, which treats a batch as opaque bytes
and only reads (and patches) header fields; the load client, which stamps its batches in place;
and ``decode_records``, the generic decoder (tools, tests, and the load client for batches it
did not build, e.g. gzip-compressed ones).

Header (big-endian, byte offsets): baseOffset q@0, batchLength i@8 (bytes after this field),
partitionLeaderEpoch i@12, magic b@16, crc I@17 (CRC-32C over [21, end)), attributes h@21,
lastOffsetDelta i@23, baseTimestamp q@27, maxTimestamp q@35, producerId q@43,
producerEpoch h@51, baseSequence i@53, recordsCount i@57, records @61.
Only baseOffset, batchLength and partitionLeaderEpoch lie before the CRC-covered range, which is
why the broker may rewrite exactly that prefix (``BROKER_PREFIX``).

Errors: malformed batches raise ``errors.CorruptMessage`` (wire code 2, what a Produce
partition should answer); compression codecs other than none/gzip raise
``UnsupportedCompression`` from ``decode_records`` (the broker never decompresses).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from crc32c import crc32c

from brokers.core.errors import CorruptMessage, ProtocolViolation, TwinbenchError
from brokers.core.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    ConsumerTopicPartitions,
)
from brokers.core.protocol.primitives import Buffer, Reader

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "BASE_TIMESTAMP_AT",
    "BATCH_HEADER",
    "BROKER_PREFIX",
    "CRC",
    "CRC_AT",
    "CRC_START",
    "HEADER_FIELDS",
    "HEADER_SIZE",
    "LAST_OFFSET_DELTA",
    "LAST_OFFSET_DELTA_AT",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "MAX_TIMESTAMP",
    "MAX_TIMESTAMP_AT",
    "OFFSET_AND_LENGTH",
    "PRODUCER_AT",
    "PRODUCER_FIELDS",
    "TIMESTAMPS",
    "BatchHeader",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "ConsumerTopicPartitions",
    "Record",
    "UnsupportedCompression",
    "decode_records",
    "iter_batches",
]

# The header's fields in wire order with their struct codes (big-endian). Everything below (the
# struct, the offsets, BatchHeader) is derived from this table, so the layout is written once.
HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("base_offset", "q"),
    ("batch_length", "i"),  # bytes after this field
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),  # CRC-32C of every byte from attributes to the end of the batch
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
_NAMES = tuple(name for name, _ in HEADER_FIELDS)


def _offset_of(name: str) -> int:
    codes = "".join(code for _, code in HEADER_FIELDS[: _NAMES.index(name)])
    return struct.calcsize(">" + codes)


BATCH_HEADER = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS))
HEADER_SIZE = BATCH_HEADER.size  # 61: the records start here
# baseOffset and batchLength precede the bytes batchLength counts: a batch's size is
# batchLength + LOG_OVERHEAD.
LOG_OVERHEAD = _offset_of("partition_leader_epoch")  # 12
MAGIC_AT = _offset_of("magic")  # 16
CRC_AT = _offset_of("crc")  # 17
CRC_START = _offset_of("attributes")  # 21: the CRC covers [CRC_START, end of batch)
LAST_OFFSET_DELTA_AT = _offset_of("last_offset_delta")  # 23
BASE_TIMESTAMP_AT = _offset_of("base_timestamp")  # 27
MAX_TIMESTAMP_AT = _offset_of("max_timestamp")  # 35
PRODUCER_AT = _offset_of("producer_id")  # 43
MAGIC_V2 = 2

# Structs for single fields, to read (or write) one without unpacking the whole header.
OFFSET_AND_LENGTH = struct.Struct(">qi")  # baseOffset, batchLength at 0: enough to walk a log
LAST_OFFSET_DELTA = struct.Struct(">i")  # at LAST_OFFSET_DELTA_AT
MAX_TIMESTAMP = struct.Struct(">q")  # at MAX_TIMESTAMP_AT
TIMESTAMPS = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at BASE_TIMESTAMP_AT
CRC = struct.Struct(">I")  # at CRC_AT
# producerId, producerEpoch, baseSequence at PRODUCER_AT: what idempotent produce checks.
PRODUCER_FIELDS = struct.Struct(">qhi")
assert _offset_of("base_sequence") + 4 == PRODUCER_AT + PRODUCER_FIELDS.size
# The fields the broker owns: baseOffset, batchLength, partitionLeaderEpoch. They lie wholly
# before magic and the CRC, so the broker rewrites them without invalidating the client's CRC.
BROKER_PREFIX = struct.Struct(">qii")
assert BROKER_PREFIX.size == MAGIC_AT
assert OFFSET_AND_LENGTH.size == LOG_OVERHEAD

# attributes: bits 0-2 are the compression codec.
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20


class UnsupportedCompression(TwinbenchError):
    """decode_records met a codec it cannot decompress (snappy, lz4, zstd)."""


class BatchHeader(NamedTuple):
    position: int  # offset of the batch inside the buffer given to iter_batches
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)


assert BatchHeader._fields[1:] == _NAMES, "BatchHeader must follow HEADER_FIELDS"


def iter_batches(buf: Buffer, *, verify_crc: bool = False,
                 allow_partial_tail: bool = True) -> Iterator[BatchHeader]:
    """Yield the header of each complete batch in ``buf``.

    A trailing partial batch is normal in Fetch responses (Kafka cuts at max_bytes) and in a
    torn log tail, so by default iteration just stops there; with ``allow_partial_tail=False``
    it raises CorruptMessage instead (Produce bodies must be whole). The header is validated
    (magic 2, sane batchLength) before the batch is trusted.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = 0
    while pos < end:
        if end - pos < HEADER_SIZE:
            if allow_partial_tail:
                return
            raise CorruptMessage(f"truncated batch header at {pos}")
        h = BatchHeader(pos, *BATCH_HEADER.unpack_from(mv, pos))
        if h.magic != MAGIC_V2:
            raise CorruptMessage(f"batch at {pos} has magic {h.magic}, only magic 2 is supported")
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptMessage(f"batch at {pos} has impossible batchLength {h.batch_length}")
        stop = pos + h.size
        if stop > end:
            if allow_partial_tail:
                return
            raise CorruptMessage(f"batch at {pos} claims {h.size} bytes, {end - pos} present")
        if verify_crc and crc32c(mv[pos + CRC_START : stop]) != h.crc:
            raise CorruptMessage(f"CRC mismatch in batch at {pos}")
        yield h
        pos = stop


@dataclass(slots=True)
class Record:
    """One decoded record with absolute offset and timestamp."""

    offset: int = 0
    timestamp: int = -1
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def decode_records(batch: Buffer, *, verify_crc: bool = True) -> list[Record]:
    """Decode every record of every batch in ``batch`` (generic; tests and tools)."""
    out: list[Record] = []
    mv = batch if isinstance(batch, memoryview) else memoryview(batch)
    for h in iter_batches(mv, verify_crc=verify_crc, allow_partial_tail=False):
        body: Buffer = mv[h.position + HEADER_SIZE : h.position + h.size]
        if h.compression == COMPRESSION_GZIP:
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, ValueError) as exc:
                raise CorruptMessage(f"bad gzip payload in batch at {h.position}") from exc
        elif h.compression != COMPRESSION_NONE:
            raise UnsupportedCompression(
                f"batch at {h.position} uses codec {h.compression}; only none/gzip decode here")
        try:
            out.extend(_decode_batch_records(Reader(body), h))
        except ProtocolViolation as exc:
            raise CorruptMessage(f"malformed record in batch at {h.position}: {exc}") from exc
    return out


def _blob(r: Reader) -> bytes | None:
    n = r.varint()
    if n < -1:
        raise ProtocolViolation(f"negative length {n}")
    return None if n == -1 else bytes(r.raw(n))


def _decode_batch_records(r: Reader, h: BatchHeader) -> list[Record]:
    if h.records_count < 0 or h.records_count > r.remaining:
        raise ProtocolViolation(f"recordsCount {h.records_count} impossible")
    recs = []
    for _ in range(h.records_count):
        length = r.varint()
        if length < 0:
            raise ProtocolViolation("negative record length")
        rr = Reader(r.raw(length))
        rr.int8()  # attributes
        ts_delta = rr.varlong()
        off_delta = rr.varint()
        key = _blob(rr)
        value = _blob(rr)
        nheaders = rr.varint()
        if nheaders < 0 or nheaders > rr.remaining:
            raise ProtocolViolation(f"header count {nheaders} impossible")
        headers = []
        for _ in range(nheaders):
            hk = _blob(rr)
            if hk is None:
                raise ProtocolViolation("null header key")
            headers.append((hk.decode("utf-8", "replace"), _blob(rr)))
        rr.done()
        recs.append(Record(h.base_offset + off_delta, h.base_timestamp + ts_delta, key, value,
                           headers))
    r.done()
    return recs
